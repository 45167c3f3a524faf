import ChatText
import Gossip
import Store

/// The line-mode chat of this first slice: lines in, lines out. No network
/// yet, so everything shown is this node's own store.
final class ChatSession {
    let node: Node
    private(set) var room: RoomName

    init(node: Node, room: RoomName) throws {
        self.node = node
        self.room = room
        _ = try node.join(room)
    }

    /// Why `room` may be mistaken for another known room (or mixes scripts), if it may.
    func lookAlikeWarning(_ room: RoomName) -> String? { Confusables.roomWarning(room.value, known: node.knownRooms) }

    /// The room as the prompt shows it: inert, with ⚠ when it looks like another.
    var roomLabel: String { TerminalText.sanitize(room.value) + (lookAlikeWarning(room) == nil ? "" : "⚠") }

    var prompt: String { roomLabel + "> " }

    /// What to print when the session starts.
    func greeting(history count: Int = ChatInput.defaultHistory) throws -> [String] {
        let who = node.nick.map { TerminalText.sanitize($0) + "·" } ?? ""
        let invites = (try? node.pendingInvites().count) ?? 0
        return ["peernode: \(who)\(node.me.shortFingerprint) (id \(node.me.hex)) on \(node.networkLabel)"]
            + (node.openNetworkName.map { ["-- ⚠ " + Node.openNetworkWarning($0)] } ?? [])
            + node.repairs.map { "-- ⚠ " + $0 }
            + (invites > 0 ? ["-- \(invites) invite\(invites == 1 ? "" : "s") waiting: /invites lists them, /accept or /decline answers"] : [])
            + ["type a message and press Enter; /help lists commands"] + (try history(count))
    }

    func history(_ count: Int) throws -> [String] {
        let id = node.roomID(room)
        let entries = try node.store.history(of: id, limit: count)
        let opened = entries.map { node.open($0.envelope) }
        for (e, o) in zip(entries, opened) { if let o { node.observe(e.envelope, o) } }
        try node.store.markRead(id)
        let renderer = Renderer(people: node.people)
        let lines = zip(entries, opened).compactMap { e, o -> String? in
            // A receipt sealed in version 2 is only known as one once opened.
            o?.kind == .receipt ? nil : renderer.line(e.envelope, room: room.value, opened: o)
        }
        return ["--- \(room.value): \(lines.isEmpty ? "no messages yet" : "last \(lines.count) message\(lines.count == 1 ? "" : "s")") ---"] + lines
    }

    /// Handles one input line; returns lines to print and whether to go on.
    func handle(_ line: String) -> (output: [String], keepGoing: Bool) {
        do {
            switch ChatInput.parse(line) {
            case .empty:
                return ([], true)
            case let .message(text):
                return ([try show(node.post(text, kind: .text, in: room))], true)
            case let .action(text):
                return ([try show(node.post(text, kind: .action, in: room))], true)
            case let .nick(name):
                let nick = try Nick(name)
                return ([try show(node.post(nick.value, kind: .nick, in: room))], true)
            case let .join(name):
                let target = try RoomName(name)
                let warning = lookAlikeWarning(target)
                room = target
                _ = try node.join(room)
                return ((warning.map { ["-- ⚠ " + $0] } ?? []) + (try history(ChatInput.defaultHistory)), true)
            case let .history(n):
                return (try history(n), true)
            case .stats, .who, .peers, .set, .sync:
                // The networked node answers these itself; here there are no links.
                return (["-- no links in this mode"], true)
            case let .search(query):
                let found = try node.search(query, limit: ChatSession.searchLimit)
                let renderer = Renderer(people: node.people)
                let lines = found.reversed().map { stored -> String in
                    let e = stored.envelope
                    if let name = node.roomName(e.room) { return renderer.line(e, room: name.value, opened: node.open(e)) }
                    guard let (peer, text) = node.direct(e) else { return renderer.line(e, room: "?", opened: nil) }
                    return renderer.directLine(e, to: e.author == node.me ? peer : node.me, text: text)
                }
                let header = "-- \(found.count) \(found.count == 1 ? "message" : "messages") with \"\(TerminalText.sanitize(query))\"\(found.count == ChatSession.searchLimit ? " (the newest \(ChatSession.searchLimit))" : "")"
                return ([header] + lines, true)
            case let .helpOn(text):
                return (["  " + text], true)
            case .rooms:
                return (try roomList(), true)
            case let .switchRoom(which):
                let rooms = try joinedRooms()
                let target: RoomName
                if let n = Int(which) {
                    guard n >= 1, n <= rooms.count else { return (["error: no room \(n) (see /rooms)"], true) }
                    target = rooms[n - 1]
                } else {
                    target = try RoomName(which)
                    guard rooms.contains(target) else { return (["error: not in \(target.value) (/join \(target.value) first)"], true) }
                }
                room = target
                return (try history(ChatInput.defaultHistory), true)
            case .part:
                guard room != .general else { return (["error: #general is home; /quit to leave"], true) }
                _ = try node.post("", kind: .leave, in: room)
                let left = room
                try node.leave(left)
                room = .general
                return (["-- left \(left.value)"] + (try history(ChatInput.defaultHistory)), true)
            case .help:
                return (ChatInput.helpText.split(separator: "\n").map(String.init), true)
            case let .quit(reason):
                // The reason is posted as an action, as on a networked node: it reaches peers later.
                return (reason.isEmpty ? [] : [try show(node.post("has quit (\(reason))", kind: .action, in: room))], false)
            case let .createPrivate(name):
                let target = try RoomName(name)
                try node.createPrivateRoom(target)
                room = target
                return (["-- created the private room \(target.value): /invite WHO \(target.value) lets someone in"], true)
            case .invite, .answerInvite, .invites:
                return (["-- no links in this mode"], true)
            case let .trust(who, on):
                let key = try node.resolve(who)
                try node.setTrusted(key, on)
                return (["-- \(on ? "trusted" : "no longer trusted"): \(Renderer(people: node.people).label(key)) (id \(key.hex))"], true)
            case let .block(who, on):
                let key = try node.resolve(who)
                try node.store.setBlocked(key, on, at: Node.now())
                return (["-- \(on ? "blocked" : "unblocked") \(Renderer(people: node.people).label(key))"], true)
            case let .direct(who, text):
                let peer = try node.resolve(who)
                let e = try node.postDirect(text, to: peer)
                return (["[\(Renderer.clock(e.timestamp))] *→ \(Renderer(people: node.people).label(peer))* \(TerminalText.sanitize(text))"], true)
            case let .error(message):
                return (["error: \(message)"], true)
            }
        } catch {
            return (["error: \(error)"], true)
        }
    }

    /// Most results `/search` shows.
    static let searchLimit = 50

    /// Named rooms, most recent first (the order of /rooms and /1…/9).
    func joinedRooms() throws -> [RoomName] {
        try node.store.roomSummaries(me: node.me).compactMap { summary in summary.name.flatMap { try? RoomName($0) } }
    }

    private func roomList() throws -> [String] {
        let summaries = try node.store.roomSummaries(me: node.me).filter { $0.name != nil }
        guard !summaries.isEmpty else { return ["-- no rooms yet: /join #room"] }
        let renderer = Renderer(people: node.people)
        return ["-- rooms (most recent first):"] + summaries.enumerated().map { index, summary in
            let name = TerminalText.sanitize(summary.name ?? "")
            let marker = summary.name == room.value ? "*" : " "
            let unread = summary.unread > 0 ? " (\(summary.unread) unread)" : ""
            var preview = ""
            if let last = summary.last, let text = node.plaintext(of: last.envelope)?.description {
                let short = text.count > 40 ? String(text.prefix(39)) + "…" : text
                preview = "  [\(Renderer.clock(last.envelope.timestamp))] <\(renderer.label(last.envelope.author))> \(short)"
            }
            return "\(marker)\(index + 1). \(name)\(unread)\(preview)"
        }
    }

    private func show(_ envelope: Envelope) -> String {
        Renderer(people: node.people).line(envelope, room: room.value, opened: node.open(envelope))
    }
}
