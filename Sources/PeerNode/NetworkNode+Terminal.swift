import NodeCore
import Gossip
import ChatText
import Crypto
import Gossip
import Reactor
import TermUI

extension NetworkNode {
    /// What Tab completes now: commands, known rooms, known nicks (on the
    /// loop), and the paths of `/send` and `/get N` from the disk. Nicks and rooms come from the network: one that would not print
    /// as itself (controls, bidi overrides, invisible characters) is left out,
    /// since completing it would echo it raw into the line being typed.
    func completer() -> Completer {
        Completer(commands: ChatInput.commandNames, rooms: node.knownRooms.filter(TerminalText.isInert),
                  nicks: Array(Set(node.nicks.values.map(\.unsanitized))).filter(TerminalText.isInert).sorted(),
                  lastMessage: lastMessageToEdit(), paths: PathCompletion())
    }

    /// What Up offers first at the prompt: `/edit` and the text of our last
    /// message in the open room or conversation, as it reads now (nil: none there).
    func lastMessageToEdit() -> String? {
        let e: Envelope
        do {
            let place = try session.openPlace()
            e = try node.messageLife.ownMessage(in: place.room, named: place.name, number: nil)
        } catch let failure as RepositoryError {
            // Up offers nothing, and the person hears why.
            node.storeFailures.failed(failure)
            return nil
        } catch {
            // No open place, or no message of ours there: nothing to offer.
            return nil
        }
        guard let opened = node.open(e) else { return nil }
        return "/edit " + node.messageLife.currentText(of: e, opened: opened).text.unsanitized
    }
}

extension NetworkNode {
    /// `/rooms`' second part: the direct conversations with a message, most
    /// recent first, with unread counts and the last message; `*` marks the
    /// one open (`/query`).
    /// Numbered after the rooms (`rooms` of them), as `/switch N` and the act list count windows.
    func conversationLines(after rooms: Int) throws -> [String] {
        let rows = try conversations().filter { $0.room == nil }
        guard !rows.isEmpty else { return [] }
        let renderer = Renderer(people: node.people)
        let open = session.conversationPeer.map { node.people.account($0) }
        return ["-- direct conversations (/query WHO opens one):"] + rows.compactMap { row in row.peer.map { (row, $0) } }.enumerated().map { index, entry in
            let (row, peer) = entry
            let unread = row.unread > 0 ? " (\(row.unread) unread)" : ""
            let preview = row.last.map { renderer.preview($0.envelope, text: $0.opened.text.description) } ?? ""
            return "\(peer.key == open ? "*" : " ")\(rooms + index + 1). @\(renderer.label(peer))\(unread)\(preview)"
        }
    }

    /// Opens a window with `open`, whose lines (its last `TerminalWindows.backlogRows`) follow a line
    /// counting what came there while it was closed, when that is more than they show.
    func entering(_ open: () throws -> [String]) throws -> [String] {
        let lines = try open()
        let unseen = activity.unseen[session.openPlaceKey]?.messages ?? 0
        guard unseen > TerminalWindows.backlogRows else { return lines }
        return ["-- \(counted(unseen, "new message")) came here while you were elsewhere: the last \(TerminalWindows.backlogRows) below, /history N for more"] + lines
    }

    /// The windows in `/rooms` order: the rooms, then the direct conversations (act-list keys).
    func windowOrder() throws -> [String] {
        try session.joinedRooms().map(\.value) + conversationsInOrder().map(ChatSession.conversationKey)
    }

    /// The other accounts of the direct conversations, most recent first (as `/rooms` lists them).
    func conversationsInOrder() throws -> [PublicKey] {
        try conversations().compactMap { $0.room == nil ? $0.peer?.key : nil }
    }

    /// `/switch N`, `/window N`, Alt-N: a room, or past the rooms a conversation (`/rooms` numbers both).
    func switchWindow(_ which: String) throws -> [String] {
        let rooms = try session.joinedRooms().count
        guard let n = Int(which), n > rooms else { return try session.switchTo(which) }
        let partners = try conversationsInOrder()
        guard n - rooms <= partners.count else { throw NodeError.noRoomNumbered(n) }
        return try session.query(peer: partners[n - rooms - 1])
    }

    /// `/who`: who has posted in `room` (the open one when nil); who of them is linked now.
    func members(in room: RoomName? = nil) throws -> NodeEvent {
        let room = room ?? session.room
        // One row per account: its devices are one person.
        var accounts: [PublicKey] = [], seen: Set<PublicKey> = []
        var devices: [PublicKey: [String]] = [:]
        for author in try node.store.authors(in: node.roomID(room)) {
            let account = node.people.account(author)
            if seen.insert(account).inserted { accounts.append(account) }
            if let name = node.devices.name(of: author) { devices[account, default: []].append(name) }
        }
        return .members(room: room, memberRows(accounts, devices: devices, now: monotonic()))
    }

    /// One row per account of `accounts`, in that order: ours as `.you` with what we say, the others
    /// linked or not with what their beacons say, and the names of their devices in `devices`.
    private func memberRows(_ accounts: [PublicKey], devices: [PublicKey: [String]], now: Double) -> [Member] {
        let linked = Set(linkedPeers.values.map { node.people.account($0) })
        let status = presence.status(of: Set(accounts), account: { node.people.account($0) }, now: now)
        return accounts.map { account in
            let mine = account == node.account
            return Member(person: node.people[account], state: mine ? .you : linked.contains(account) ? .linked : .notLinked,
                          presence: mine ? presence.ownStatus : status[account] ?? .unknown, devices: devices[account] ?? [])
        }
    }

    /// `/who *`: everyone whose presence holds now, one row per account (ours first), with the names of their devices.
    func onlineNow() -> NodeEvent {
        let now = monotonic()
        var devices: [PublicKey: [String]] = [:]
        var relayNames: [PublicKey: String] = [:]
        for beacon in presence.board.currentBeacons(now: now) where !blocked.contains(beacon.device) {
            let account = node.people.account(beacon.device)
            devices[account, default: []] += node.devices.name(of: beacon.device).map { [$0] } ?? []
            if !beacon.nick.isEmpty { relayNames[account] = String(decoding: beacon.nick, as: UTF8.self) }
        }
        let status = presence.status(of: Set(devices.keys), account: { node.people.account($0) }, now: now)
        let others = devices.keys.filter { $0 != node.account && status[$0]?.state != .gone && status[$0]?.state != nil }
            .sorted { (node.people.nick($0)?.unsanitized ?? "", $0.hex) < (node.people.nick($1)?.unsanitized ?? "", $1.hex) }
        return .online(memberRows([node.account] + others, devices: devices, now: now).map { row in
            // A relay has no nick in history: the name its beacons carry.
            guard row.person.nick == nil, let name = relayNames[row.person.key] else { return row }
            return Member(person: row.person.claiming(PeerText(name)), state: row.state, presence: row.presence, devices: row.devices)
        })
    }

    /// `/devices`, `/whois`: the account `key` signs for, and each of its devices.
    func devices(of key: PublicKey) throws -> NodeEvent {
        let online = Set(linkedPeers.values)
        let account = node.people.account(key)
        let rows = try node.devices.devices(of: account)
        return .devices(node.people[account], try rows.map { row in
            DeviceInfo(key: row.device, name: PeerText(row.name), isAccountKey: row.device == account, isThisNode: row.device == node.me,
                       linkedNow: online.contains(row.device), lastSeen: try node.store.lastSigned(by: row.device),
                       revokedAfter: node.devices.revokedAfter[row.device])
        })
    }

    /// Why a link is up (`PeerRow.view`, `/peers`' last column).
    enum LinkView: String {
        case olderVersion = "older version", kept, neighbour, asked, unclaimed

        /// Whether a person is told of it (`LinkLines`): not while it is
        /// being asked or not yet claimed.
        var isSettled: Bool { self != .asked && self != .unclaimed }
    }

    /// Why the link `id` to `remote` is up.
    func linkView(_ id: LinkID, remote: PublicKey) -> LinkView {
        let overlay = core.overlay
        return core.version(of: id)?.speaksOverlay != true ? .olderVersion
            : overlay.pinned.contains(remote) ? .kept
            : overlay.membership.active.contains(remote) || !overlay.configuration.bounded ? .neighbour
            : overlay.membership.requested[remote] != nil ? .asked : .unclaimed
    }

    /// Whether the link carrying `remote` is settled (`LinkView.isSettled`).
    func linkSettled(_ remote: PublicKey) -> Bool {
        guard let id = table.links.first(where: { $0.value.remote == remote })?.key else { return false }
        return linkView(id, remote: remote).isSettled
    }

    /// `/peers`: linked peers first, then known ones not linked.
    func peerList() -> PeerList {
        let now = monotonic()
        var rows: [PeerRow] = []
        var shown: Set<PublicKey> = []
        for (id, link) in table.links.sorted(by: { $0.key < $1.key }) {
            guard let remote = link.remote, shown.insert(remote).inserted else { continue }
            let known = replicator.knownClock(of: id) ?? VectorClock()
            var row = PeerRow(id: remote, address: links[id]?.connection.remoteAddress ?? "?", state: "linked", linkedFor: now - (link.since ?? now),
                              roundTrip: links[id]?.probe.roundTrip, sending: replicator.clock.count(beyond: known),
                              receiving: known.count(beyond: replicator.clock))
            row.view = linkView(id, remote: remote).rawValue
            row.lazyAuthors = replicator.lazyAuthors(of: id) ?? 0
            row.device = node.devices.name(of: remote)
            row.version = core.version(of: id)?.rawValue
            row.cipher = core.cipher(of: id)
            rows.append(row)
        }
        for (_, dialer) in table.dialersInOrder where !dialer.retired {
            guard let remote = dialer.remote, shown.insert(remote).inserted else { continue }
            rows.append(PeerRow(id: remote, address: dialer.address, state: dialer.discovered ? "found on the LAN" : "--peer",
                                linkedFor: nil, roundTrip: nil, sending: 0, receiving: 0))
        }
        for (_, dialer) in table.dialersInOrder where dialer.remote == nil {
            rows.append(PeerRow(id: nil, address: dialer.address, state: "--peer, not linked yet",
                                linkedFor: nil, roundTrip: nil, sending: 0, receiving: 0))
        }
        let overlay = core.overlay
        for peer in overlay.membership.passive.sorted() where shown.insert(peer).inserted {
            rows.append(PeerRow(id: peer, address: overlay.addresses[peer].map { "\($0.host):\($0.port)" } ?? "?", state: "in reserve",
                                linkedFor: nil, roundTrip: nil, sending: 0, receiving: 0))
        }
        return PeerList(linked: Set(linkedPeers.values).count, maximumLinks: overlay.configuration.maximumLinks,
                        reserve: overlay.membership.passive.count, rows: rows, people: node.people)
    }

    // MARK: typing (`Typing`)

    /// A key at the prompt left `draft`: a message or `/me` being written
    /// in the open room says so (commands do not).
    func typed(draft: String) {
        if Typing.isTyping(draft) { sendTyping(in: session.openRoomID) }
    }

    /// Says we are typing in `room` (a room, or a conversation's), unless we
    /// said so lately; whether a notice went.
    @discardableResult
    func sendTyping(in room: RoomID) -> Bool {
        guard !relay, let notice = typing.ours(in: room, now: monotonic(), wall: Node.now()) else { return false }
        feed(.typing(notice, except: nil))
        return true
    }

    /// A notice a link brought: checked, passed on once, and shown if it is
    /// about a room or conversation of ours.
    func typingArrived(_ notice: TypingNotice, from link: LinkID) {
        let arrival = typing.arrived(notice, from: link, now: monotonic(), wall: Node.now())
        if arrival.dropped { count(.typingDropped) }
        if arrival.notPassedOn { count(.typingNotPassedOn) }
        if let next = arrival.passOn { feed(.typing(next, except: link)) }
        guard !relay, arrival.fresh, !blocked.contains(notice.typer) else { return }
        if let name = node.roomName(notice.room) {
            emit(.typing(node.people[notice.typer], room: name))
        } else if node.conversations.peer(in: notice.room) == notice.typer {
            emit(.typing(node.people[notice.typer], room: nil))
        }
        refreshPrompt()
    }

    /// "(bob·k3fq is typing…) " for the open room or conversation, "" when nobody is.
    func typingLine() -> String {
        let typers = typing.typers(in: session.openRoomID, now: monotonic()).filter { !blocked.contains($0) }
        // Plain labels: the prompt's width is counted without colour codes.
        return Typing.line(typers.map { key in (node.people.nick(key).map { "\($0)·" } ?? "") + node.people.account(key).shortFingerprint })
    }
}

/// History completeness: does this node hold everything its peers have
/// announced? Linked peers' stated clocks count now; peers seen before count
/// with the clock they stated last time (and when that was).
extension NetworkNode {
    typealias Gap = Backlog.Gap

    /// What we lack, per author, and who declared it.
    func gaps() -> [Gap] {
        let now = Node.now()
        var declarations: [Backlog.Declaration] = []
        for (id, remote) in linkedPeers {
            if let declared = replicator.declaredClock(of: id) { declarations.append(.init(peer: remote, clock: declared, linked: true, seenAt: now)) }
        }
        let online = Set(linkedPeers.values)
        // Peers seen before: their saved clocks, or the newer ones not written yet.
        var offline: [PublicKey: (clocks: PeerClocks, seenAt: UInt64)] = [:]
        for saved in readLogged("the saved clocks of peers", { try node.store.allPeerClocks() }) ?? [] { offline[saved.peer] = (saved.clocks, saved.savedAt) }
        for (peer, clocks) in unsavedPeerClocks { offline[peer] = (clocks, now) }
        for (peer, saved) in offline.sorted(by: { $0.key < $1.key }) where !online.contains(peer) {
            if let declared = saved.clocks.declared { declarations.append(.init(peer: peer, clock: declared, linked: false, seenAt: saved.seenAt)) }
        }
        return Backlog.gaps(ours: replicator.clock, declarations: declarations, excluding: blocked.snapshot)
    }

    /// `/sync`: what we lack, who declared it, and the forks recorded.
    func syncReport() throws -> NodeEvent {
        var sequences: [PublicKey: Set<UInt64>] = [:]
        for f in try node.store.forks() { sequences[f.author, default: []].insert(f.sequence) }
        return .sync(SyncReport(
            gaps: gaps(), held: replicator.clock.total, authors: replicator.clock.entries.count, linked: Set(linkedPeers.values).count,
            forks: sequences.keys.sorted().map { (author: $0, sequences: (sequences[$0] ?? []).sorted()) }, now: Node.now(), people: node.people))
    }

    /// Linked peers' announced messages we lack (the catch-up still to do);
    /// cheap enough for every tick (no database).
    var missingFromLinked: UInt64 {
        Backlog.missing(ours: replicator.clock, declared: linkedPeers.keys.compactMap { replicator.declaredClock(of: $0) })
    }

    /// The prompt: the catch-up bar when there is one, the room, and where
    /// our last message there has got to (… ✓ ✓✓ read).
    func prompt() -> String {
        let mark = receipts.state(in: session.openRoomID, linked: Set(linkedPeers.values), claims: ownClaims).map { " " + $0.rawValue } ?? ""
        return activity.line(order: roomOrder) + syncProgress.tag(missing: missingFromLinked) + node.files.promptTag + typingLine() + session.roomLabel + mark + "> "
    }
}

/// Our own posts: signed, on the links before they are on the disk, then shown.
extension NetworkNode {
    /// An envelope of ours just stored (a post, an edit, a tombstone, a
    /// direct message, a nick): on the links before it is on the disk
    /// (`OwnDurability`), and on the disk before it is shown here.
    func sendOwn(_ e: Envelope) {
        sentOwnUpTo = max(sentOwnUpTo, e.sequence)
        typing.postedOwn(in: e.room)
        let sending = monotonicNow()
        feed(.posted(e))
        if !feeding { loop.flushNow() }
        let syncing = monotonicNow()
        core.stages.record(.send, syncing - sending)
        // Sent before its row (`OwnIntent`): its row, the fsync and our own line follow once the loop has
        // waited (`EventLoop.afterWaiting`), so the core goes first to whoever the send woke.
        guard node.ownIntent.pending?.id == e.id, !feeding else { return writeOwn(e) }
        ownRowAfterWait = true
        loop.afterWaiting { [self] in
            ownRowAfterWait = false
            writeOwn(e)
        }
    }

    /// Our envelope `e`, sent, on the disk and then shown. Only it can be
    /// pending aside (a post commits any earlier one before it is signed);
    /// one that fails stays pending, tried again at the turn's end and
    /// before the next post, not again at once.
    private func writeOwn(_ e: Envelope) {
        let committing = monotonicNow()
        let heldAside = node.ownIntent.pending?.id == e.id
        if heldAside { commitOwnIntent() }
        let committed = monotonicNow()
        syncOwnRows()
        let synced = monotonicNow()
        if heldAside { core.stages.record(.row, committed - committing) }
        core.stages.record(.sync, synced - committed)
        showDeliveries()
    }

    /// Commits our post that went before its row; a failure is said once
    /// per post, and every later post tries it again first.
    private func commitOwnIntent() {
        do { try node.ownIntent.commitPending(to: node.store) } catch {
            emit(.failed("your message went out but could not be written to the disk here (\(error)); it is written before your next one"))
        }
    }

    /// Own envelopes committed without their fsync are made durable (after
    /// the sockets were written); at the latest at the end of the turn.
    /// One sent before its row and not committed yet is committed first.
    func syncOwn() {
        // Tried again at each turn and post; still failing, it is counted and said (`StoreFailures`).
        if node.ownIntent.pending != nil {
            do { try node.ownIntent.commitPending(to: node.store) } catch { node.storeFailures.failed("writing your message to the disk", error) }
        }
        syncOwnRows()
    }

    /// Own rows committed without their fsync made durable.
    private func syncOwnRows() {
        do {
            try node.store.syncOwn()
            ownSyncFailing = false
        } catch {
            // Tried again at every turn's end; said once until it works.
            if !ownSyncFailing {
                log.warning("writing your messages to the disk failed (trying again; from now on each is written before it is sent): \(error)")
                node.ownDurability.syncFailed()
            }
            ownSyncFailing = true
        }
    }

    /// Sends (and shows) every envelope of ours signed since the last one
    /// sent: what a command or a delivery signed besides a post (a
    /// membership change, a room's create, a follow, a new key).
    func flushOwn() {
        // Our own chain has no gaps: its contiguous end (kept in memory) is its head.
        while node.store.contiguous(of: node.me) > sentOwnUpTo {
            let mine = node.storeFailures.read("our own envelopes to send") { try node.store.envelopes(from: node.me, startingAt: sentOwnUpTo + 1, limit: 64) } ?? []
            guard !mine.isEmpty else { return }
            for e in mine { sendOwn(e) }
        }
    }

    /// A typed text in `room` (the open one when nil), or to `peer`: one
    /// message or, past `MessageParts.maximumBytes`, several in order, cut on
    /// word boundaries (never a word lost). The envelopes posted. `split`
    /// false (a script's line, `--json`): one message, as long as the
    /// protocol allows (`Envelope.maximumPlaintextBody`), as scripts expect.
    @discardableResult
    func postText(_ text: String, kind: Kind, in room: RoomName? = nil, to peer: PublicKey? = nil, split: Bool = true) throws -> [Envelope] {
        try (split ? MessageParts.split(text) : [text]).map { part in
            if let peer { try postDirect(part, to: peer, kind: kind) } else { try post(part, kind: kind, in: room) }
        }
    }

    /// Posts in `room` (the open one when nil), on the links before it is shown.
    @discardableResult
    func post(_ text: String, kind: Kind, in room: RoomName? = nil) throws -> Envelope {
        // Checked here too (the gate would check the post), so a refusal
        // keeps the pending nick instead of failing it on the way.
        try ensureOwnHistoryIsBack()
        if let nick = ownHistory.takePendingNick() { post(nick: nick) }
        let posting = monotonicNow()
        let e = try node.post(text, kind: kind, in: room ?? session.room, sendsFirst: true)
        core.stages.record(.post, monotonicNow() - posting)
        core.stages.record(.sign, node.ownChain.lastTimes.sign)
        // Where its row follows the send, `sendOwn` times it.
        if node.ownIntent.pending == nil { core.stages.record(.row, node.ownChain.lastTimes.row) }
        receipts.posted(e.sequence, in: e.room)
        sendOwn(e)
        return e
    }

    /// A direct message to `peer` (a text, or an action: `/me`), on the links before it is shown.
    @discardableResult
    func postDirect(_ text: String, to peer: PublicKey, kind: Kind = .text) throws -> Envelope {
        // `node.postingGate` refuses it while our history may be elsewhere.
        let e = try node.postDirect(text, to: peer, kind: kind, sendsFirst: true)
        // The prompt's mark follows it in a `/query`, as a post's in a room.
        receipts.posted(e.sequence, in: e.room)
        sendOwn(e)
        return e
    }

    /// An envelope of ours that `make` signs (an edit, a delete, a
    /// reaction, a reply), once our history is back; on the links before it
    /// is shown. A `message` (a reply) is followed by the prompt's mark.
    @discardableResult
    func act(message: Bool = false, _ make: (Node) throws -> Envelope) throws -> Envelope {
        try ensureOwnHistoryIsBack()
        let e = try make(node)
        if message { receipts.posted(e.sequence, in: e.room) }
        sendOwn(e)
        return e
    }
}
