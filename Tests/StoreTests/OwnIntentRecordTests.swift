import Gossip
import Store
import Testing

/// The own-intent file's bytes (`OwnIntentRecord`): what the node writes
/// before a send and reads back at the next start, and what the benchmark
/// times. Built here by hand from its description, not with the encoder.
@Suite("The own-intent record")
struct OwnIntentRecordTests {
    static func byHand(_ body: [UInt8], length: Int? = nil) -> [UInt8] {
        let n = UInt32(length ?? body.count)
        return Array("PNOI".utf8) + [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] + body
    }

    @Test("an envelope's record is PNOI, its length big endian and its bytes; read back whole, and with the zeros of a longer earlier record after it")
    func roundTrip() throws {
        let e = try ChainAuthor().next("sent before its row")
        let record = OwnIntentRecord.encode(e)
        #expect(record == Self.byHand(e.encoded))
        #expect(OwnIntentRecord.envelopeBytes(record[...]).map(Array.init) == e.encoded)
        let longer = record + [UInt8](repeating: 0, count: 300)
        #expect(OwnIntentRecord.envelopeBytes(longer[...]).map(Array.init) == e.encoded)
        #expect(try Envelope.decode(Array(OwnIntentRecord.envelopeBytes(longer[...]) ?? []), verification: .signature) == e)
    }

    @Test("a length of Envelope.maximumSize is read, one past it is not; a record one byte short, another magic, or less than the header is nothing")
    func limits() {
        let largest = [UInt8](repeating: 7, count: Envelope.maximumSize)
        #expect(OwnIntentRecord.envelopeBytes(Self.byHand(largest)[...])?.count == Envelope.maximumSize)
        #expect(OwnIntentRecord.maximumCount == 8 + Envelope.maximumSize)
        let onePast = [UInt8](repeating: 7, count: Envelope.maximumSize + 1)
        #expect(OwnIntentRecord.envelopeBytes(Self.byHand(onePast)[...]) == nil)
        #expect(OwnIntentRecord.envelopeBytes(Self.byHand([1, 2, 3], length: 4)[...]) == nil)
        #expect(OwnIntentRecord.envelopeBytes((Array("PNOJ".utf8) + [0, 0, 0, 1, 9])[...]) == nil)
        #expect(OwnIntentRecord.envelopeBytes(Array("PNOI".utf8)[...]) == nil)
        #expect(OwnIntentRecord.envelopeBytes([][...]) == nil)
        #expect(OwnIntentRecord.envelopeBytes(Self.byHand([])[...])?.isEmpty == true)
    }
}
