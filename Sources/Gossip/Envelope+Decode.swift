import Crypto

/// The fields every version signs, checked and encoded in one place.
struct EnvelopeFields: Sendable {
    let version: UInt8
    let author: PublicKey
    let sequence: UInt64
    let previous: MessageID
    let dependencies: [Dependency]
    let timestamp: UInt64
    let room: RoomID
    /// Version 1 only.
    let kind: Kind?
    /// Versions 3 and 4 only.
    let erases: [UInt64]
    let bodyLength: Int
    /// Versions 3 and 4 only.
    let bodyHash: [UInt8]?

    /// The rules of §4 that do not need the signature: one encoding per envelope.
    func check() throws(EnvelopeError) {
        guard sequence > 0 else { throw .zeroSequence }
        guard (sequence == 1) == previous.isZero else { throw .previousHashMismatch(sequence: sequence) }
        guard dependencies.count <= Envelope.maximumDependencies else {
            throw .tooManyDependencies(count: dependencies.count, limit: Envelope.maximumDependencies)
        }
        guard bodyLength <= Envelope.maximumBody else { throw .bodyTooLarge(size: bodyLength, limit: Envelope.maximumBody) }
        guard version == 1 || SealedBody.isSealedSize(bodyLength) else { throw .bodyNotPadded(size: bodyLength) }
        var last: PublicKey?
        for d in dependencies {
            guard d.sequence > 0, d.author != author else { throw .dependenciesNotCanonical }
            if let l = last, !(l < d.author) { throw .dependenciesNotCanonical }
            last = d.author
        }
        guard erases.count <= Envelope.maximumErasures else {
            throw .tooManyErasures(count: erases.count, limit: Envelope.maximumErasures)
        }
        var previousErased: UInt64 = 0
        for s in erases {
            guard s > previousErased, s < sequence else { throw .erasuresNotCanonical }
            previousErased = s
        }
    }

    /// The bytes the signature covers; `body` for versions 1 and 2, which sign it whole.
    func signedBytes(body: [UInt8]?) -> [UInt8] {
        var w = ByteWriter(capacity: Envelope.headerSize + dependencies.count * Envelope.dependencySize
            + Envelope.headTrailerSize + (body?.count ?? 0))
        w.u8(version)
        w.raw(author.bytes)
        w.u64(sequence)
        w.raw(previous.bytes)
        w.u16(UInt16(dependencies.count))
        for d in dependencies {
            w.raw(d.author.bytes)
            w.u64(d.sequence)
        }
        w.u64(timestamp)
        w.raw(room.bytes)
        if let kind { w.u8(kind.rawValue) }
        if version >= 3 {
            w.u8(UInt8(erases.count))
            for s in erases { w.u64(s) }
        }
        w.u32(UInt32(bodyLength))
        if let body { w.raw(body) }
        if let bodyHash { w.raw(bodyHash) }
        return w.bytes
    }

    /// An envelope of these fields whose encoding is `encoded`.
    func envelope(encoded: [UInt8], signedCount: Int, signature: [UInt8], body: [UInt8], erasedBy: UInt64?, id: MessageID) -> Envelope {
        Envelope(self, body: body, erasedBy: erasedBy, signature: signature, id: id, encoded: encoded, signedCount: signedCount)
    }

    /// A freshly signed envelope: signed bytes, signature, then `tail`.
    func envelope(signed: [UInt8], signature: [UInt8], tail: [UInt8], body: [UInt8], erasedBy: UInt64?) -> Envelope {
        let head = signed + signature
        return envelope(encoded: head + tail, signedCount: signed.count, signature: signature, body: body,
                        erasedBy: erasedBy, id: MessageID(unchecked: BLAKE2b.hash(head[0..<idCount(signedCount: signed.count)])))
    }

    /// How many leading bytes of an encoding the message id hashes: the
    /// signed bytes, and from version 4 the signature after them too.
    func idCount(signedCount: Int) -> Int {
        version >= 4 ? signedCount + Signature.byteCount : signedCount
    }
}

extension Envelope {
    typealias Fields = EnvelopeFields

    /// One envelope's signed bytes and signature, read from where `r` stands.
    struct Head {
        let fields: Fields
        /// The body, for versions 1 and 2 (signed whole).
        let body: [UInt8]?
        /// Where the signed bytes start and how many there are.
        let start: Int
        let signedCount: Int
        let signature: [UInt8]

        static func read(_ r: inout ByteReader) throws(EnvelopeError) -> Head {
            let start = r.offset
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
            var erases: [UInt64] = []
            if version >= 3 {
                let erased = Int(try r.u8("erase count"))
                guard erased <= maximumErasures else { throw .tooManyErasures(count: erased, limit: maximumErasures) }
                for _ in 0..<erased { erases.append(try r.u64("erased sequence")) }
            }
            let bodyLength = Int(try r.u32("body length"))
            // Checked before the body is read (or even known to be there).
            guard bodyLength <= maximumBody else { throw .bodyTooLarge(size: bodyLength, limit: maximumBody) }
            guard version == 1 || SealedBody.isSealedSize(bodyLength) else { throw .bodyNotPadded(size: bodyLength) }
            let body = version < 3 ? Array(try r.take(bodyLength, "body")) : nil
            let bodyHash = version >= 3 ? Array(try r.take(32, "body hash")) : nil
            let signedCount = r.offset - start
            let signature = Array(try r.take(Signature.byteCount, "signature"))
            let fields = Fields(version: version, author: author, sequence: sequence, previous: previous, dependencies: deps,
                                timestamp: timestamp, room: room, kind: kind, erases: erases, bodyLength: bodyLength, bodyHash: bodyHash)
            try fields.check()
            return Head(fields: fields, body: body, start: start, signedCount: signedCount, signature: signature)
        }
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
    /// version or kind, limits, non-canonical dependencies or erasures, a
    /// body that is not the signed hash's, bad signatures, and a pruned
    /// envelope whose proof is not its author's erasure of it.
    public static func decode(_ bytes: [UInt8], verification: Verification = .signature) throws(EnvelopeError) -> Envelope {
        guard bytes.count <= maximumSize else { throw .tooLarge(size: bytes.count, limit: maximumSize) }
        var r = ByteReader(bytes)
        let head = try Head.read(&r)
        let fields = head.fields
        var body = head.body ?? []
        var proof: Head?
        if fields.version >= 3 {
            let form = try r.u8("form")
            switch Form(rawValue: form) {
            case .body:
                body = Array(try r.take(fields.bodyLength, "body"))
                guard BLAKE2b.hash(body) == fields.bodyHash else { throw .bodyHashMismatch }
            case .proof:
                let erasing = try Head.read(&r)
                guard erasing.fields.version >= 3, erasing.fields.author == fields.author,
                      erasing.fields.sequence > fields.sequence, erasing.fields.erases.contains(fields.sequence) else {
                    throw .badErasureProof
                }
                proof = erasing
            case nil:
                throw .badValue(field: "form", UInt64(form))
            }
        }
        guard r.remaining == 0 else { throw .trailingBytes(count: r.remaining) }
        let id: [UInt8] = bytes.withUnsafeBytes { all in
            BLAKE2b.hash(UnsafeRawBufferPointer(rebasing: all[0..<fields.idCount(signedCount: head.signedCount)]))
        }
        if verification == .signature {
            guard verify(author: fields.author, signature: head.signature, signed: bytes[0..<head.signedCount]) else { throw .badSignature }
            if let proof, !verify(author: fields.author, signature: proof.signature, signed: bytes[proof.start..<(proof.start + proof.signedCount)]) {
                throw .badErasureProof
            }
        }
        return fields.envelope(encoded: bytes, signedCount: head.signedCount, signature: head.signature, body: body,
                               erasedBy: proof?.fields.sequence, id: MessageID(unchecked: id))
    }

    private static func publicKey(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> PublicKey {
        do { return try PublicKey(bytes: bytes) } catch { throw .badLength(field: "public key", expected: 32, actual: bytes.count) }
    }
}
