import CSodium

/// ISO/IEC 7816-4 padding through libsodium (`sodium_pad`, `sodium_unpad`):
/// the data, one 0x80 byte, then zeros up to the size asked for.
public enum Padding {
    /// `data` padded to exactly `size` bytes; nil when `size` is not larger
    /// than `data` (the 0x80 marker always needs a byte).
    public static func pad(_ data: [UInt8], to size: Int) -> [UInt8]? {
        guard size > data.count else { return nil }
        var buffer = data + [UInt8](repeating: 0, count: size - data.count)
        var padded = 0
        let result = buffer.withUnsafeMutableBufferPointer { b in
            sodium_pad(&padded, b.baseAddress!, data.count, size, size)
        }
        guard result == 0, padded == size else { return nil }
        return buffer
    }

    /// The data before the padding of a buffer padded to its own length; nil
    /// when the padding is malformed (no 0x80 marker, or a non-zero byte
    /// after it): the marker is the last byte that is not zero.
    ///
    /// Not libsodium's `sodium_unpad`, which answers the same: it takes time
    /// independent of the length, through a `volatile` byte loop over the
    /// whole buffer, and was 6 % of a catch-up loop's time (docs/SCALE.md).
    /// Only a body that opened under its key (so a member's, authenticated)
    /// is unpadded, and everything done with it after (parsing, showing,
    /// storing) takes time by its length anyway: the constant time bought
    /// nothing. `PaddingTests` holds the two to the same answers.
    public static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        padded.withUnsafeBufferPointer { b -> [UInt8]? in
            var end = b.count
            while end > 0, b[end - 1] == 0 { end -= 1 }
            guard end > 0, b[end - 1] == 0x80 else { return nil }
            return Array(b[0..<(end - 1)])
        }
    }
}
