import Crypto

/// "`typer` is typing in `room`" (docs/PROTOCOL.md §10, "Typing"): a link
/// message (type 12), never stored or put in any history. Signed by the
/// typer, so a node one link further on (a relay between two LANs, a peer
/// past the overlay's link bound) can show it too: each node forwards a
/// notice it accepted at most `maximumForwards` times along the way.
public struct TypingNotice: Equatable, Sendable {
    /// Bytes after the message type: room, typer, time, forwards, signature.
    public static let size = RoomID.byteCount + 32 + 8 + 1 + Signature.byteCount
    /// How many nodes may pass a notice on: the typer's neighbours show it
    /// and pass it once more, and that is all.
    public static let maximumForwards: UInt8 = 1

    public let room: RoomID
    public let typer: PublicKey
    /// When it was signed: milliseconds since 1970.
    public let time: UInt64
    /// How many nodes passed it on so far (not signed: it only counts down
    /// what a node will still do, and a node refuses more than `maximumForwards`).
    public let forwards: UInt8
    public let signature: [UInt8]

    /// A notice of ours.
    public static func sign(room: RoomID, by key: SigningKey, time: UInt64) -> TypingNotice {
        let signed = signedBytes(room: room, typer: key.publicKey, time: time)
        let signature = signed.withUnsafeBytes { key.sign($0, context: .typing) }
        return TypingNotice(room: room, typer: key.publicKey, time: time, forwards: 0, signature: signature)
    }

    /// The same notice, passed on by one more node.
    public var forwarded: TypingNotice {
        TypingNotice(room: room, typer: typer, time: time, forwards: forwards &+ 1, signature: signature)
    }

    /// Whether the typer signed it (an Ed25519 verification: check it last).
    public var isSigned: Bool {
        Self.signedBytes(room: room, typer: typer, time: time).withUnsafeBytes {
            (try? typer.verify(signature: signature, message: $0, context: .typing)) != nil
        }
    }

    private static func signedBytes(room: RoomID, typer: PublicKey, time: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: RoomID.byteCount + 32 + 8)
        w.raw(room.bytes)
        w.raw(typer.bytes)
        w.u64(time)
        return w.bytes
    }

    func write(_ w: inout ByteWriter) {
        w.raw(room.bytes)
        w.raw(typer.bytes)
        w.u64(time)
        w.u8(forwards)
        w.raw(signature)
    }

    static func read(_ r: inout ByteReader) throws(EnvelopeError) -> TypingNotice {
        let room = try RoomID(bytes: try r.take(RoomID.byteCount, "typing room"))
        let typer = try GossipMessage.key(try r.take(32, "typer"))
        let time = try r.u64("typing time")
        let forwards = try r.u8("typing forwards")
        guard forwards <= maximumForwards else { throw .badValue(field: "typing forwards", UInt64(forwards)) }
        let signature = Array(try r.take(Signature.byteCount, "typing signature"))
        return TypingNotice(room: room, typer: typer, time: time, forwards: forwards, signature: signature)
    }
}
