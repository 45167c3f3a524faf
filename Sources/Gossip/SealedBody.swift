import Crypto

/// What a body holds once opened: its kind and its content.
public struct OpenedBody: Equatable, Sendable {
    public let kind: Kind
    public let content: [UInt8]

    public init(kind: Kind, content: [UInt8]) {
        self.kind = kind
        self.content = content
    }
}

/// Version-2 bodies (docs/PROTOCOL.md §5): the kind goes inside the
/// encryption, and the plaintext is padded to one of a few sizes, so what a
/// message is (text, receipt, invite…) and how long it is stay between
/// those who hold the key.
///
///     body = nonce 24 ‖ XChaCha20-Poly1305( kind 1 ‖ content ‖ 0x80 ‖ 0x00… ) ‖ tag 16
///
/// The padded plaintext is one of `buckets`; associated data
/// `"peernode/2 body"` ‖ 0x00 ‖ author ‖ room id. The same for every room
/// kind: a direct conversation's key is `DirectKey.conversationKey`.
public enum SealedBody {
    /// The smallest padded size: every chat line, receipt and invite shorter
    /// than this looks the same.
    public static let smallestBucket = 256
    /// The largest padded size: a kind byte, the largest content and the
    /// padding marker.
    public static let largestBucket = Envelope.maximumPlaintextBody + 2
    /// Every padded size, ascending: powers of two from `smallestBucket` to
    /// 65,536, then `largestBucket`.
    public static let buckets: [Int] = {
        var sizes: [Int] = []
        var size = smallestBucket
        while size <= Envelope.maximumPlaintextBody {
            sizes.append(size)
            size *= 2
        }
        return sizes + [largestBucket]
    }()

    /// The padded size for `unpadded` bytes (kind and content): the smallest
    /// bucket with room for the marker too. Nil past the largest.
    public static func bucket(for unpadded: Int) -> Int? { buckets.first { $0 > unpadded } }

    /// Whether a version-2 body of this many bytes is a padded size once the
    /// nonce and tag are taken away.
    public static func isSealedSize(_ bodyLength: Int) -> Bool {
        buckets.contains(bodyLength - SymmetricKey.overhead)
    }

    static func associatedData(author: PublicKey, room: RoomID) -> [UInt8] {
        Array("peernode/2 body".utf8) + [0] + author.bytes + room.bytes
    }

    /// Seals `content` of `kind` for a version-2 envelope by `author` in `room`.
    public static func seal(
        kind: Kind, content: [UInt8], key: SymmetricKey, author: PublicKey, room: RoomID, nonce: [UInt8]? = nil
    ) throws -> [UInt8] {
        guard content.count <= Envelope.maximumPlaintextBody, let size = bucket(for: content.count + 1),
              let padded = Padding.pad([kind.rawValue] + content, to: size) else {
            throw EnvelopeError.bodyTooLarge(size: content.count, limit: Envelope.maximumPlaintextBody)
        }
        return try key.seal(padded, associatedData: associatedData(author: author, room: room), nonce: nonce)
    }

    /// Opens a version-2 envelope's body. Throws when the key is not the
    /// room's, or the plaintext is not a known kind with well-formed padding.
    public static func open(_ envelope: Envelope, key: SymmetricKey) throws -> OpenedBody {
        let padded = try key.open(envelope.body, associatedData: associatedData(author: envelope.author, room: envelope.room))
        guard let plain = Padding.unpad(padded), let first = plain.first else { throw EnvelopeError.bodyNotPadded(size: padded.count) }
        guard let kind = Kind(rawValue: first) else { throw EnvelopeError.unknownKind(first) }
        return OpenedBody(kind: kind, content: Array(plain.dropFirst()))
    }
}
