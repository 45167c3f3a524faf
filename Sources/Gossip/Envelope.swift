import Crypto

/// What an envelope is. The raw value is the byte on the wire.
public enum Kind: UInt8, Sendable, CaseIterable {
    case text = 1
    case action = 2
    case nick = 3
    case join = 4
    case leave = 5
    case receipt = 6
    case invite = 7
    case tombstone = 8
}

/// "The author had delivered `author`'s envelopes up to `sequence`."
public struct Dependency: Hashable, Sendable {
    public let author: PublicKey
    public let sequence: UInt64

    public init(author: PublicKey, sequence: UInt64) {
        self.author = author
        self.sequence = sequence
    }
}

/// A signed message: the unit of storage and gossip. Layout in
/// docs/PROTOCOL.md ("Envelope"). Immutable; built by `sign` or `decode`,
/// both of which enforce every limit.
///
/// Version 1 carries its kind in clear and its body at its own length.
/// Version 2 (what this build signs) carries neither: the kind is sealed
/// with the body, and the body is padded to a few sizes (`SealedBody`), so
/// a node that cannot open it learns only author, room and time.
public struct Envelope: Hashable, Sendable {
    /// The version this build signs.
    public static let newestVersion: UInt8 = 2
    /// The versions this build reads (and serves, whoever signed them).
    public static let versions: ClosedRange<UInt8> = 1...2

    /// Largest plaintext body (64 KiB).
    public static let maximumPlaintextBody = 65_536
    /// Largest encrypted body: a version-2 body of the largest padded size,
    /// which is above any version-1 body (plaintext plus nonce and tag).
    public static let maximumBody = SealedBody.largestBucket + SymmetricKey.overhead
    /// Most causal dependencies one envelope may name.
    public static let maximumDependencies = 256
    /// Bytes before the dependency list: version, author, sequence, previous, count.
    static let headerSize = 1 + 32 + 8 + 32 + 2
    static let dependencySize = 32 + 8
    /// Bytes after the dependency list, body excluded: timestamp, room, kind
    /// (version 1 only), body length, signature.
    static let trailerSize = 8 + 32 + 1 + 4 + Signature.byteCount
    /// The largest encoded envelope; longer input is refused before parsing.
    public static let maximumSize = headerSize + maximumDependencies * dependencySize + trailerSize + maximumBody

    public let version: UInt8
    public let author: PublicKey
    public let sequence: UInt64
    public let previous: MessageID
    public let dependencies: [Dependency]
    /// Milliseconds since the Unix epoch, as the author's clock said.
    public let timestamp: UInt64
    public let room: RoomID
    /// The kind, where it travels in clear (version 1). A version-2
    /// envelope's kind is inside its body (`SealedBody.open`).
    public let clearKind: Kind?
    /// The encrypted body (room key or direct key).
    public let body: [UInt8]
    public let signature: [UInt8]
    /// BLAKE2b-256 of the signed bytes (everything but the signature).
    public let id: MessageID
    /// The whole canonical encoding: signed bytes then signature.
    public let encoded: [UInt8]

    public var signedBytes: ArraySlice<UInt8> { encoded[0..<(encoded.count - Signature.byteCount)] }

    /// Builds, checks and signs a version-2 envelope: `body` is a sealed body
    /// (`SealedBody.seal`), kind inside, of a padded size.
    public static func sign(
        by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        guard SealedBody.isSealedSize(body.count) else { throw .bodyNotPadded(size: body.count) }
        return try sign(version: 2, by: key, sequence: sequence, previous: previous, dependencies: dependencies,
                        timestamp: timestamp, room: room, kind: nil, body: body)
    }

    /// Builds, checks and signs a version-1 envelope (kind in clear). Nodes
    /// no longer sign these; tests and golden vectors do, as older nodes did.
    public static func sign(
        by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, kind: Kind, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        try sign(version: 1, by: key, sequence: sequence, previous: previous, dependencies: dependencies,
                 timestamp: timestamp, room: room, kind: kind, body: body)
    }

    private static func sign(
        version: UInt8, by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, kind: Kind?, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        let deps = dependencies.sorted { $0.author < $1.author }
        try checkFields(author: key.publicKey, sequence: sequence, previous: previous, dependencies: deps, bodySize: body.count)
        var w = ByteWriter(capacity: headerSize + deps.count * dependencySize + trailerSize + body.count)
        w.u8(version)
        w.raw(key.publicKey.bytes)
        w.u64(sequence)
        w.raw(previous.bytes)
        w.u16(UInt16(deps.count))
        for d in deps {
            w.raw(d.author.bytes)
            w.u64(d.sequence)
        }
        w.u64(timestamp)
        w.raw(room.bytes)
        if let kind { w.u8(kind.rawValue) }
        w.u32(UInt32(body.count))
        w.raw(body)
        let signed = w.bytes
        let signature = key.sign(signed, context: .envelope)
        return Envelope(
            version: version, author: key.publicKey, sequence: sequence, previous: previous, dependencies: deps,
            timestamp: timestamp, room: room, clearKind: kind, body: body, signature: signature,
            id: MessageID(unchecked: BLAKE2b.hash(signed)), encoded: signed + signature)
    }

    /// How much to trust the bytes being decoded.
    public enum Verification: Sendable {
        /// From the network: the signature is checked.
        case signature
        /// From this node's own database, where only verified envelopes are
        /// ever written: the structure is checked, the signature is not.
        case trustedStorage
    }

    /// Parses and (by default) verifies an envelope. Rejects, with a typed
    /// error: input over `maximumSize`, truncation, trailing bytes, unknown
    /// version or kind, limits, non-canonical dependencies, bad signatures.
    public static func decode(_ bytes: [UInt8], verification: Verification = .signature) throws(EnvelopeError) -> Envelope {
        guard bytes.count <= maximumSize else { throw .tooLarge(size: bytes.count, limit: maximumSize) }
        var r = ByteReader(bytes)
        let version = try r.u8("version")
        guard versions.contains(version) else { throw .unknownVersion(version) }
        let author = try publicKey(r.take(32, "author"))
        let sequence = try r.u64("sequence")
        let previous = MessageID(unchecked: Array(try r.take(32, "previous")))
        let count = Int(try r.u16("dependency count"))
        guard count <= maximumDependencies else { throw .tooManyDependencies(count: count, limit: maximumDependencies) }
        var deps: [Dependency] = []
        deps.reserveCapacity(count)
        for _ in 0..<count {
            let a = try publicKey(r.take(32, "dependency author"))
            deps.append(Dependency(author: a, sequence: try r.u64("dependency sequence")))
        }
        let timestamp = try r.u64("timestamp")
        let room = RoomID(unchecked: Array(try r.take(32, "room")))
        var kind: Kind?
        if version == 1 {
            let kindByte = try r.u8("kind")
            guard let known = Kind(rawValue: kindByte) else { throw .unknownKind(kindByte) }
            kind = known
        }
        let bodyLength = Int(try r.u32("body length"))
        // Checked before the body is read (or even known to be there).
        guard bodyLength <= maximumBody else { throw .bodyTooLarge(size: bodyLength, limit: maximumBody) }
        guard version == 1 || SealedBody.isSealedSize(bodyLength) else { throw .bodyNotPadded(size: bodyLength) }
        let body = Array(try r.take(bodyLength, "body"))
        let signedCount = r.offset
        let signature = Array(try r.take(Signature.byteCount, "signature"))
        guard r.remaining == 0 else { throw .trailingBytes(count: r.remaining) }
        try checkFields(author: author, sequence: sequence, previous: previous, dependencies: deps, bodySize: body.count)

        let id: [UInt8] = bytes.withUnsafeBytes { all in
            let signed = UnsafeRawBufferPointer(rebasing: all[0..<signedCount])
            return BLAKE2b.hash(signed)
        }
        if verification == .signature {
            let verified: Bool = bytes.withUnsafeBytes { all in
                let signed = UnsafeRawBufferPointer(rebasing: all[0..<signedCount])
                return (try? author.verify(signature: signature, message: signed, context: .envelope)) != nil
            }
            guard verified else { throw .badSignature }
        }
        return Envelope(
            version: version, author: author, sequence: sequence, previous: previous, dependencies: deps,
            timestamp: timestamp, room: room, clearKind: kind, body: body, signature: signature,
            id: MessageID(unchecked: id), encoded: bytes)
    }

    /// Sequence numbers above this are refused from the network (the
    /// envelope's own and its dependencies'): 2^48, more than an author
    /// posting a thousand a second for eight thousand years. Every sum over
    /// sequences then stays far below 2^64 (docs/PROTOCOL.md §8).
    public static let maximumSequence: UInt64 = 1 << 48

    /// Refuses an envelope from the network whose sequence, or a
    /// dependency's, is past `maximumSequence`. Not part of `decode`, so
    /// what a store already holds stays readable.
    public func checkSequenceBounds() throws(EnvelopeError) {
        guard sequence <= Self.maximumSequence else { throw .sequenceTooLarge(sequence, limit: Self.maximumSequence) }
        for d in dependencies where d.sequence > Self.maximumSequence {
            throw .sequenceTooLarge(d.sequence, limit: Self.maximumSequence)
        }
    }

    /// Checks the signature of an envelope that was decoded structurally
    /// (`.trustedStorage`), without parsing it again.
    public func verifySignature() throws(EnvelopeError) {
        let count = encoded.count - Signature.byteCount
        let ok: Bool = encoded.withUnsafeBytes { all in
            (try? author.verify(signature: signature, message: UnsafeRawBufferPointer(rebasing: all[0..<count]), context: .envelope)) != nil
        }
        guard ok else { throw .badSignature }
    }

    /// Checks that this envelope links to `predecessor`, the author's
    /// envelope one sequence number earlier (a known chain).
    public func checkFollows(_ predecessor: Envelope) throws(EnvelopeError) {
        guard predecessor.author == author, predecessor.sequence + 1 == sequence, predecessor.id == previous else {
            throw .wrongPrevious(sequence: sequence)
        }
    }

    private static func publicKey(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> PublicKey {
        do { return try PublicKey(bytes: bytes) } catch { throw .badLength(field: "public key", expected: 32, actual: bytes.count) }
    }

    private static func checkFields(
        author: PublicKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency], bodySize: Int
    ) throws(EnvelopeError) {
        guard sequence > 0 else { throw .zeroSequence }
        guard (sequence == 1) == previous.isZero else { throw .previousHashMismatch(sequence: sequence) }
        guard dependencies.count <= maximumDependencies else {
            throw .tooManyDependencies(count: dependencies.count, limit: maximumDependencies)
        }
        guard bodySize <= maximumBody else { throw .bodyTooLarge(size: bodySize, limit: maximumBody) }
        var last: PublicKey?
        for d in dependencies {
            guard d.sequence > 0, d.author != author else { throw .dependenciesNotCanonical }
            if let l = last, !(l < d.author) { throw .dependenciesNotCanonical }
            last = d.author
        }
    }
}
