import CSodium

/// An X25519 key pair that conversations are sealed to: an account's
/// conversation key (docs/PROTOCOL.md §15, "Conversation keys"). Epoch 0 of
/// an account is its identity key converted (what a lone identity always
/// used); a later epoch is a random pair the account hands its devices.
public struct BoxKeyPair: Sendable {
    public static let byteCount = 32
    public let publicKey: [UInt8]
    let secret: SecretBytes

    init(secret: SecretBytes, publicKey: [UInt8]) {
        self.secret = secret
        self.publicKey = publicKey
    }

    /// A new random pair (`crypto_box_keypair`).
    public static func generate() -> BoxKeyPair {
        _ = try? Sodium.ensureInitialised()
        var pk = [UInt8](repeating: 0, count: byteCount)
        let sk = SecretBytes(count: byteCount) { out in
            _ = crypto_box_curve25519xchacha20poly1305_keypair(&pk, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return BoxKeyPair(secret: sk, publicKey: pk)
    }

    /// The pair of a secret handed over (its public key computed from it).
    public init(secretBytes: some Collection<UInt8>) throws(CryptoError) {
        try Sodium.checkLength("X25519 secret key", secretBytes, Self.byteCount)
        let sk = SecretBytes(copying: secretBytes)
        var pk = [UInt8](repeating: 0, count: Self.byteCount)
        let rc = sk.withUnsafeBytes { crypto_scalarmult_curve25519_base(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        guard rc == 0 else { throw .badPublicKey }
        secret = sk
        publicKey = pk
    }

    /// Epoch 0 of an identity: its Ed25519 key converted to X25519.
    public static func converted(from identity: SigningKey) -> BoxKeyPair {
        let sk = SecretBytes(count: byteCount) { out in
            identity.secret.withUnsafeBytes { ed in
                _ = crypto_sign_ed25519_sk_to_curve25519(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                         ed.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        var pk = [UInt8](repeating: 0, count: byteCount)
        sk.withUnsafeBytes { _ = crypto_scalarmult_curve25519_base(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return BoxKeyPair(secret: sk, publicKey: pk)
    }

    /// Epoch 0's public key of an identity: its Ed25519 public key
    /// converted; nil when it is not a valid point.
    public static func convertedPublic(_ key: PublicKey) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: byteCount)
        guard crypto_sign_ed25519_pk_to_curve25519(&out, key.bytes) == 0 else { return nil }
        return out
    }

    /// The secret, for handing it to a device of the same account inside a sealed grant.
    public var exportedSecret: [UInt8] { secret.withUnsafeBytes { Array($0) } }
}

extension BoxKeyPair {
    /// Bytes `crypto_box_seal` adds: an ephemeral public key and a tag.
    public static let sealOverhead = 48

    /// `message` sealed to `publicKey` (`crypto_box_seal`): only the holder
    /// of its secret opens it; the sender stays anonymous to the box (the
    /// envelope around it is signed).
    public static func seal(_ message: [UInt8], to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialised()
        try Sodium.checkLength("X25519 public key", publicKey, byteCount)
        var out = [UInt8](repeating: 0, count: message.count + sealOverhead)
        guard crypto_box_seal(&out, message, UInt64(message.count), publicKey) == 0 else { throw .badPublicKey }
        return out
    }

    /// Opens what `seal` sealed to this pair.
    public func openSealed(_ sealed: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.sealOverhead else { throw .ciphertextTooShort(minimum: Self.sealOverhead, actual: sealed.count) }
        var out = [UInt8](repeating: 0, count: sealed.count - Self.sealOverhead)
        let rc = secret.withUnsafeBytes {
            crypto_box_seal_open(&out, sealed, UInt64(sealed.count), publicKey, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else { throw .decryptionFailed }
        return out
    }
}
