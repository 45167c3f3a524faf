/// RFC 6455 §5.2 opcodes.
public enum Opcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// §5.5: opcodes with the high bit set are control frames.
    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// One frame as it came off the wire, payload unmasked.
struct Frame: Equatable {
    var fin: Bool
    var opcode: Opcode
    var payload: [UInt8]
}

/// Close status codes (RFC 6455 §7.4.1) this implementation sends or reports.
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = CloseCode(rawValue: 1000)
    public static let goingAway = CloseCode(rawValue: 1001)
    public static let protocolError = CloseCode(rawValue: 1002)
    public static let unsupportedData = CloseCode(rawValue: 1003)
    /// Reported only, never sent (§7.4.1): the close frame had no status.
    public static let noStatus = CloseCode(rawValue: 1005)
    /// Reported only, never sent: the connection ended without a close frame.
    public static let abnormal = CloseCode(rawValue: 1006)
    public static let invalidPayload = CloseCode(rawValue: 1007)
    public static let policyViolation = CloseCode(rawValue: 1008)
    public static let messageTooBig = CloseCode(rawValue: 1009)
    public static let internalError = CloseCode(rawValue: 1011)
    /// The server is overloaded (a limit on clients): try again later (RFC 6455 §7.4.1, IANA registry).
    public static let tryAgainLater = CloseCode(rawValue: 1013)

    /// May this code appear in a close frame on the wire (§7.4.1, §7.4.2)?
    var isSendable: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014: return true
        case 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}

/// Builds frames (§5.2). Clients mask with a fresh key per frame (§5.3);
/// servers never mask.
struct FrameEncoder {
    /// Appends one frame to `out`.
    static func append(
        opcode: Opcode, fin: Bool = true, payload: UnsafeRawBufferPointer, maskingKey: UInt32?, to out: inout [UInt8]
    ) {
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        let n = payload.count
        if n <= 125 {
            out.append(maskBit | UInt8(n))
        } else if n <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(n >> 8))
            out.append(UInt8(n & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(n) >> UInt64(shift))) }
        }
        guard let key = maskingKey else {
            out.append(contentsOf: payload)
            return
        }
        let keyBytes = [UInt8(key >> 24), UInt8((key >> 16) & 0xFF), UInt8((key >> 8) & 0xFF), UInt8(key & 0xFF)]
        out.append(contentsOf: keyBytes)
        let start = out.count
        out.append(contentsOf: payload)
        out.withUnsafeMutableBytes { buffer in
            Masking.apply(key: keyBytes, to: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]), offset: 0)
        }
    }

    static func closePayload(_ code: CloseCode, reason: String) -> [UInt8] {
        // §5.5: control payloads are at most 125 bytes; the reason is cut on a
        // character boundary to fit.
        var reasonBytes = Array(reason.utf8)
        while reasonBytes.count > 123 || !UTF8Validator.isValid(reasonBytes) {
            reasonBytes.removeLast()
        }
        return [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + reasonBytes
    }
}

/// §5.3 masking: payload[i] ^= key[(i + offset) % 4], eight bytes at a time.
enum Masking {
    static func apply(key: [UInt8], to buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        apply(key: (key[0], key[1], key[2], key[3]), to: buffer, offset: offset)
    }

    static func apply(key: (UInt8, UInt8, UInt8, UInt8), to buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        guard buffer.count > 0, let base = buffer.baseAddress else { return }
        // The key rotated by `offset`, repeated to eight bytes (little-endian load order).
        let bytes = [key.0, key.1, key.2, key.3]
        var wide: UInt64 = 0
        for i in (0..<8).reversed() { wide = wide << 8 | UInt64(bytes[(i + offset) & 3]) }
        var i = 0
        while i + 8 <= buffer.count {
            let v = (base + i).loadUnaligned(as: UInt64.self)
            (base + i).storeBytes(of: v ^ wide, as: UInt64.self)
            i += 8
        }
        while i < buffer.count {
            let k = UInt8(truncatingIfNeeded: wide >> UInt64((i & 7) * 8))
            base.storeBytes(of: base.load(fromByteOffset: i, as: UInt8.self) ^ k, toByteOffset: i, as: UInt8.self)
            i += 1
        }
    }
}
