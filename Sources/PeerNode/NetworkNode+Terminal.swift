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
                  nicks: Array(Set(node.nicks.values.map(\.unsanitized))).filter(TerminalText.isInert).sorted())
    }
}

extension NetworkNode {
    /// `/who`: who has posted in the current room; who of them is linked now.
    func whoLines() -> [String] {
        let room = node.roomID(session.room)
        let authors = (try? node.store.authors(in: room)) ?? []
        guard !authors.isEmpty else { return ["-- nobody has posted in \(session.room.value) yet"] }
        let online = Set(linkedPeers.values)
        let renderer = Renderer(people: node.people)
        return ["-- \(session.room.value): \(authors.count) \(authors.count == 1 ? "member" : "members")"] + authors.map { author in
            let state = author == node.me ? "you" : online.contains(author) ? "linked" : "not linked"
            return "   \(renderer.label(author))  \(state)"
        }
    }

    /// One row of `/peers`.
    struct PeerRow {
        let id: PublicKey?
        let address: String
        /// "linked", "found on the LAN", "--peer" (known but not linked), or "--peer, not linked yet".
        let state: String
        let linkedFor: Double?
        let roundTrip: Double?
        /// Envelopes we hold that it lacks, and it holds that we lack.
        let sending: UInt64, receiving: UInt64
    }

    func peerRows() -> [PeerRow] {
        let now = monotonic()
        var rows: [PeerRow] = []
        var shown: Set<PublicKey> = []
        for (id, link) in table.links.sorted(by: { $0.key < $1.key }) {
            guard let remote = link.remote, shown.insert(remote).inserted else { continue }
            let known = replicator.knownClock(of: id) ?? VectorClock()
            rows.append(PeerRow(id: remote, address: link.address, state: "linked", linkedFor: now - (link.since ?? now),
                                roundTrip: links[id]?.roundTrip, sending: replicator.clock.count(beyond: known),
                                receiving: known.count(beyond: replicator.clock)))
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
        return rows
    }

    /// `/peers`: linked nodes (address, since, round trip, sync state) and found ones not linked.
    func peerLines() -> [String] {
        let renderer = Renderer(people: node.people)
        let lines = peerRows().map { row -> String in
            let who = row.id.map { renderer.label($0) } ?? "?"
            guard let linkedFor = row.linkedFor else {
                return "   \(who)  \(row.address)  \(row.state)\(row.state.hasPrefix("--peer,") ? "" : ", not linked")"
            }
            let sync = row.sending == 0 && row.receiving == 0 ? "in sync" : "sending \(row.sending), receiving \(row.receiving)"
            return "   \(who)  \(row.address)  linked \(Self.duration(linkedFor))  \(Self.roundTripText(row.roundTrip))  \(sync)"
        }
        return ["-- peers: \(Set(linkedPeers.values).count) linked"] + lines
    }

    /// `/peers` with `--json`: one `peer` event per row, after a `peers` count.
    func peerEvents() -> [String] {
        let rows = peerRows()
        return [JSONEvents.line(["type": .string("peers"), "linked": .number(UInt64(Set(linkedPeers.values).count)), "rows": .number(UInt64(rows.count))])]
            + rows.map { row in
                var pairs: [(String, JSONEvents.Value)] = [("type", .string("peer")), ("id", .string(row.id?.hex ?? "")),
                                                          ("nick", .text(row.id.flatMap { node.nicks[$0] } ?? PeerText(""))), ("addr", .string(row.address)),
                                                          ("state", .string(row.linkedFor == nil ? "not linked" : "linked"))]
                if let linkedFor = row.linkedFor { pairs.append(("linked_s", .number(UInt64(max(0, linkedFor))))) }
                if let rtt = row.roundTrip { pairs.append(("rtt_us", .number(UInt64(max(0, rtt * 1_000_000))))) }
                pairs += [("sending", .number(row.sending)), ("receiving", .number(row.receiving))]
                return JSONEvents.line(pairs: pairs)
            }
    }

    /// `/who` with `--json`: one `member` event per author of the room.
    func whoEvents() -> [String] {
        let authors = (try? node.store.authors(in: node.roomID(session.room))) ?? []
        let online = Set(linkedPeers.values)
        return authors.map { author in
            JSONEvents.line(["type": .string("member"), "room": .string(session.room.value), "id": .string(author.hex), "nick": .text(node.nicks[author] ?? PeerText("")),
                             "state": .string(author == node.me ? "you" : online.contains(author) ? "linked" : "not linked")])
        }
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\(s % 3600 / 60)m"
    }
}
