import CSodium
import Synchronization

/// `PublicKey.shortFingerprint`s computed so far (at most `PublicKey.maximumCachedFingerprints`).
private let shortFingerprints = Mutex<[PublicKey: String]>([:])

/// An Ed25519 public key: a node's identity and its node id.
public struct PublicKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        try Sodium.checkLength("Ed25519 public key", bytes, Self.byteCount)
        self.bytes = Array(bytes)
    }

    public init(hex: String) throws(CryptoError) {
        try self.init(bytes: Hex.decode(hex))
    }

    /// 64 lowercase hexadecimal characters: the node id as people copy it.
    public var hex: String { Hex.encode(bytes) }

    /// The full fingerprint: 32 base32 characters of BLAKE2b-160 of the key.
    public var fingerprint: String {
        Base32.encode(BLAKE2b.hash(bytes, outputLength: 20))
    }

    /// The four characters shown next to a nick (`alice·k3fq`). They tell two
    /// people apart at a glance; they do not authenticate anyone (20 bits can
    /// be ground): `fingerprint` and `hex` are for verifying.
    public var shortFingerprint: String {
        if let known = shortFingerprints.withLock({ $0[self] }) { return known }
        let short = String(fingerprint.prefix(4))
        shortFingerprints.withLock {
            if $0.count >= Self.maximumCachedFingerprints { $0.removeAll(keepingCapacity: true) }
            $0[self] = short
        }
        return short
    }

    /// Short fingerprints kept from earlier calls, at most: every line
    /// shown names its author's, and a BLAKE2b hash and Base32 each time
    /// showed in catch-up profiles. Emptied when full.
    public static let maximumCachedFingerprints = 4_096

    public var description: String { hex }

    /// All 32 bytes in one call: keys are hashed often (clocks, caches), and
    /// the synthesised byte-by-byte hashing showed in catch-up profiles.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public static func == (a: PublicKey, b: PublicKey) -> Bool { a.bytes == b.bytes }

    public static func < (a: PublicKey, b: PublicKey) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }

    /// Checks an Ed25519 signature (RFC 8032 §5.1.7) over `context` followed
    /// by `message`.
    public func verify(
        signature: some Collection<UInt8>, message: UnsafeRawBufferPointer, context: SignatureContext
    ) throws(CryptoError) {
        try Sodium.ensureInitialised()
        guard signature.count == Signature.byteCount else {
            throw .badKeyLength(what: "Ed25519 signature", expected: Signature.byteCount, actual: signature.count)
        }
        let signed = context.prefixed(message)
        let sig = Array(signature)
        let result = signed.withUnsafeBufferPointer { m in
            sig.withUnsafeBufferPointer { s in
                bytes.withUnsafeBufferPointer { pk in
                    crypto_sign_verify_detached(s.baseAddress!, m.baseAddress, UInt64(m.count), pk.baseAddress!)
                }
            }
        }
        guard result == 0 else { throw .badSignature }
    }

    public func verify(signature: some Collection<UInt8>, message: [UInt8], context: SignatureContext) throws(CryptoError) {
        // withUnsafeBytes cannot carry a typed throw through its closure, so
        // the result comes out as a value.
        let outcome: Result<Void, CryptoError> = message.withUnsafeBytes { m in
            do throws(CryptoError) {
                try verify(signature: signature, message: m, context: context)
                return .success(())
            } catch { return .failure(error) }
        }
        try outcome.get()
    }
}

/// Size of an Ed25519 signature.
public enum Signature {
    public static let byteCount = 64
}

/// What a signature is for. Every signed object starts with its own context
/// string, so a signature made for one purpose (an envelope) can never be
/// passed off as another (a handshake binding, an announcement). `.raw` signs
/// the message alone and exists for the RFC 8032 test vectors.
public enum SignatureContext: Sendable {
    case raw
    case envelope
    case handshake
    case announcement
    /// A typing notice (docs/PROTOCOL.md §10, "Typing").
    case typing
    /// An account's certificate for one of its devices (docs/PROTOCOL.md §15).
    case deviceCertificate
    /// A presence beacon (docs/PROTOCOL.md §10, "Presence").
    case presence

    var tag: [UInt8] {
        switch self {
        case .raw: return []
        case .envelope: return Array("peernode/1 envelope\0".utf8)
        case .handshake: return Array("peernode/1 handshake\0".utf8)
        case .announcement: return Array("peernode/1 announcement\0".utf8)
        case .typing: return Array("peernode/1 typing\0".utf8)
        case .deviceCertificate: return Array("peernode/1 device-certificate\0".utf8)
        case .presence: return Array("peernode/1 presence\0".utf8)
        }
    }

    func prefixed(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        let tag = self.tag
        var out = [UInt8]()
        out.reserveCapacity(tag.count + message.count)
        out.append(contentsOf: tag)
        out.append(contentsOf: message)
        return out
    }
}

/// An Ed25519 secret key (libsodium's 64-byte form: seed then public key),
/// zeroed in memory when released.
public struct SigningKey: Sendable {
    public static let seedByteCount = 32
    static let secretByteCount = 64

    let secret: SecretBytes
    public let publicKey: PublicKey

    /// A new random identity.
    public static func generate() throws(CryptoError) -> SigningKey {
        try Sodium.ensureInitialised()
        var pk = [UInt8](repeating: 0, count: PublicKey.byteCount)
        let secret = SecretBytes(count: secretByteCount) { sk in
            _ = pk.withUnsafeMutableBufferPointer { p in
                crypto_sign_keypair(p.baseAddress!, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return SigningKey(secret: secret, publicKey: try PublicKey(bytes: pk))
    }

    /// The key pair for a 32-byte seed (RFC 8032's "secret key").
    public init(seed: some Collection<UInt8>) throws(CryptoError) {
        try Sodium.checkLength("Ed25519 seed", seed, Self.seedByteCount)
        try self.init(seed: SecretBytes(copying: seed))
    }

    init(seed: SecretBytes) throws(CryptoError) {
        try Sodium.ensureInitialised()
        guard seed.count == Self.seedByteCount else {
            throw .badKeyLength(what: "Ed25519 seed", expected: Self.seedByteCount, actual: seed.count)
        }
        var pk = [UInt8](repeating: 0, count: PublicKey.byteCount)
        secret = SecretBytes(count: Self.secretByteCount) { sk in
            seed.withUnsafeBytes { s in
                _ = pk.withUnsafeMutableBufferPointer { p in
                    crypto_sign_seed_keypair(
                        p.baseAddress!, sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        publicKey = try PublicKey(bytes: pk)
    }

    init(secret: SecretBytes, publicKey: PublicKey) {
        self.secret = secret
        self.publicKey = publicKey
    }

    /// The 32-byte seed, for writing the key file.
    func withSeed<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try secret.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Self.seedByteCount])) }
    }

    /// A detached Ed25519 signature (RFC 8032 §5.1.6) over `context` then `message`.
    public func sign(_ message: UnsafeRawBufferPointer, context: SignatureContext) -> [UInt8] {
        let signed = context.prefixed(message)
        var signature = [UInt8](repeating: 0, count: Signature.byteCount)
        secret.withUnsafeBytes { sk in
            signed.withUnsafeBufferPointer { m in
                _ = signature.withUnsafeMutableBufferPointer { s in
                    crypto_sign_detached(
                        s.baseAddress!, nil, m.baseAddress, UInt64(m.count),
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return signature
    }

    public func sign(_ message: [UInt8], context: SignatureContext) -> [UInt8] {
        message.withUnsafeBytes { sign($0, context: context) }
    }
}
