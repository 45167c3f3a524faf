import CSodium

/// A file's own key (docs/PROTOCOL.md §16, "Chunks"): 32 random bytes,
/// made by the sender for one file and carried only inside its offer,
/// which is sealed to the room or conversation like any message. Each
/// chunk is sealed with XChaCha20-Poly1305 (libsodium
/// `crypto_aead_xchacha20poly1305_ietf_*`) under a nonce made of the
/// chunk's index, so a chunk needs no nonce on the wire or on disk: a key
/// is used for one file only, and each index once. Zeroed when released.
public struct FileKey: Sendable {
    public static let byteCount = 32
    /// What sealing adds to a chunk: the Poly1305 tag.
    public static let tagByteCount = 16
    /// The nonce's first 16 bytes; the last 8 are the chunk's index, big-endian.
    static let noncePrefix: [UInt8] = Array("peernode/1 file\u{0}".utf8)

    let secret: SecretBytes

    /// A new random key.
    public static func generate() -> FileKey {
        _ = try? Sodium.ensureInitialised()
        return FileKey(secret: SecretBytes(count: byteCount) { randombytes_buf($0.baseAddress!, $0.count) })
    }

    /// The key of an offer: exactly `byteCount` bytes, or nil.
    public init?(exactly bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        secret = SecretBytes(copying: bytes)
    }

    init(secret: SecretBytes) { self.secret = secret }

    /// The key's bytes, for the offer.
    public var exportedBytes: [UInt8] { secret.withUnsafeBytes { Array($0) } }

    static func nonce(_ index: UInt64) -> [UInt8] {
        noncePrefix + (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64($0))) }
    }

    /// Chunk `index` sealed: its ciphertext followed by the tag.
    public func seal(chunk plaintext: UnsafeRawBufferPointer, index: UInt64) -> [UInt8] {
        _ = try? Sodium.ensureInitialised()
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.tagByteCount)
        out.withUnsafeMutableBufferPointer { XChaCha.seal(plaintext, ad: [], nonce: Self.nonce(index), key: secret, into: $0.baseAddress!) }
        return out
    }

    /// Chunk `index` opened; throws `.decryptionFailed` when it is not what
    /// this key sealed at this index.
    public func open(chunk sealed: some Collection<UInt8>, index: UInt64) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialised()
        guard sealed.count >= Self.tagByteCount else {
            throw .ciphertextTooShort(minimum: Self.tagByteCount, actual: sealed.count)
        }
        let plain = Array(sealed).withUnsafeBufferPointer { XChaCha.open($0, ad: [], nonce: Self.nonce(index), key: secret) }
        guard let plain else { throw .decryptionFailed }
        return plain
    }
}
