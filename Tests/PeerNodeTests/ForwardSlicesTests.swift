import Crypto
import Gossip
@testable import PeerNode
import Testing

/// A forward cut into slices of at most `NetworkNode.forwardSliceBytes`
/// of envelopes, each sealed for the links and written before the next.
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

    /// Envelopes whose encoded sizes add up to exactly `total` bytes: all of
    /// one size but the last, which makes up the rest.
    func batch(totalling total: Int, each body: Int = 700) throws -> [CarriedEnvelope] {
        var out: [CarriedEnvelope] = []
        var bytes = 0
        while true {
            let next = try envelope(body: body)
            if bytes + 2 * next.envelope.encoded.count > total { break }
            out.append(next)
            bytes += next.envelope.encoded.count
        }
        // The last: the body that encodes to exactly what is left (its length's varint may take a byte more).
        let overhead = try envelope(body: body).envelope.encoded.count - body
        for size in stride(from: total - bytes - overhead, through: total - bytes - overhead - 4, by: -1) {
            let last = try envelope(body: size)
            if bytes + last.envelope.encoded.count == total { return out + [last] }
        }
        Issue.record("no body size makes \(total) bytes")
        return out
    }

    func bytes(_ batch: [CarriedEnvelope]) -> Int { batch.reduce(0) { $0 + $1.envelope.encoded.count } }

    @Test("a live turn's envelopes (40 of a relay benchmark's size) go as one slice; none for nothing")
    func liveTurn() throws {
        let turn = try (0..<40).map { _ in try envelope(body: 512) }
        #expect(NetworkNode.forwardSlices(turn) == [0..<40])
        #expect(NetworkNode.forwardSlices([]).isEmpty)
    }

    @Test("exactly forwardSliceBytes of envelopes is one slice; a byte more makes two, the last envelope in the second")
    func atTheLimit() throws {
        let limit = NetworkNode.forwardSliceBytes
        let exact = try batch(totalling: limit)
        #expect(bytes(exact) == limit)
        #expect(NetworkNode.forwardSlices(exact) == [0..<exact.count])
        let over = try batch(totalling: limit + 1)
        #expect(bytes(over) == limit + 1)
        #expect(NetworkNode.forwardSlices(over) == [0..<(over.count - 1), (over.count - 1)..<over.count])
    }

    @Test("an envelope larger than a slice goes alone, between the others; a backlog is cut in order, every envelope once, no slice past the limit but a lone one")
    func largeAndBacklog() throws {
        let small = try envelope(body: 100)
        let large = try envelope(body: 65_500)
        #expect(large.envelope.encoded.count > NetworkNode.forwardSliceBytes)
        #expect(NetworkNode.forwardSlices([small, large, small]) == [0..<1, 1..<2, 2..<3])

        let backlog = try (0..<6_500).map { i in try envelope(body: 300 + i % 700) }
        let slices = NetworkNode.forwardSlices(backlog)
        #expect(slices.first?.lowerBound == 0 && slices.last?.upperBound == backlog.count)
        #expect(zip(slices, slices.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        #expect(slices.allSatisfy { !$0.isEmpty && bytes(Array(backlog[$0])) <= NetworkNode.forwardSliceBytes })
        // Each slice as full as the next envelope allows.
        #expect(zip(slices, slices.dropFirst()).allSatisfy {
            bytes(Array(backlog[$0])) + backlog[$1.lowerBound].envelope.encoded.count > NetworkNode.forwardSliceBytes
        })
    }
}
