import CSodium

/// A 32-byte key for XChaCha20-Poly1305 (libsodium
/// `crypto_aead_xchacha20poly1305_ietf_*`): room keys. Zeroed when released.
public struct SymmetricKey: Sendable {
    public static let byteCount = 32
    public static let nonceByteCount = 24
    public static let tagByteCount = 16
    /// What sealing adds to a plaintext: the nonce in front, the tag behind.
    public static let overhead = nonceByteCount + tagByteCount

    let secret: SecretBytes

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        try Sodium.checkLength("XChaCha20-Poly1305 key", bytes, Self.byteCount)
        secret = SecretBytes(copying: bytes)
    }

    /// A key from exactly `byteCount` bytes, or nil for any other length:
    /// for key bytes from an invite or a grant, whose length is all there is to check.
    public init?(exactly bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        secret = SecretBytes(copying: bytes)
    }

    init(secret: SecretBytes) { self.secret = secret }

    /// A random key (private rooms).
    public static func generate() -> SymmetricKey {
        _ = try? Sodium.ensureInitialised()
        return SymmetricKey(secret: SecretBytes(count: byteCount) { randombytes_buf($0.baseAddress!, $0.count) })
    }

    /// The key bytes, for handing a private room key to a member inside an
    /// encrypted invite.
    public var exportedBytes: [UInt8] { secret.withUnsafeBytes { Array($0) } }

    /// `nonce ‖ ciphertext ‖ tag`. The nonce is random unless given (fixed
    /// nonces are for golden test vectors only: never reuse one with a key).
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = [], nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialised()
        let n = nonce ?? Sodium.randomBytes(Self.nonceByteCount)
        try Sodium.checkLength("XChaCha20-Poly1305 nonce", n, Self.nonceByteCount)
        var out = [UInt8](repeating: 0, count: Self.overhead + plaintext.count)
        out.replaceSubrange(0..<Self.nonceByteCount, with: n)
        out.withUnsafeMutableBufferPointer { o in
            plaintext.withUnsafeBytes { XChaCha.seal($0, ad: associatedData, nonce: n, key: secret, into: o.baseAddress! + Self.nonceByteCount) }
        }
        return out
    }

    /// Opens what `seal` made; throws `.decryptionFailed` if anything changed.
    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialised()
        guard sealed.count >= Self.overhead else {
            throw .ciphertextTooShort(minimum: Self.overhead, actual: sealed.count)
        }
        let plain = sealed.withUnsafeBufferPointer { s in
            XChaCha.open(UnsafeBufferPointer(rebasing: s[Self.nonceByteCount...]), ad: associatedData, nonce: s.baseAddress!, key: secret)
        }
        guard let plain else { throw .decryptionFailed }
        return plain
    }
}
