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

    var prompt: String { TerminalText.sanitize(room.value) + "> " }

    /// What to print when the session starts.
    func greeting(history count: Int = ChatInput.defaultHistory) throws -> [String] {
        let who = node.nick.map { TerminalText.sanitize($0) + "·" } ?? ""
        return ["peernode: \(who)\(node.me.shortFingerprint) (id \(node.me.hex)) on \(node.networkLabel)",
                "type a message and press Enter; /help lists commands"] + (try history(count))
    }

    func history(_ count: Int) throws -> [String] {
        let id = node.roomID(room)
        let entries = try node.store.history(of: id, limit: count)
        for e in entries { node.observe(e.envelope) }
        try node.store.markRead(id)
        let renderer = Renderer(nicks: node.nicks)
        let lines = entries.map { renderer.line($0.envelope, room: room.value, text: node.plaintext(of: $0.envelope)) }
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
                room = try RoomName(name)
                _ = try node.join(room)
                return (try history(ChatInput.defaultHistory), true)
            case let .history(n):
                return (try history(n), true)
            case .stats:
                // The networked node answers this itself; here there is nothing to count.
                return (["-- stats: no links in this mode"], true)
            case .help:
                return (ChatInput.helpText.split(separator: "\n").map(String.init), true)
            case .quit:
                return ([], false)
            case let .block(who, on):
                let key = try node.resolve(who)
                try node.store.setBlocked(key, on, at: Node.now())
                return (["-- \(on ? "blocked" : "unblocked") \(Renderer(nicks: node.nicks).label(key))"], true)
            case let .direct(who, text):
                let peer = try node.resolve(who)
                let e = try node.postDirect(text, to: peer)
                return (["[\(Renderer.clock(e.timestamp))] *→ \(Renderer(nicks: node.nicks).label(peer))* \(TerminalText.sanitize(text))"], true)
            case let .error(message):
                return (["error: \(message)"], true)
            }
        } catch {
            return (["error: \(error)"], true)
        }
    }

    private func show(_ envelope: Envelope) -> String {
        Renderer(nicks: node.nicks).line(envelope, room: room.value, text: node.plaintext(of: envelope))
    }
}
