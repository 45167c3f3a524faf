import Crypto
import Gossip
import TermUI

extension NetworkNode {
    /// What Tab completes now: commands, known rooms, known nicks (on the loop).
    func completer() -> Completer {
        Completer(commands: ChatInput.commandNames, rooms: node.knownRooms, nicks: Array(Set(node.nicks.values)).sorted())
    }
}

extension NetworkNode {
    /// `/who`: who has posted in the current room; who of them is linked now.
    func whoLines() -> [String] {
        let room = node.roomID(session.room)
        let authors = (try? node.store.authors(in: room)) ?? []
        guard !authors.isEmpty else { return ["-- nobody has posted in \(session.room.value) yet"] }
        let online = Set(linkedPeers.values)
        let renderer = Renderer(nicks: node.nicks)
        return ["-- \(session.room.value): \(authors.count) \(authors.count == 1 ? "member" : "members")"] + authors.map { author in
            let state = author == node.me ? "you" : online.contains(author) ? "linked" : "not linked"
            return "   \(renderer.label(author))  \(state)"
        }
    }

    /// `/peers`: linked nodes (address, since, sync state) and found ones not linked.
    func peerLines() -> [String] {
        let renderer = Renderer(nicks: node.nicks)
        let now = monotonic()
        var lines: [String] = []
        var shown: Set<PublicKey> = []
        for (id, link) in links.sorted(by: { $0.key < $1.key }) {
            guard let remote = link.remote, shown.insert(remote).inserted else { continue }
            let known = replicator.knownClock(of: id) ?? VectorClock()
            var ahead: UInt64 = 0, behind: UInt64 = 0
            for (author, ours) in replicator.clock.entries where ours > known[author] { ahead += ours - known[author] }
            for (author, theirs) in known.entries where theirs > replicator.clock[author] { behind += theirs - replicator.clock[author] }
            let sync = ahead == 0 && behind == 0 ? "in sync" : "sending \(ahead), receiving \(behind)"
            lines.append("   \(renderer.label(remote))  \(link.connection.remoteAddress)  linked \(Self.duration(now - (link.since ?? now)))  \(sync)")
        }
        for dialer in dialers where !dialer.retired {
            guard let remote = dialer.remote, !shown.contains(remote) else { continue }
            shown.insert(remote)
            lines.append("   \(renderer.label(remote))  \(dialer.host):\(dialer.port)  \(dialer.discovered ? "found on the LAN" : "--peer"), not linked")
        }
        for dialer in dialers where dialer.remote == nil {
            lines.append("   ?  \(dialer.host):\(dialer.port)  --peer, not linked yet")
        }
        return ["-- peers: \(Set(linkedPeers.values).count) linked"] + lines
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\(s % 3600 / 60)m"
    }
}
