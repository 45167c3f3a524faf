import Crypto
import Gossip
import Testing

@Suite("Overlay and tree messages (gossip types 8–11): layouts and limits")
struct OverlayMessageTests {
    static func peer(_ n: UInt8) throws -> OverlayPeer {
        OverlayPeer(identity: try SigningKey.generate().publicKey, address: [10, 0, 0, n], port: 7733)
    }

    @Test("every message round-trips through its bytes")
    func roundTrips() throws {
        let peers = try (1...8).map { try Self.peer($0) }
        let author = try SigningKey.generate().publicKey
        let messages: [GossipMessage] = [
            .overlay(.join(port: 7733)), .overlay(.join(port: 0)),
            .overlay(.forwardJoin(peers[0], ttl: 6)), .overlay(.forwardJoin(peers[1], ttl: 0)),
            .overlay(.neighbor(urgent: true, port: 1)), .overlay(.neighbor(urgent: false, port: 65_535)),
            .overlay(.neighborReply(accepted: true)), .overlay(.neighborReply(accepted: false)),
            .overlay(.disconnect(alive: true)), .overlay(.disconnect(alive: false)),
            .overlay(.shuffle(peers)), .overlay(.shuffle([])), .overlay(.shuffleReply(Array(peers.prefix(3)))),
            .overlay(.keep(port: 7733)),
            .ihave([Dependency(author: author, sequence: 42)]), .ihave([]), .prune([author]), .prune([]), .graft([author]), .graft([]),
        ]
        for m in messages { #expect(try GossipMessage.decode(m.encoded) == m) }
    }

    @Test("byte layouts, as docs/PROTOCOL.md §11 gives them")
    func layouts() throws {
        let p = try Self.peer(7)
        #expect(GossipMessage.overlay(.join(port: 0x1E35)).encoded == [8, 1, 0x1E, 0x35])
        #expect(GossipMessage.overlay(.forwardJoin(p, ttl: 3)).encoded == [8, 2] + p.identity.bytes + [10, 0, 0, 7, 0x1E, 0x35, 3])
        #expect(GossipMessage.overlay(.neighbor(urgent: true, port: 0x1E35)).encoded == [8, 3, 1, 0x1E, 0x35])
        #expect(GossipMessage.overlay(.neighborReply(accepted: false)).encoded == [8, 4, 0])
        #expect(GossipMessage.overlay(.disconnect(alive: true)).encoded == [8, 5, 1])
        #expect(GossipMessage.overlay(.shuffle([p])).encoded == [8, 6, 1] + p.identity.bytes + [10, 0, 0, 7, 0x1E, 0x35])
        #expect(GossipMessage.overlay(.shuffleReply([])).encoded == [8, 7, 0])
        #expect(GossipMessage.overlay(.keep(port: 1)).encoded == [8, 8, 0, 1])
        #expect(GossipMessage.prune([p.identity]).encoded == [10, 1] + p.identity.bytes)
        #expect(GossipMessage.graft([]).encoded == [11, 0])
        #expect(GossipMessage.ihave([]).encoded == [9, 0])
    }

    @Test("limits at and one past: 8 peers in a shuffle, ttl 6; bad flags, port 0, unknown kinds and trailing bytes are refused")
    func limits() throws {
        let peers = try (1...9).map { try Self.peer($0) }
        let eight = GossipMessage.overlay(.shuffle(Array(peers.prefix(OverlayMessage.maximumPeers))))
        #expect(try GossipMessage.decode(eight.encoded) == eight)
        let nine = GossipMessage.overlay(.shuffle(peers)).encoded
        #expect(throws: EnvelopeError.tooLarge(size: 9, limit: 8)) { try GossipMessage.decode(nine) }
        let nineReply = GossipMessage.overlay(.shuffleReply(peers)).encoded
        #expect(throws: EnvelopeError.tooLarge(size: 9, limit: 8)) { try GossipMessage.decode(nineReply) }
        var walk = GossipMessage.overlay(.forwardJoin(peers[0], ttl: 6)).encoded
        #expect(throws: Never.self) { try GossipMessage.decode(walk) }
        walk[walk.count - 1] = 7
        #expect(throws: EnvelopeError.tooLarge(size: 7, limit: 6)) { try GossipMessage.decode(walk) }
        #expect(throws: EnvelopeError.badValue(field: "urgent", 2)) { try GossipMessage.decode([8, 3, 2, 0, 1]) }
        #expect(throws: EnvelopeError.badValue(field: "accepted", 255)) { try GossipMessage.decode([8, 4, 255]) }
        #expect(throws: EnvelopeError.badValue(field: "alive", 2)) { try GossipMessage.decode([8, 5, 2]) }
        let atPortZero = [8, 2] + peers[0].identity.bytes + [10, 0, 0, 1, 0, 0, 1]
        #expect(throws: EnvelopeError.badValue(field: "peer port", 0)) { try GossipMessage.decode(atPortZero) }
        #expect(throws: EnvelopeError.unknownKind(9)) { try GossipMessage.decode([8, 9]) }
        #expect(throws: EnvelopeError.unknownKind(0)) { try GossipMessage.decode([8, 0]) }
        #expect(throws: EnvelopeError.truncated(field: "overlay kind")) { try GossipMessage.decode([8]) }
        #expect(throws: EnvelopeError.truncated(field: "peer address")) { try GossipMessage.decode([8, 6, 1] + peers[0].identity.bytes + [10]) }
        #expect(throws: EnvelopeError.trailingBytes(count: 1)) { try GossipMessage.decode([10, 0, 0]) }
        #expect(throws: EnvelopeError.truncated(field: "count")) { try GossipMessage.decode([11]) }
        // Authors in a prune or graft: strictly ascending, at most 4 096.
        let sorted = [peers[0].identity, peers[1].identity].sorted()
        #expect(throws: EnvelopeError.dependenciesNotCanonical) { try GossipMessage.decode([10, 2] + sorted[1].bytes + sorted[0].bytes) }
        #expect(throws: EnvelopeError.dependenciesNotCanonical) { try GossipMessage.decode([11, 2] + sorted[0].bytes + sorted[0].bytes) }
        #expect(throws: EnvelopeError.tooManyDependencies(count: 4_097, limit: 4_096)) { try GossipMessage.decode([10, 0x81, 0x20]) }
        #expect(throws: EnvelopeError.trailingBytes(count: 1)) { try GossipMessage.decode([8, 8, 0, 1, 0]) }
    }

    @Test("only dotted IPv4 names a peer: names, IPv6, out-of-range parts and junk do not")
    func addresses() throws {
        let key = try SigningKey.generate().publicKey
        #expect(OverlayPeer(identity: key, host: "10.213.0.4", port: 1)?.address == [10, 213, 0, 4])
        #expect(OverlayPeer(identity: key, host: "127.0.0.1", port: 1)?.host == "127.0.0.1")
        for bad in ["localhost", "::1", "10.0.0.256", "10.0.0", "10.0.0.1.2", "", "1..2.3", "+1.2.3.4", "01234.1.1.1", "١.٢.٣.٤"] {
            #expect(OverlayPeer(identity: key, host: bad, port: 1) == nil, "\(bad)")
        }
    }
}
