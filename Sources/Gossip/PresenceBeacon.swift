import Crypto

/// "This device is online (or away, or gone) for the next `lifetime`
/// seconds" (docs/PROTOCOL.md §10, "Presence"): a link message (type 17,
/// link version 9 on), never stored or put in any history. Signed by the
/// device, so every node floods it once to its other links and the whole
/// network knows who is online, not only a node's overlay neighbours.
public struct PresenceBeacon: Equatable, Sendable {
    public enum State: UInt8, Sendable, CaseIterable {
        /// Running, and a person may be at it.
        case online = 0
        /// Running; the person said they are away (`/away`), with a reason.
        case away = 1
        /// Stopped (`/quit`): what it says stands until the beacon expires.
        case gone = 2
        /// A relay: stores and forwards, nobody chats at it.
        case relay = 3

        public var name: String {
            switch self {
            case .online: "online"
            case .away: "away"
            case .gone: "gone"
            case .relay: "relay"
            }
        }
    }

    /// The longest a beacon says anything for, in seconds.
    public static let maximumLifetime: UInt16 = 600
    /// Bytes of the nick it carries at most (a relay's name; 0: none).
    public static let maximumNickBytes = 64
    /// Bytes of the reason (`/away lunch`, `/quit going home`) at most.
    public static let maximumReasonBytes = 160
    /// Bytes after the message type at most.
    public static let maximumSize = 32 + 8 + 1 + 2 + 1 + maximumNickBytes + 1 + maximumReasonBytes + Signature.byteCount

    public let device: PublicKey
    /// When it was signed: milliseconds since 1970. A newer beacon of the
    /// same device replaces an older one; never the other way round.
    public let time: UInt64
    public let state: State
    /// Seconds it holds for after `time`.
    public let lifetime: UInt16
    /// UTF-8, at most `maximumNickBytes` (empty: none).
    public let nick: [UInt8]
    /// UTF-8, at most `maximumReasonBytes` (empty: none).
    public let reason: [UInt8]
    public let signature: [UInt8]

    /// A beacon of ours; nick and reason are cut to their bounds on a character's edge.
    public static func sign(by key: SigningKey, time: UInt64, state: State, lifetime: UInt16, nick: String, reason: String) -> PresenceBeacon {
        let nick = Self.cut(nick, to: maximumNickBytes), reason = Self.cut(reason, to: maximumReasonBytes)
        let lifetime = min(max(1, lifetime), maximumLifetime)
        let signed = signedBytes(device: key.publicKey, time: time, state: state, lifetime: lifetime, nick: nick, reason: reason)
        let signature = signed.withUnsafeBytes { key.sign($0, context: .presence) }
        return PresenceBeacon(device: key.publicKey, time: time, state: state, lifetime: lifetime, nick: nick, reason: reason, signature: signature)
    }

    /// Whether the device signed it (an Ed25519 verification: check it last).
    public var isSigned: Bool {
        Self.signedBytes(device: device, time: time, state: state, lifetime: lifetime, nick: nick, reason: reason).withUnsafeBytes {
            (try? device.verify(signature: signature, message: $0, context: .presence)) != nil
        }
    }

    /// When it stops holding: milliseconds since 1970.
    public var expires: UInt64 { time &+ UInt64(lifetime) * 1000 }

    /// `text`'s UTF-8, at most `limit` bytes, cut before a character that would not fit.
    static func cut(_ text: String, to limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        for c in text.unicodeScalars {
            let bytes = Array(String(c).utf8)
            guard out.count + bytes.count <= limit else { break }
            out += bytes
        }
        return out
    }

    private static func signedBytes(device: PublicKey, time: UInt64, state: State, lifetime: UInt16, nick: [UInt8], reason: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: maximumSize)
        w.raw(device.bytes)
        w.u64(time)
        w.u8(state.rawValue)
        w.u16(lifetime)
        w.u8(UInt8(nick.count))
        w.raw(nick)
        w.u8(UInt8(reason.count))
        w.raw(reason)
        return w.bytes
    }

    func write(_ w: inout ByteWriter) {
        w.raw(Self.signedBytes(device: device, time: time, state: state, lifetime: lifetime, nick: nick, reason: reason))
        w.raw(signature)
    }

    static func read(_ r: inout ByteReader) throws(EnvelopeError) -> PresenceBeacon {
        let device = try GossipMessage.key(try r.take(32, "presence device"))
        let time = try r.u64("presence time")
        let stateByte = try r.u8("presence state")
        guard let state = State(rawValue: stateByte) else { throw .badValue(field: "presence state", UInt64(stateByte)) }
        let lifetime = try r.u16("presence lifetime")
        guard lifetime >= 1, lifetime <= maximumLifetime else { throw .badValue(field: "presence lifetime", UInt64(lifetime)) }
        let nick = try text(&r, limit: maximumNickBytes, "presence nick")
        let reason = try text(&r, limit: maximumReasonBytes, "presence reason")
        let signature = Array(try r.take(Signature.byteCount, "presence signature"))
        return PresenceBeacon(device: device, time: time, state: state, lifetime: lifetime, nick: nick, reason: reason, signature: signature)
    }

    /// A length byte and that many bytes of valid UTF-8, at most `limit`.
    private static func text(_ r: inout ByteReader, limit: Int, _ field: String) throws(EnvelopeError) -> [UInt8] {
        let count = try r.u8(field)
        guard Int(count) <= limit else { throw .badValue(field: field, UInt64(count)) }
        let bytes = Array(try r.take(Int(count), field))
        guard String(validating: bytes, as: UTF8.self) != nil else { throw .badValue(field: field, UInt64(count)) }
        return bytes
    }
}
