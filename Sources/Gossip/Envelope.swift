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
    /// Takes back earlier messages of its author: what it erases is in clear
    /// (`Envelope.erases`), so relays erase too. Content empty.
    case tombstone = 8
    /// A new text for one of its author's messages (`MessageEdit`).
    case edit = 9
    /// A reaction to a message, or taking it back (`Reaction`).
    case reaction = 10
    /// A text that answers a message (`Reply`).
    case reply = 11
    /// A device's claim to belong to an account: the account's
    /// `DeviceCertificate` for it, in the accounts room (docs/PROTOCOL.md §15).
    case device = 12
    /// A device's envelopes after a sequence are refused (`DeviceRevocation`).
    case revoke = 13
    /// A change of a private room's members or key (`MembershipEvent`).
    case membership = 14
    /// An account's new conversation key after a revocation (`ConversationKeyAnnouncement`).
    case rekey = 15
    /// A change another device of the same account follows (`FollowChange`).
    case follow = 16
    /// A file offered (`FileOffer`): a message of its own, numbered like a text.
    case file = 17
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
/// docs/PROTOCOL.md §4. Immutable; built by `sign`, `decode` or `pruned`,
/// each of which enforces every limit.
///
/// Version 1 carries its kind in clear and its body at its own length.
/// Version 2 seals the kind with the body and pads the body (`SealedBody`).
/// Version 3 (what this build signs) is version 2 whose signature covers the
/// body's hash instead of the body, and which may name earlier envelopes of
/// its author to erase: a body can then be removed and the envelope still
/// verifies and still holds its place in the author's chain (`pruned`).
/// Version 4 (what this build signs) is version 3 whose id covers the
/// signature too, so the next envelope's `previous` vouches for this one's
/// signature (`ChainVerification`).
public struct Envelope: Hashable, Sendable {
    /// The version this build signs.
    public static let newestVersion: UInt8 = 4
    /// The versions this build reads (and serves, whoever signed them).
    public static let versions: ClosedRange<UInt8> = 1...4

    /// Largest plaintext body (64 KiB).
    public static let maximumPlaintextBody = 65_536
    /// Largest encrypted body: a sealed body of the largest padded size,
    /// which is above any version-1 body (plaintext plus nonce and tag).
    public static let maximumBody = SealedBody.largestBucket + SymmetricKey.overhead
    /// Most causal dependencies one envelope may name.
    public static let maximumDependencies = 256
    /// Most earlier envelopes one envelope may erase: a message and the most
    /// edits it may have (`MessageEdit.maximumPerMessage`).
    public static let maximumErasures = 1 + MessageEdit.maximumPerMessage
    /// Bytes before the dependency list: version, author, sequence, previous, count.
    static let headerSize = 1 + 32 + 8 + 32 + 2
    static let dependencySize = 32 + 8
    /// Versions 1 and 2, after the dependency list, body excluded: timestamp,
    /// room, kind (version 1 only), body length, signature.
    static let trailerSize = 8 + 32 + 1 + 4 + Signature.byteCount
    /// Versions 3 and 4, after the dependency list: timestamp, room, erase count,
    /// erased sequences, body length, body hash, signature.
    static let headTrailerSize = 8 + 32 + 1 + maximumErasures * 8 + 4 + 32 + Signature.byteCount
    /// The largest version-3 or 4 head (signed bytes and signature, no body).
    static let maximumHead = headerSize + maximumDependencies * dependencySize + headTrailerSize
    /// The largest encoded envelope; longer input is refused before parsing.
    /// A version-3 head, its form byte, and the larger of a body and the
    /// head of the envelope that erased it.
    public static let maximumSize = maximumHead + 1 + max(maximumBody, maximumHead)

    /// The fields, decoded once and never changed, behind one reference: an
    /// envelope is copied at every stage of the path (batches, the verify
    /// pipe, forwarding, the store), and as a struct of ten arrays each copy
    /// cost ten retains and ten releases (8 % of a catch-up's loop, perf).
    final class Storage: Sendable {
        /// What the signature covers, as decoded (`EnvelopeFields`).
        let signed: EnvelopeFields
        let body: [UInt8]
        let erasedBy: UInt64?
        let signature: [UInt8]
        let id: MessageID
        let encoded: [UInt8]
        let signedCount: Int

        init(signed: EnvelopeFields, body: [UInt8], erasedBy: UInt64?, signature: [UInt8], id: MessageID, encoded: [UInt8], signedCount: Int) {
            self.signed = signed
            self.body = body
            self.erasedBy = erasedBy
            self.signature = signature
            self.id = id
            self.encoded = encoded
            self.signedCount = signedCount
        }
    }
    let storage: Storage

    init(_ signed: EnvelopeFields, body: [UInt8], erasedBy: UInt64?, signature: [UInt8], id: MessageID, encoded: [UInt8], signedCount: Int) {
        storage = Storage(signed: signed, body: body, erasedBy: erasedBy, signature: signature, id: id, encoded: encoded,
                          signedCount: signedCount)
    }

    public var version: UInt8 { storage.signed.version }
    public var author: PublicKey { storage.signed.author }
    public var sequence: UInt64 { storage.signed.sequence }
    public var previous: MessageID { storage.signed.previous }
    public var dependencies: [Dependency] { storage.signed.dependencies }
    /// Milliseconds since the Unix epoch, as the author's clock said.
    public var timestamp: UInt64 { storage.signed.timestamp }
    public var room: RoomID { storage.signed.room }
    /// The kind, where it travels in clear (version 1). Later versions'
    /// kind is inside the body (`SealedBody.open`).
    public var clearKind: Kind? { storage.signed.kind }
    /// Versions 3 and 4: sequences of the author's earlier envelopes whose bodies
    /// this one erases, ascending (empty: it erases nothing).
    public var erases: [UInt64] { storage.signed.erases }
    /// The length of the body, which a pruned envelope still states.
    public var bodyLength: Int { storage.signed.bodyLength }
    /// Versions 3 and 4: BLAKE2b-256 of the body, signed in its place.
    public var bodyHash: [UInt8]? { storage.signed.bodyHash }
    /// The encrypted body (room key or direct key); empty once pruned.
    public var body: [UInt8] { storage.body }
    /// A pruned envelope: the sequence of the author's envelope that erased
    /// its body (whose head travels with it as the proof).
    public var erasedBy: UInt64? { storage.erasedBy }
    public var signature: [UInt8] { storage.signature }
    /// BLAKE2b-256 of the signed bytes (everything before the signature),
    /// and from version 4 of the signature after them too (`idCoversSignature`).
    public var id: MessageID { storage.id }
    /// The whole canonical encoding: signed bytes, signature and, for
    /// versions 3 and 4, the form byte and the body or the proof.
    public var encoded: [UInt8] { storage.encoded }
    /// How many bytes of `encoded` the signature covers.
    var signedCount: Int { storage.signedCount }

    /// Equal when the encodings are: an encoding is canonical, and every
    /// field is read from it.
    public static func == (a: Envelope, b: Envelope) -> Bool {
        a.storage === b.storage || a.encoded == b.encoded
    }

    /// The id, which equal encodings share.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }

    public var signedBytes: ArraySlice<UInt8> { encoded[0..<signedCount] }
    /// The signed bytes and the signature: what proves an erasure (§4).
    var head: ArraySlice<UInt8> { encoded[0..<(signedCount + Signature.byteCount)] }
    /// Whether the body was erased (only versions 3 and 4 can be).
    public var isPruned: Bool { erasedBy != nil }
    /// Whether a body can be erased from this envelope (versions 3 and 4).
    public var isErasable: Bool { version >= 3 }
    /// Whether the id hashes the signature too (version 4): then the
    /// author's next envelope, naming this id as `previous`, signs over this
    /// envelope's signature, and one verified signature vouches for the
    /// whole run below it (docs/PROTOCOL.md §4, "Chains vouch").
    public var idCoversSignature: Bool { version >= 4 }

    /// Builds, checks and signs an envelope of version 4 (or 3, which earlier
    /// builds signed; tests and golden vectors do): `body` is a sealed body
    /// (`SealedBody.seal`), kind inside, of a padded size; `erases` names
    /// earlier envelopes of this author whose bodies are to be erased.
    public static func sign(
        by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, erases: [UInt64] = [], body: [UInt8], version: UInt8 = newestVersion
    ) throws(EnvelopeError) -> Envelope {
        guard version == 3 || version == 4 else { throw .unknownVersion(version) }
        // Before `check`, which would call a body past the largest size too large: it is first of all not padded.
        guard SealedBody.isSealedSize(body.count) else { throw .bodyNotPadded(size: body.count) }
        let fields = Fields(version: version, author: key.publicKey, sequence: sequence, previous: previous,
                            dependencies: dependencies.sorted { $0.author < $1.author }, timestamp: timestamp, room: room,
                            kind: nil, erases: erases, bodyLength: body.count, bodyHash: BLAKE2b.hash(body))
        try fields.check()
        let signed = fields.signedBytes(body: nil)
        let signature = key.sign(signed, context: .envelope)
        return fields.envelope(signed: signed, signature: signature, tail: [Form.body.rawValue] + body, body: body, erasedBy: nil)
    }

    /// Builds, checks and signs a version-2 envelope (kind sealed, body
    /// signed whole). Nodes no longer sign these; tests and golden vectors do.
    public static func signVersion2(
        by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        guard SealedBody.isSealedSize(body.count) else { throw .bodyNotPadded(size: body.count) }
        return try signWhole(version: 2, by: key, sequence: sequence, previous: previous, dependencies: dependencies,
                             timestamp: timestamp, room: room, kind: nil, body: body)
    }

    /// Builds, checks and signs a version-1 envelope (kind in clear). Nodes
    /// no longer sign these; tests and golden vectors do, as older nodes did.
    public static func sign(
        by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, kind: Kind, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        try signWhole(version: 1, by: key, sequence: sequence, previous: previous, dependencies: dependencies,
                      timestamp: timestamp, room: room, kind: kind, body: body)
    }

    private static func signWhole(
        version: UInt8, by key: SigningKey, sequence: UInt64, previous: MessageID, dependencies: [Dependency],
        timestamp: UInt64, room: RoomID, kind: Kind?, body: [UInt8]
    ) throws(EnvelopeError) -> Envelope {
        let fields = Fields(version: version, author: key.publicKey, sequence: sequence, previous: previous,
                            dependencies: dependencies.sorted { $0.author < $1.author }, timestamp: timestamp, room: room,
                            kind: kind, erases: [], bodyLength: body.count, bodyHash: nil)
        try fields.check()
        let signed = fields.signedBytes(body: body)
        let signature = key.sign(signed, context: .envelope)
        return fields.envelope(signed: signed, signature: signature, tail: [], body: body, erasedBy: nil)
    }

    /// This envelope with its body erased, carrying `erasing`'s head as the
    /// proof that its author asked for it. Nil unless both are of version 3
    /// or 4, by the same author, and `erasing` names this envelope's sequence.
    /// An envelope already pruned is returned as it is.
    public func pruned(by erasing: Envelope) -> Envelope? {
        if isPruned { return self }
        guard isErasable, erasing.isErasable, erasing.author == author, erasing.sequence > sequence,
              erasing.erases.contains(sequence) else { return nil }
        let signed = Array(signedBytes)
        let proof = Array(erasing.head)
        return Envelope(storage.signed, body: [], erasedBy: erasing.sequence, signature: signature, id: id,
                        encoded: signed + signature + [Form.proof.rawValue] + proof, signedCount: signedCount)
    }

    /// What follows a version-3 or 4 envelope's signature.
    enum Form: UInt8 {
        /// The body, whose BLAKE2b-256 is the signed body hash.
        case body = 0
        /// The head of the author's envelope that erased the body.
        case proof = 1
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
    /// (`.trustedStorage`), without parsing it again; for a pruned one, the
    /// proof's signature too.
    public func verifySignature() throws(EnvelopeError) {
        guard Self.verify(author: author, signature: signature, signed: encoded[0..<signedCount]) else { throw .badSignature }
        guard isPruned else { return }
        let proofStart = signedCount + Signature.byteCount + 1
        var r = ByteReader(Array(encoded[proofStart...]))
        let proof = try Head.read(&r)
        guard Self.verify(author: author, signature: proof.signature, signed: encoded[proofStart..<(proofStart + proof.signedCount)]) else {
            throw .badErasureProof
        }
    }

    static func verify(author: PublicKey, signature: [UInt8], signed: ArraySlice<UInt8>) -> Bool {
        signed.withUnsafeBytes { raw in (try? author.verify(signature: signature, message: raw, context: .envelope)) != nil }
    }

    /// Checks that this envelope links to `predecessor`, the author's
    /// envelope one sequence number earlier (a known chain).
    public func checkFollows(_ predecessor: Envelope) throws(EnvelopeError) {
        guard predecessor.author == author, predecessor.sequence + 1 == sequence, predecessor.id == previous else {
            throw .wrongPrevious(sequence: sequence)
        }
    }
}
