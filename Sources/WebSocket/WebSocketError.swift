/// Everything that ends a WebSocket connection from our side, each mapped to
/// the close code sent for it (swift-nio's NIOWebSocketError habit).
public enum WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// §5.2: a reserved bit set without an extension that defines it.
    case reservedBitsSet
    /// §5.2: an opcode this protocol does not define.
    case unknownOpcode(UInt8)
    /// §5.3: a client frame without mask, or a server frame with one.
    case maskingViolation(expectedMasked: Bool)
    /// §5.5: a control frame with FIN clear or over 125 bytes.
    case badControlFrame
    /// §5.2: a 64-bit length with the most significant bit set.
    case lengthOutOfRange
    /// §5.4: a continuation with nothing to continue, or a new message inside one.
    case badFragmentation
    /// A declared frame or a message over the configured limit (1009).
    case messageTooBig(size: UInt64, limit: Int)
    /// More fragments in one message than allowed (1009).
    case tooManyFragments(limit: Int)
    /// §8.1: a text message (or close reason) that is not UTF-8 (1007).
    case invalidUTF8
    /// §5.5.1: a close frame with a 1-byte payload or a code not allowed on the wire.
    case badClosePayload
    /// Text where only binary is accepted (1003), if the application says so.
    case unsupportedData

    public var closeCode: CloseCode {
        switch self {
        case .reservedBitsSet, .unknownOpcode, .maskingViolation, .badControlFrame, .lengthOutOfRange,
             .badFragmentation, .badClosePayload:
            return .protocolError
        case .messageTooBig, .tooManyFragments: return .messageTooBig
        case .invalidUTF8: return .invalidPayload
        case .unsupportedData: return .unsupportedData
        }
    }

    public var description: String {
        switch self {
        case .reservedBitsSet: return "reserved bits set"
        case let .unknownOpcode(o): return "unknown opcode \(o)"
        case let .maskingViolation(expected): return expected ? "unmasked client frame" : "masked server frame"
        case .badControlFrame: return "fragmented or oversized control frame"
        case .lengthOutOfRange: return "frame length out of range"
        case .badFragmentation: return "bad fragmentation"
        case let .messageTooBig(size, limit): return "message of \(size) bytes exceeds \(limit)"
        case let .tooManyFragments(limit): return "more than \(limit) fragments"
        case .invalidUTF8: return "invalid UTF-8"
        case .badClosePayload: return "bad close frame"
        case .unsupportedData: return "unsupported data type"
        }
    }
}
