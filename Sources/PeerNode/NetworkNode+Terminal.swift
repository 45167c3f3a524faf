import NodeCore
import Gossip
import ChatText
import Crypto
import Gossip
import TermUI

extension NetworkNode {
    /// What Tab completes now: commands, known rooms, known nicks (on the
    /// loop). Nicks and rooms come from the network: one that would not print
    /// as itself (controls, bidi overrides, invisible characters) is left out,
    /// since completing it would echo it raw into the line being typed.
    func completer() -> Completer {
        Completer(commands: ChatInput.commandNames, rooms: node.knownRooms.filter(TerminalText.isInert),
                  nicks: Array(Set(node.nicks.values.map(\.unsanitized))).filter(TerminalText.isInert).sorted(),
                  lastMessage: lastMessageToEdit())
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
    func conversationLines() throws -> [String] {
        let rows = try conversations().filter { $0.room == nil }
        guard !rows.isEmpty else { return [] }
        let renderer = Renderer(people: node.people)
        let open = session.conversationPeer.map { node.people.account($0) }
        return ["-- direct conversations (/query WHO opens one):"] + rows.compactMap { row in
            guard let peer = row.peer else { return nil }
            let unread = row.unread > 0 ? " (\(row.unread) unread)" : ""
            let preview = row.last.map { renderer.preview($0.envelope, text: $0.opened.text.description) } ?? ""
            return "\(peer.key == open ? "*" : " ")  @\(renderer.label(peer))\(unread)\(preview)"
        }
    }

    /// `/who`: who has posted in `room` (the open one when nil); who of them is linked now.
    func members(in room: RoomName? = nil) throws -> NodeEvent {
        let online = Set(linkedPeers.values)
        let room = room ?? session.room
        let authors = try node.store.authors(in: node.roomID(room))
        return .members(room: room, authors.map { author in
            Member(person: node.people[author], state: author == node.me ? .you : online.contains(author) ? .linked : .notLinked)
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

    /// Says we are typing in `room` (a room, or a conversation's), unless we said so lately.
    func sendTyping(in room: RoomID) {
        guard !relay, let notice = typing.ours(in: room, now: monotonic(), wall: Node.now()) else { return }
        feed(.typing(notice, except: nil))
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
