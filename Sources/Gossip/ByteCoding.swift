/// Big-endian writer for the canonical binary encodings (envelopes, clocks).
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) } }
    mutating func raw(_ v: some Collection<UInt8>) { bytes.append(contentsOf: v) }
}

/// Big-endian reader that never reads past the end: each read names the
/// field, so a short input says what was missing.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ n: Int, _ field: String) throws(EnvelopeError) -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else { throw .truncated(field: field) }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }

    mutating func u8(_ field: String) throws(EnvelopeError) -> UInt8 {
        try take(1, field).first ?? 0
    }

    mutating func u16(_ field: String) throws(EnvelopeError) -> UInt16 {
        try take(2, field).reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func u32(_ field: String) throws(EnvelopeError) -> UInt32 {
        try take(4, field).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64(_ field: String) throws(EnvelopeError) -> UInt64 {
        try take(8, field).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
