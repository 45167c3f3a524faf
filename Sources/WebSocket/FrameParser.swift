/// Reads frames (RFC 6455 §5.2) from the bytes received so far. Pure: bytes
/// in, a frame (or "need more") or a typed error out. Every limit is checked
/// as soon as the header that declares it is complete, before any of the
/// payload is waited for.
struct FrameParser {
    /// Servers require masked frames, clients unmasked ones (§5.3).
    let expectMasked: Bool

    /// The frame at the start of `bytes` and how many bytes it used, or nil
    /// when more bytes are needed. `allowance` is how many payload bytes the
    /// message may still grow by.
    func parse(_ bytes: UnsafeRawBufferPointer, allowance: Int) throws(WebSocketError) -> (frame: Frame, consumed: Int)? {
        guard bytes.count >= 2 else { return nil }
        let b0 = bytes[0], b1 = bytes[1]
        // §5.2: RSV1-3 MUST be 0 unless an extension is negotiated; we negotiate none.
        guard b0 & 0x70 == 0 else { throw .reservedBitsSet }
        guard let opcode = Opcode(rawValue: b0 & 0x0F) else { throw .unknownOpcode(b0 & 0x0F) }
        let fin = b0 & 0x80 != 0
        let masked = b1 & 0x80 != 0
        // §5.1: a server MUST close on an unmasked client frame; a client on a masked server frame.
        guard masked == expectMasked else { throw .maskingViolation(expectedMasked: expectMasked) }
        var length = UInt64(b1 & 0x7F)
        var offset = 2
        if opcode.isControl {
            // §5.5: control frames are never fragmented and carry at most 125 bytes.
            guard fin, length <= 125 else { throw .badControlFrame }
        } else if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(bytes[i]) }
            // §5.2: the most significant bit of a 64-bit length MUST be 0.
            guard length & (1 << 63) == 0 else { throw .lengthOutOfRange }
            offset = 10
        }
        if !opcode.isControl && length > UInt64(max(0, allowance)) {
            throw .messageTooBig(size: length, limit: allowance)
        }
        let maskOffset = offset
        if masked { offset += 4 }
        let total = offset + Int(length)
        guard bytes.count >= total else { return nil }
        var payload = Array(bytes[offset..<total])
        if masked {
            let key = (bytes[maskOffset], bytes[maskOffset + 1], bytes[maskOffset + 2], bytes[maskOffset + 3])
            payload.withUnsafeMutableBytes { Masking.apply(key: key, to: $0, offset: 0) }
        }
        return (Frame(fin: fin, opcode: opcode, payload: payload), total)
    }
}
