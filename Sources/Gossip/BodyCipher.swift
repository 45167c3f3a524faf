import Crypto

/// Encrypts and decrypts version-1 envelope bodies (version 2:
/// `SealedBody`).
///
/// Room bodies: XChaCha20-Poly1305 under the room key, with associated data
/// "peernode/1 body" ‖ 0 ‖ author ‖ room id ‖ kind, so a body cannot be lifted
/// into another author's, room's or kind's envelope. Direct bodies: the
/// `DirectKey` box between the two parties.
public enum BodyCipher {
    static func associatedData(author: PublicKey, room: RoomID, kind: Kind) -> [UInt8] {
        Array("peernode/1 body".utf8) + [0] + author.bytes + room.bytes + [kind.rawValue]
    }

    public static func seal(
        _ plaintext: [UInt8], key: SymmetricKey, author: PublicKey, room: RoomID, kind: Kind, nonce: [UInt8]? = nil
    ) throws -> [UInt8] {
        guard plaintext.count <= Envelope.maximumPlaintextBody else {
            throw EnvelopeError.bodyTooLarge(size: plaintext.count, limit: Envelope.maximumPlaintextBody)
        }
        return try key.seal(plaintext, associatedData: associatedData(author: author, room: room, kind: kind), nonce: nonce)
    }

    /// Opens a version-1 room body (its kind is in clear).
    public static func open(_ envelope: Envelope, key: SymmetricKey) throws -> [UInt8] {
        guard let kind = envelope.clearKind else { throw EnvelopeError.unknownVersion(envelope.version) }
        return try key.open(envelope.body, associatedData: associatedData(author: envelope.author, room: envelope.room, kind: kind))
    }

    /// Opens a room body of either version under the room's key.
    public static func openAny(_ envelope: Envelope, key: SymmetricKey) throws -> OpenedBody {
        if let kind = envelope.clearKind { return OpenedBody(kind: kind, content: try open(envelope, key: key)) }
        return try SealedBody.open(envelope, key: key)
    }
}

/// An envelope as it travels: a hop count that relays increment, outside the
/// signature, then the envelope bytes. Changing `hops` changes neither the id
/// nor the signature's validity.
public struct CarriedEnvelope: Sendable, Equatable {
    /// A relay drops an envelope that has travelled this many hops.
    public static let maximumHops: UInt8 = 16

    public var hops: UInt8
    public let envelope: Envelope

    public init(hops: UInt8, envelope: Envelope) {
        self.hops = hops
        self.envelope = envelope
    }
}
