import ChatText
import Crypto
import Gossip
import NetworkText
import Store

/// The room the person has open (or a direct conversation, `/query`), and
/// the commands that read or change only the local store: lines a person
/// reads (`NodeEvent.chatLines`). Failures are thrown (`NodeError` and the
/// store's own).
final class ChatSession {
    let node: Node
    private(set) var room: RoomName
    /// The direct conversation open in place of the room (`/query WHO`):
    /// plain lines go there, and `/history`, `/edit`, `/reply`… act on it.
    /// The room stays what it was, and is open again once this is closed.
    private(set) var conversationPeer: PublicKey?

    /// Where the numbered commands act: the open conversation's room, else
    /// the open room; with how a refusal names it.
    struct Place {
        let room: RoomID
        let name: String
    }

    func openPlace() throws -> Place {
        guard let peer = conversationPeer else { return Place(room: node.roomID(room), name: room.value) }
        guard let c = node.conversations.conversation(with: peer) else { throw NodeError.notSealable(peer) }
        return Place(room: c.room, name: "your conversation with " + plainLabel(peer))
    }

    /// The open room's id, or the open conversation's (where it is written now).
    var openRoomID: RoomID { conversationPeer.flatMap { node.conversations.conversation(with: $0)?.room } ?? node.roomID(room) }

    /// Every room id what is shown in the open place may have: a
    /// conversation's older one (envelope version 1) too.
    /// The open window's name on the act list: the room's, or `@` and the other account's id.
    var openPlaceKey: String { conversationPeer.map { Self.conversationKey(node.people.account($0)) } ?? room.value }

    static func conversationKey(_ account: PublicKey) -> String { "@" + account.hex }

    var openRoomIDs: Set<RoomID> {
        guard let peer = conversationPeer, let c = node.conversations.conversation(with: peer) else { return [node.roomID(room)] }
        return [c.room, c.roomVersion1]
    }

    /// `nick⚠·fp✔` without colour (the prompt's width is counted without
    /// it): ⚠ when the nick looks like another's, ✔ when trusted; inert.
    func plainLabel(_ key: PublicKey) -> String {
        let person = node.people[key]
        return (person.nick.map { "\($0)" + (person.lookAlike ? "⚠" : "") + "·" } ?? "") + person.key.shortFingerprint + (person.trusted ? "✔" : "")
    }

    init(node: Node, room: RoomName) throws {
        self.node = node
        self.room = room
        _ = try node.join(room)
    }

    /// Why `room` may be mistaken for another known room (or mixes scripts), if it may.
    func lookAlikeWarning(_ room: RoomName) -> String? { Confusables.roomWarning(room.value, known: node.knownRooms) }

    /// The room as the prompt shows it: inert, with ⚠ when it looks like
    /// another; an open conversation as `@nick·fp`.
    var roomLabel: String {
        if let peer = conversationPeer { return "@" + plainLabel(peer) }
        return TerminalText.sanitize(room.value) + (lookAlikeWarning(room) == nil ? "" : "⚠")
            + (invitedAs[room].map { " (invited as \(TerminalText.sanitize($0)))" } ?? "")
    }

    /// Private rooms accepted under another name than their invite's (that
    /// name was taken here), with the invite's: the prompt says so while
    /// this session lasts, so `#secret-2` is not taken for `#secret`.
    var invitedAs: [RoomName: String] = [:]

    var prompt: String { roomLabel + "> " }

    /// Said at start, in `--help` and in README (issue 13, finding 12).
    static func openNetworkWarning(_ name: String) -> String {
        "network \(name) is open: anyone on this LAN can join it, read its public rooms and see who is here. "
            + "For a private network: peernode network new FILE, copy FILE to each machine, start each with --network-key-file FILE"
    }

    /// What to print when the session starts.
    /// What a person sees first: who this node is, on which network, what
    /// waits, and the open room's last messages. A part the database cannot
    /// give (a full disk: showing history moves the read mark) is said in
    /// its place, with what failed; the rest still shows.
    func greeting(history count: Int = ChatInput.defaultHistory) -> [String] {
        let who = node.nick.map { TerminalText.sanitize($0) + "·" } ?? ""
        var invites: [String] = [], recent: [String] = []
        do {
            let waiting = try node.privateRooms.pendingInvites().count
            if waiting > 0 { invites = ["-- \(waiting) invite\(waiting == 1 ? "" : "s") waiting: /invites lists them, /accept or /decline answers"] }
        } catch {
            invites = ["error: reading the invites waiting failed: " + TerminalText.sanitize("\(error)")]
        }
        do { recent = try history(count) } catch {
            recent = ["error: showing the last messages failed: " + TerminalText.sanitize("\(error)")]
        }
        return ["peernode: \(who)\(node.me.shortFingerprint) (id \(node.me.hex)) on \(node.networkLabel)"]
            + (node.openNetworkName.map { ["-- ⚠ " + Self.openNetworkWarning($0)] } ?? [])
            + node.repairs.map { "-- ⚠ " + $0 }
            + invites
            + ["type a message and press Enter; /help lists commands"] + recent
    }

    /// Envelopes `/history N` reads back at most, looking for N lines
    /// (receipts, edits and reactions are not lines of their own).
    static let historyScanLimit = ChatInput.maximumHistory * 8

    /// The envelopes of room `id` read back, newest last, more at a time,
    /// until `count` lines show or the room has no more; marked read.
    private func scan(_ id: RoomID, lines count: Int) throws -> (entries: [StoredEnvelope], opened: [OpenedEnvelope?]) {
        var limit = count
        var entries = try node.store.history(of: id, limit: limit)
        var opened = entries.map { node.open($0.envelope) }
        while entries.count == limit, limit < Self.historyScanLimit,
              zip(entries, opened).count(where: { e, o in !e.envelope.isPruned && o.map { Self.isLine($0.kind) } ?? true }) < count {
            limit = min(limit * 4, Self.historyScanLimit)
            entries = try node.store.history(of: id, limit: limit)
            opened = entries.map { node.open($0.envelope) }
        }
        for (e, o) in zip(entries, opened) { if let o { node.observe(e.envelope, o) } }
        try node.store.markRead(id)
        return (entries, opened)
    }

    /// The last `count` lines of the open room (or conversation).
    func history(_ count: Int) throws -> [String] {
        if let peer = conversationPeer { return try conversationHistory(with: peer, count) }
        let id = node.roomID(room)
        let (entries, opened) = try scan(id, lines: count)
        let renderer = Renderer(people: node.people)
        let numbers = try node.store.numbers(of: entries)
        let all = zip(entries, opened).compactMap { e, o -> String? in
            // An erased message shows as its tombstone's line.
            if e.envelope.isPruned || o.map({ !Self.isLine($0.kind) }) == true || node.devices.isRevoked(e.envelope) { return nil }
            if o?.kind == .membership, !node.privateRooms.membershipHolds(e.envelope) { return nil }
            guard let o, o.isMessage, let (shown, edited) = node.messageLife.openedNow(e.envelope) else { return renderer.line(e.envelope, room: room.value, opened: o) }
            return "(\(numbers[e.delivery] ?? 0)) " + renderer.line(e.envelope, room: room.value, opened: shown, quote: node.reactions.quote(of: e.envelope, o))
                + (edited ? " (edited)" : "") + Renderer.reactionsSuffix(node.reactions.standing(on: e.envelope))
        }
        let lines = Array(all.suffix(count))
        return ["--- \(room.value): \(lines.isEmpty ? "no messages yet" : "last \(lines.count) message\(lines.count == 1 ? "" : "s")") ---"] + lines
    }

    /// The last `count` lines of the direct conversation with `peer`: both
    /// of its rooms (envelope versions 2 and 1) merged in delivery order,
    /// numbered as in the current one (where `/edit N`, `/reply N` look).
    func conversationHistory(with peer: PublicKey, _ count: Int) throws -> [String] {
        guard let c = node.conversations.conversation(with: peer) else { throw NodeError.notSealable(peer) }
        let other = node.people.account(peer)
        let renderer = Renderer(people: node.people)
        var lines: [(order: (Int64, MessageID), text: String)] = []
        for id in [c.room, c.roomVersion1] {
            let (entries, opened) = try scan(id, lines: count)
            let numbers = id == c.room ? try node.store.numbers(of: entries) : [:]
            for (e, o) in zip(entries, opened) where !node.devices.isRevoked(e.envelope) {
                let order = (e.causalTime, e.envelope.id)
                // An erased message shows as its tombstone's line.
                if o?.kind == .tombstone { lines.append((order, renderer.deletedLine(e.envelope, room: nil))) }
                guard !e.envelope.isPruned, let o, o.isMessage, Self.isLine(o.kind), let (shown, edited) = node.messageLife.openedNow(e.envelope) else { continue }
                let to = node.people.account(e.envelope.author) == node.account ? other : node.account
                lines.append((order, (numbers[e.delivery].map { "(\($0)) " } ?? "")
                    + renderer.directLine(e.envelope, to: to, text: shown.text, quote: node.reactions.quote(of: e.envelope, o), action: o.kind == .action)
                    + (edited ? " (edited)" : "") + Renderer.reactionsSuffix(node.reactions.standing(on: e.envelope))))
            }
        }
        let shown = lines.sorted { $0.order < $1.order }.suffix(count).map(\.text)
        return ["--- your conversation with \(plainLabel(peer)): \(shown.isEmpty ? "no messages yet" : "last \(shown.count) message\(shown.count == 1 ? "" : "s")") ---"]
            + shown
    }

    /// `/query WHO`: the conversation with WHO opens in place of the room
    /// (its history shown); `/query` alone closes it, back to the room.
    func query(_ who: String?) throws -> [String] {
        guard let who else {
            guard let peer = conversationPeer else { return ["-- no conversation is open: /query WHO opens one"] }
            conversationPeer = nil
            return ["-- closed your conversation with \(plainLabel(peer))"] + (try history(ChatInput.defaultHistory))
        }
        return try query(peer: node.people.resolve(who))
    }

    /// Opens the direct conversation with `peer`: its last lines.
    func query(peer: PublicKey) throws -> [String] {
        guard node.people.account(peer) != node.account else { throw NodeError.conversationWithYourself }
        guard node.conversations.conversation(with: peer) != nil else { throw NodeError.notSealable(peer) }
        conversationPeer = peer
        return try conversationHistory(with: peer, ChatInput.defaultHistory)
    }

    /// Whether an envelope of `kind` is a line of `/history`: a receipt
    /// (sealed since version 2, so only known as one once opened) is not,
    /// an edit shows as its original's text, a reaction as a count under its message.
    static func isLine(_ kind: Kind) -> Bool { kind != .receipt && kind != .edit && kind != .reaction }

    /// `/reactions [N]`: who gave which reaction to `target`.
    func reactions(to target: Envelope) throws -> [String] {
        let renderer = Renderer(people: node.people)
        let all = node.reactions.standing(on: target)
        let what = node.open(target).map { "\(renderer.label(target.author)): \"\(PeerText(Quote.excerpt(node.messageLife.currentText(of: target, opened: $0).text.unsanitized)))\"" }
            ?? "that message"
        guard !all.isEmpty else { return ["-- no reactions to \(what)"] }
        return ["-- reactions to \(what):"] + all.map { reaction, by in
            "  \(TerminalText.sanitize(reaction)) \(by.count): " + by.map { renderer.label($0) }.joined(separator: ", ")
        }
    }

    /// `/nick NAME`: posted in the open room.
    func nick(_ name: String) throws -> [String] {
        let nick = try Nick(name)
        return [show(try node.post(nick.value, kind: .nick, in: room))]
    }

    /// `/join #room`: opens it (joining it first), with a warning when it looks like a known one.
    func join(_ name: String) throws -> [String] {
        let target = try RoomName(name)
        let warning = lookAlikeWarning(target)
        room = target
        conversationPeer = nil
        _ = try node.join(room)
        return (warning.map { ["-- ⚠ " + $0] } ?? []) + (try history(ChatInput.defaultHistory))
    }

    /// `/search WORDS`: the newest matches, oldest first.
    func search(_ query: String) throws -> [String] {
        let found = try node.searchIndex.search(query, limit: ChatSession.searchLimit)
        let lines = foundLines(found)
        let header = "-- \(found.count) \(found.count == 1 ? "message" : "messages") with \"\(TerminalText.sanitize(query))\"\(found.count == ChatSession.searchLimit ? " (the newest \(ChatSession.searchLimit))" : "")"
        return [header] + lines
    }

    /// Messages found (newest first) as lines, oldest first: in their room, or as direct messages.
    private func foundLines(_ found: [StoredEnvelope]) -> [String] {
        let renderer = Renderer(people: node.people)
        return found.reversed().map { stored -> String in
            let e = stored.envelope
            let now = node.messageLife.openedNow(e)
            let quote = now.flatMap { node.reactions.quote(of: e, $0.opened) }
            let edited = now?.edited == true ? " (edited)" : ""
            if let name = node.roomName(e.room) { return renderer.line(e, room: name.value, opened: now?.opened, quote: quote) + edited }
            guard let (peer, _) = node.direct(e), let text = now?.opened.text else { return renderer.line(e, room: "?", opened: nil) }
            return renderer.directLine(e, to: node.people.account(e.author) == node.account ? peer : node.account, text: text, quote: quote) + edited
        }
    }

    /// `/switch N` or `/switch #room`: a room already joined.
    func switchTo(_ which: String) throws -> [String] {
        let rooms = try joinedRooms()
        let target: RoomName
        if let n = Int(which) {
            guard n >= 1, n <= rooms.count else { throw NodeError.noRoomNumbered(n) }
            target = rooms[n - 1]
        } else {
            target = try RoomName(which)
            guard rooms.contains(target) else { throw NodeError.notIn(target) }
        }
        room = target
        conversationPeer = nil
        return try history(ChatInput.defaultHistory)
    }

    /// Opens `name`, a room joined: what is typed next goes there.
    func open(_ name: RoomName) {
        room = name
        conversationPeer = nil
    }

    /// `/part`: leaves the open room (not #general) and goes home; in a
    /// `/query`, closes the conversation instead.
    func part() throws -> [String] {
        if conversationPeer != nil { return try query(nil) }
        let left = room
        try leave(left)
        return ["-- left \(left.value)"] + (try history(ChatInput.defaultHistory))
    }

    /// Leaves `name` (not #general): a leave is posted there and the room
    /// is no longer listed. If it was the open room, #general is opened.
    func leave(_ name: RoomName) throws {
        guard name != .general else { throw NodeError.generalIsHome }
        guard node.roomName(node.roomID(name)) != nil else { throw NodeError.notIn(name) }
        _ = try node.post("", kind: .leave, in: name)
        try node.leave(name)
        if room == name { room = .general }
    }

    /// `/private #room`: made, and opened.
    func createPrivate(_ name: String) throws -> [String] {
        let target = try RoomName(name)
        try node.privateRooms.createPrivateRoom(target)
        room = target
        conversationPeer = nil
        return ["-- created the private room \(target.value): /invite WHO \(target.value) lets someone in"]
    }

    /// `/trust WHO` and `/untrust WHO`.
    func trust(_ who: String, _ on: Bool) throws -> [String] {
        let key = try node.people.resolve(who)
        try node.setTrusted(key, on)
        return ["-- \(on ? "trusted" : "no longer trusted"): \(Renderer(people: node.people).label(key)) (id \(key.hex))"]
    }

    /// Most results `/search` shows.
    static let searchLimit = 50

    /// Named rooms, most recent first (the order of /rooms and /1…/9).
    func joinedRooms() throws -> [RoomName] {
        try node.store.roomSummaries(me: node.me).compactMap { summary in summary.name.flatMap { name in node.storeFailures.read("a room's name") { try RoomName(name) } } }
    }

    /// `/mentions`: the newest messages that named our nick, oldest first.
    func mentions() throws -> [String] {
        guard let nick = node.nick else { return ["-- you have no nick yet, so no message can name you: /nick NAME"] }
        let found = try node.searchIndex.mentions(of: node.nick ?? "", me: node.me, limit: ChatSession.searchLimit)
        let lines = foundLines(found)
        return ["-- \(found.count) \(found.count == 1 ? "message names" : "messages name") \(TerminalText.sanitize(nick))"
            + (found.count == ChatSession.searchLimit ? " (the newest \(ChatSession.searchLimit))" : "")] + lines
    }

    func roomList(mentioned: (String) -> Bool = { _ in false }) throws -> [String] {
        let summaries = try node.store.roomSummaries(me: node.me).filter { $0.name != nil }
        guard !summaries.isEmpty else { return ["-- no rooms yet: /join #room"] }
        let renderer = Renderer(people: node.people)
        return ["-- rooms (most recent first):"] + summaries.enumerated().map { index, summary in
            let name = TerminalText.sanitize(summary.name ?? "")
            let marker = summary.name == room.value && conversationPeer == nil ? "*" : " "
            let named = mentioned(summary.name ?? "")
            let unread = summary.unread > 0 ? " (\(summary.unread) unread\(named ? ", names you" : ""))" : (named ? " (names you)" : "")
            let preview = summary.last.flatMap { last in
                node.messageLife.openedNow(last.envelope).map { renderer.preview(last.envelope, text: $0.opened.text.description) }
            } ?? ""
            return "\(marker)\(index + 1). \(name)\(unread)\(preview)"
        }
    }

    private func show(_ envelope: Envelope) -> String {
        Renderer(people: node.people).line(envelope, room: room.value, opened: node.open(envelope))
    }
}

