import Crypto
import Gossip
@testable import NodeCore
import Testing

/// The fan-out's encode-once: a batch is recognised by its storage, never
/// by equal contents, and its parts are what `send` made per link.
@Suite("EncodedBatch: one encoding for every link a batch goes to")
struct EncodedBatchTests {
    static func batch(_ count: Int, bodyBytes: Int) throws -> [CarriedEnvelope] {
        let author = try SigningKey.generate()
        let room = RoomID.publicRoom(.general, network: .derived(fromName: "encoded"))
        var previous = MessageID.zero
        return try (1...count).map { sequence in
            let e = try Envelope.sign(by: author, sequence: UInt64(sequence), previous: previous, dependencies: [], timestamp: 1_000,
                                      room: room, kind: .text, body: [UInt8](repeating: 0x61, count: bodyBytes))
            previous = e.id
            return CarriedEnvelope(hops: 1, envelope: e)
        }
    }

    @Test("the same array is held; an equal copy made anew, a slice or another count is not")
    func identity() throws {
        let envelopes = try Self.batch(4, bodyBytes: 10)
        let encoded = EncodedBatch(envelopes)
        let shared = envelopes
        #expect(encoded.holds(envelopes) && encoded.holds(shared))
        #expect(!encoded.holds(Array(envelopes.map { $0 })), "equal contents in new storage")
        #expect(!encoded.holds(Array(envelopes.prefix(3))))
        var changed = envelopes
        changed[0].hops = 9
        #expect(!encoded.holds(changed), "a changed copy has storage of its own")
    }

    @Test("parts: split at GossipMessage.batchBytes as send splits, each part's chunks joining to its encoding")
    func parts() throws {
        // 20 envelopes of 60 KB: past batchBytes (1 MiB) into a second part.
        let envelopes = try Self.batch(20, bodyBytes: 60_000)
        let encoded = EncodedBatch(envelopes)
        let expected = GossipMessage.batches(envelopes)
        #expect(expected.count == 2 && encoded.parts.map(\.envelopes) == expected.map(\.count))
        for (part, batch) in zip(encoded.parts, expected) {
            var joiner = GossipChunker()
            var whole: [UInt8]?
            for chunk in part.chunks { whole = try joiner.add(chunk) ?? whole }
            #expect(whole == GossipMessage.envelopes(batch).encoded)
        }
    }
}
