import Crypto
import Gossip
@testable import PeerNode
import Testing

/// A forward cut into slices of at most `NetworkNode.forwardSliceBytes`
/// of envelopes, each sealed for the links and written before the next:
/// `GossipMessage.batches` at that size, which counts an envelope as a
/// message of envelopes carries it (its bytes and 5 of framing).
@Suite("A fan-out in slices")
struct ForwardSlicesTests {
    let author: SigningKey
    let room = RoomID.random()

    init() throws { author = try SigningKey.generate() }

    /// An envelope whose body is `size` bytes.
    func envelope(body size: Int) throws -> CarriedEnvelope {
        let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1,
                                  room: room, kind: .text, body: [UInt8](repeating: 7, count: size))
        return CarriedEnvelope(hops: 0, envelope: e)
    }

    /// The bytes `GossipMessage.batches` counts for an envelope.
    func counted(_ c: CarriedEnvelope) -> Int { 5 + c.envelope.encoded.count }

    /// The forward's slices, as index ranges of `batch`.
    func slices(_ batch: [CarriedEnvelope]) -> [Range<Int>] {
        var start = 0
        return GossipMessage.batches(batch, maxBytes: NetworkNode.forwardSliceBytes).map { slice in
            defer { start += slice.count }
            return start..<(start + slice.count)
        }
    }

    /// Envelopes whose counted sizes add up to exactly `total` bytes: all of
    /// one size but the last, which makes up the rest.
    func batch(totalling total: Int, each body: Int = 700) throws -> [CarriedEnvelope] {
        var out: [CarriedEnvelope] = []
        var bytes = 0
        while true {
            let next = try envelope(body: body)
            if bytes + 2 * counted(next) > total { break }
            out.append(next)
            bytes += counted(next)
        }
        // The last: the body that encodes to exactly what is left (its length's varint may take a byte more).
        let overhead = counted(try envelope(body: body)) - body
        for size in stride(from: total - bytes - overhead, through: total - bytes - overhead - 4, by: -1) {
            let last = try envelope(body: size)
            if bytes + counted(last) == total { return out + [last] }
        }
        Issue.record("no body size makes \(total) bytes")
        return out
    }

    func bytes(_ batch: [CarriedEnvelope]) -> Int { batch.reduce(0) { $0 + counted($1) } }

    @Test("a live turn's envelopes (40 of a relay benchmark's size) go as one slice; none for nothing")
    func liveTurn() throws {
        let turn = try (0..<40).map { _ in try envelope(body: 512) }
        #expect(slices(turn) == [0..<40])
        #expect(slices([]).isEmpty)
    }

    @Test("exactly forwardSliceBytes of envelopes is one slice; a byte more makes two, the last envelope in the second")
    func atTheLimit() throws {
        let limit = NetworkNode.forwardSliceBytes
        let exact = try batch(totalling: limit)
        #expect(bytes(exact) == limit)
        #expect(slices(exact) == [0..<exact.count])
        let over = try batch(totalling: limit + 1)
        #expect(bytes(over) == limit + 1)
        #expect(slices(over) == [0..<(over.count - 1), (over.count - 1)..<over.count])
    }

    @Test("an envelope larger than a slice goes alone, between the others; a backlog is cut in order, every envelope once, no slice past the limit but a lone one")
    func largeAndBacklog() throws {
        let small = try envelope(body: 100)
        let large = try envelope(body: 65_500)
        #expect(counted(large) > NetworkNode.forwardSliceBytes)
        #expect(slices([small, large, small]) == [0..<1, 1..<2, 2..<3])

        let backlog = try (0..<6_500).map { i in try envelope(body: 300 + i % 700) }
        let slices = slices(backlog)
        #expect(slices.first?.lowerBound == 0 && slices.last?.upperBound == backlog.count)
        #expect(zip(slices, slices.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        #expect(slices.allSatisfy { !$0.isEmpty && bytes(Array(backlog[$0])) <= NetworkNode.forwardSliceBytes })
        // Each slice as full as the next envelope allows.
        #expect(zip(slices, slices.dropFirst()).allSatisfy {
            bytes(Array(backlog[$0])) + counted(backlog[$1.lowerBound]) > NetworkNode.forwardSliceBytes
        })
    }
}
