import Crypto
import Gossip
import Testing

@Suite("Gossip messages and chunking")
struct GossipMessageTests {
    @Test("each message type round-trips")
    func roundTrip() throws {
        let a = try Author()
        let keys = try (0..<5).map { _ in try SigningKey.generate().publicKey }
        let clock = GossipMessage.clock(entries: keys.enumerated().map { Dependency(author: $1, sequence: UInt64($0) * 1000 + 1) }.sorted { $0.author < $1.author }, full: true)
        #expect(try GossipMessage.decode(clock.encoded) == clock)
        let delta = GossipMessage.clock(entries: [Dependency(author: keys[0], sequence: Envelope.maximumSequence)], full: false)
        #expect(try GossipMessage.decode(delta.encoded) == delta)
        let batch = GossipMessage.envelopes([CarriedEnvelope(hops: 3, envelope: try a.envelope())])
        #expect(try GossipMessage.decode(batch.encoded) == batch)
        let request = GossipMessage.request([GossipRequest(author: keys[1], from: 5, count: 100)])
        #expect(try GossipMessage.decode(request.encoded) == request)
        let since = GossipMessage.clockSince(base: ClockDigest(VectorClock([keys[2]: 7])), entries: [Dependency(author: keys[3], sequence: 0)])
        #expect(try GossipMessage.decode(since.encoded) == since)
        #expect(since.encoded.count == 1 + ClockDigest.size + 1 + 33)
        #expect(GossipMessage.fullClockWanted.encoded == [6])
        let stored = GossipMessage.stored([Dependency(author: keys[4], sequence: 12)])
        #expect(try GossipMessage.decode(stored.encoded) == stored)
        #expect(try GossipMessage.decode([6]) == .fullClockWanted)
    }

    @Test("batches: at most batchBytes of envelopes each (a 256-envelope batch of the largest bodies fits the limit once split), order kept")
    func batches() throws {
        let a = try Author()
        let big = try (1...256).map { i in
            CarriedEnvelope(hops: 0, envelope: try a.envelope(1, body: [UInt8](repeating: UInt8(i & 0xFF), count: Envelope.maximumBody)))
        }
        // Unsplit, it is a message no receiver takes.
        #expect(GossipMessage.envelopes(big).encoded.count > GossipMessage.maximumSize)
        let parts = GossipMessage.batches(big)
        #expect(parts.count > 1)
        #expect(parts.flatMap { $0 } == big)
        for part in parts {
            let encoded = GossipMessage.envelopes(part).encoded
            #expect(encoded.count <= GossipMessage.batchBytes + 16 && encoded.count <= GossipMessage.maximumSize)
            #expect(try GossipMessage.decode(encoded) == .envelopes(part))
        }
        // At the byte limit exactly: one batch; one byte less: two.
        let two = Array(big.prefix(2))
        let exact = two.reduce(0) { $0 + 5 + $1.envelope.encoded.count }
        #expect(GossipMessage.batches(two, maxBytes: exact).count == 1)
        #expect(GossipMessage.batches(two, maxBytes: exact - 1).count == 2)
        // An envelope larger than the limit still goes, alone.
        #expect(GossipMessage.batches(two, maxBytes: 10).map(\.count) == [1, 1])
        // Small envelopes: the count limit applies.
        let small = try (1...(GossipMessage.maximumBatch + 1)).map { _ in CarriedEnvelope(hops: 0, envelope: try a.envelope()) }
        #expect(GossipMessage.batches(small).map(\.count) == [GossipMessage.maximumBatch, 1])
        #expect(GossipMessage.batches([]).isEmpty)
    }

    @Test("count(beyond:): how many envelopes one clock holds that the other lacks")
    func countBeyond() throws {
        let keys = try (0..<3).map { _ in try SigningKey.generate().publicKey }
        let ours = VectorClock([keys[0]: 10, keys[1]: 3])
        let theirs = VectorClock([keys[0]: 4, keys[1]: 5, keys[2]: 7])
        #expect(ours.count(beyond: theirs) == 6)
        #expect(theirs.count(beyond: ours) == 2 + 7)
        #expect(ours.count(beyond: ours) == 0 && ours.count(beyond: VectorClock()) == 13)
    }

    @Test("sums over clocks a peer declared saturate instead of trapping (issue 13, finding 1)")
    func saturatingSums() throws {
        let keys = try (0..<3).map { _ in try SigningKey.generate().publicKey }
        let huge = VectorClock([keys[0]: 1 << 63, keys[1]: 1 << 63, keys[2]: .max])
        #expect(huge.count(beyond: VectorClock()) == .max)
        #expect(huge.total == .max)
        #expect(VectorClock([keys[0]: 2, keys[1]: 3]).total == 5)
        #expect(UInt64.max.saturatingAdd(1) == .max && UInt64(2).saturatingAdd(3) == 5)
    }

    @Test("sequence numbers from the network: Envelope.maximumSequence is taken, one past it is refused where it is decoded (clocks, requests, envelopes)")
    func sequenceBound() throws {
        let key = try SigningKey.generate()
        let limit = Envelope.maximumSequence
        for message in [GossipMessage.clock(entries: [Dependency(author: key.publicKey, sequence: limit)], full: true),
                        .clockSince(base: ClockDigest(VectorClock()), entries: [Dependency(author: key.publicKey, sequence: limit)]),
                        .stored([Dependency(author: key.publicKey, sequence: limit)]),
                        .request([GossipRequest(author: key.publicKey, from: limit, count: limit)])] {
            #expect(try GossipMessage.decode(message.encoded) == message)
        }
        for message in [GossipMessage.clock(entries: [Dependency(author: key.publicKey, sequence: limit + 1)], full: true),
                        .clock(entries: [Dependency(author: key.publicKey, sequence: 1 << 63)], full: false),
                        .stored([Dependency(author: key.publicKey, sequence: .max)]),
                        .request([GossipRequest(author: key.publicKey, from: 1, count: limit + 1)])] {
            #expect(throws: EnvelopeError.self) { try GossipMessage.decode(message.encoded) }
        }
        // An envelope at the limit is carried; one past it (its own sequence or a dependency's) is refused.
        let room = RoomID.publicRoom(.general, network: NetworkKey.derived(fromName: "t"))
        func carried(_ sequence: UInt64, dependency: UInt64? = nil) throws -> GossipMessage {
            let other = try SigningKey.generate().publicKey
            let e = try Envelope.sign(by: key, sequence: sequence, previous: try MessageID(bytes: [UInt8](repeating: 1, count: 32)),
                                      dependencies: dependency.map { [Dependency(author: other, sequence: $0)] } ?? [],
                                      timestamp: 1, room: room, kind: .text, body: [1])
            return .envelopes([CarriedEnvelope(hops: 0, envelope: e)])
        }
        #expect(throws: Never.self) { try GossipMessage.decode(try carried(limit, dependency: limit).encoded) }
        #expect(throws: EnvelopeError.sequenceTooLarge(limit + 1, limit: limit)) { try GossipMessage.decode(try carried(limit + 1).encoded) }
        #expect(throws: EnvelopeError.sequenceTooLarge(1 << 63, limit: limit)) { try GossipMessage.decode(try carried(2, dependency: 1 << 63).encoded) }
    }

    @Test("clock digests: equal clocks, equal digests; any change, another digest")
    func digests() throws {
        let keys = try (0..<3).map { _ in try SigningKey.generate().publicKey }
        let clock = VectorClock([keys[0]: 1, keys[1]: 2])
        #expect(ClockDigest(clock) == ClockDigest(VectorClock([keys[1]: 2, keys[0]: 1, keys[2]: 0])))
        #expect(ClockDigest(clock) != ClockDigest(VectorClock([keys[0]: 1, keys[1]: 3])))
        #expect(ClockDigest(clock) != ClockDigest(VectorClock([keys[0]: 1])))
        #expect(ClockDigest(VectorClock()).bytes.count == ClockDigest.size)
    }

    @Test("first contact costs at most ~40 bytes per author")
    func clockSize() throws {
        let entries = try (0..<1000).map { i in Dependency(author: try SigningKey.generate().publicKey, sequence: UInt64(i * 37 + 1)) }
        let size = GossipMessage.clock(entries: entries.sorted { $0.author < $1.author }, full: true).encoded.count
        #expect(size <= 1000 * 40 + 8, "\(size) bytes for 1000 authors")
    }

    @Test("limits at and one past; non-canonical forms; trailing bytes; unknown types")
    func limits() throws {
        let keys = try (0...GossipMessage.maximumClockEntries).map { _ in try SigningKey.generate().publicKey }.sorted()
        let atLimit = GossipMessage.clock(entries: keys.prefix(GossipMessage.maximumClockEntries).map { Dependency(author: $0, sequence: 1) }, full: true)
        #expect(try GossipMessage.decode(atLimit.encoded) == atLimit)
        let over = GossipMessage.clock(entries: keys.map { Dependency(author: $0, sequence: 1) }, full: true)
        #expect(throws: EnvelopeError.tooManyDependencies(count: keys.count, limit: GossipMessage.maximumClockEntries)) {
            try GossipMessage.decode(over.encoded)
        }
        // Authors out of order.
        var unsorted: [UInt8] = [1, 2] + keys[1].bytes + [1] + keys[0].bytes + [1]
        #expect(throws: EnvelopeError.dependenciesNotCanonical) { try GossipMessage.decode(unsorted) }
        // An overlong varint (1 written as 0x81 0x00).
        unsorted = [1, 1] + keys[0].bytes + [0x81, 0x00]
        #expect(throws: EnvelopeError.dependenciesNotCanonical) { try GossipMessage.decode(unsorted) }
        #expect(throws: EnvelopeError.trailingBytes(count: 1)) { try GossipMessage.decode(GossipMessage.request([]).encoded + [0]) }
        #expect(throws: EnvelopeError.unknownKind(18)) { try GossipMessage.decode([18, 0]) }
        #expect(throws: EnvelopeError.truncated(field: "message type")) { try GossipMessage.decode([]) }
        #expect(throws: EnvelopeError.trailingBytes(count: 1)) { try GossipMessage.decode([6, 0]) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode([5] + [UInt8](repeating: 0, count: 15)) }
        // A batch claiming more envelopes than allowed is refused before reading them.
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode([3, 0x81, 0x08]) }
    }

    @Test("chunking: messages larger than one link message are split and joined; the size limit holds")
    func chunks() throws {
        let message = (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }
        let parts = GossipChunker.chunks(message)
        #expect(parts.count == 4)
        #expect(parts.allSatisfy { $0.count <= LinkSession.maximumPlaintext })
        var joiner = GossipChunker()
        var result: [UInt8]?
        for p in parts { result = try joiner.add(p) }
        #expect(result == message)
        #expect(GossipChunker.chunks([]) == [[0]])
        var flood = GossipChunker()
        let big = [UInt8](repeating: 1, count: GossipChunker.chunkPayload + 1)
        #expect(throws: EnvelopeError.self) {
            for _ in 0..<(GossipMessage.maximumSize / GossipChunker.chunkPayload + 2) { _ = try flood.add(big) }
        }
    }
}
