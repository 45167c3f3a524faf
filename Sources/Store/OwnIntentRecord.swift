import Gossip

/// The bytes of the own-intent file (docs/DECISIONS.md, "Own posts are
/// sent before their row"): the four bytes `PNOI`, the envelope's length
/// (4 bytes, big endian, at most `Envelope.maximumSize`), the envelope as on
/// the wire. Pure: the node's `OwnIntent` writes and reads the file with it,
/// and `peernode-bench hop-ceiling` times the same bytes' write.
public enum OwnIntentRecord {
    public static let magic: [UInt8] = Array("PNOI".utf8)
    /// The magic and the length before the envelope.
    public static let headerCount = magic.count + 4
    /// The largest record: a header and the largest envelope.
    public static let maximumCount = headerCount + Envelope.maximumSize

    /// The record of `e`.
    public static func encode(_ e: Envelope) -> [UInt8] {
        let count = UInt32(e.encoded.count)
        return magic + [UInt8(count >> 24), UInt8((count >> 16) & 0xff), UInt8((count >> 8) & 0xff), UInt8(count & 0xff)] + e.encoded
    }

    /// The envelope's bytes in `bytes` (what a read of the file gave, any
    /// trailing bytes after it ignored), or nil where they are not a whole
    /// record: another magic, a length past `Envelope.maximumSize`, or fewer
    /// bytes than the length says. Its signature is the reader's to check.
    public static func envelopeBytes(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard bytes.count >= headerCount, bytes.prefix(magic.count).elementsEqual(magic) else { return nil }
        let start = bytes.startIndex
        let length = bytes[(start + magic.count)..<(start + headerCount)].reduce(0) { $0 << 8 | Int($1) }
        guard length <= Envelope.maximumSize, bytes.count >= headerCount + length else { return nil }
        return bytes[(start + headerCount)..<(start + headerCount + length)]
    }
}
