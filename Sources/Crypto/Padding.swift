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
    /// when the padding is malformed (no 0x80 marker, or a non-zero byte after it).
    public static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        guard !padded.isEmpty else { return nil }
        var length = 0
        let result = padded.withUnsafeBufferPointer { b in
            sodium_unpad(&length, b.baseAddress!, b.count, b.count)
        }
        guard result == 0, length < padded.count else { return nil }
        return Array(padded[0..<length])
    }
}
