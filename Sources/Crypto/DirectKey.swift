import CSodium

/// The shared key between this node and one peer for direct messages:
/// X25519 (both Ed25519 identities converted to Curve25519) then
/// XChaCha20-Poly1305 (`crypto_box_curve25519xchacha20poly1305_*`).
/// The box is authenticated to the sender: only the two parties hold the key,
/// and since Diffie-Hellman is symmetric the sender can read its own DMs back.
public struct DirectKey: Sendable {
    public static let nonceByteCount = 24
    public static let macByteCount = 16
    public static let overhead = nonceByteCount + macByteCount

    let shared: SecretBytes
    public let peer: PublicKey

    /// Precomputes the shared key (`crypto_box_..._beforenm`) between two
    /// identities (both converted to X25519); throws `.badPublicKey` if the
    /// peer's key is not a valid point.
    public init(own: SigningKey, peer: PublicKey) throws(CryptoError) {
        try Sodium.ensureInitialised()
        guard let peerCurve = BoxKeyPair.convertedPublic(peer) else { throw .badPublicKey }
        try self.init(own: BoxKeyPair.converted(from: own), peerPublic: peerCurve, peer: peer)
    }

    /// The shared key between our conversation key `own` and a peer
    /// account's conversation public key (docs/PROTOCOL.md §15).
    public init(own: BoxKeyPair, peerPublic: [UInt8], peer: PublicKey) throws(CryptoError) {
        try Sodium.ensureInitialised()
        try Sodium.checkLength("X25519 public key", peerPublic, BoxKeyPair.byteCount)
        var failed = false
        shared = SecretBytes(count: 32) { out in
            own.secret.withUnsafeBytes { sk in
                failed = crypto_box_curve25519xchacha20poly1305_beforenm(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), peerPublic,
                    sk.baseAddress!.assumingMemoryBound(to: UInt8.self)) != 0
            }
        }
        // beforenm fails for low-order points (an all-zero shared secret).
        guard !failed else { throw .badPublicKey }
        self.peer = peer
    }

    /// A value only the two parties can compute: BLAKE2b-256 keyed with the
    /// shared key, of `label ‖ 0x00` (docs/PROTOCOL.md §2).
    public func derive(label: String) -> [UInt8] {
        let message = Array(label.utf8) + [0]
        return shared.withUnsafeBytes { k in
            BLAKE2b.hash(message, outputLength: 32, keyPointer: k.baseAddress!.assumingMemoryBound(to: UInt8.self), keyLength: k.count)
        }
    }

    /// The key that seals version-2 bodies between the two parties:
    /// `derive("peernode/2 dm-key")`, used like a room key.
    public var conversationKey: SymmetricKey {
        SymmetricKey(secret: SecretBytes(copying: derive(label: "peernode/2 dm-key")))
    }

    /// `nonce ‖ mac ‖ ciphertext`; random nonce unless given (test vectors only).
    public func seal(_ plaintext: [UInt8], nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let n = nonce ?? Sodium.randomBytes(Self.nonceByteCount)
        try Sodium.checkLength("direct message nonce", n, Self.nonceByteCount)
        var out = [UInt8](repeating: 0, count: Self.overhead + plaintext.count)
        out.replaceSubrange(0..<Self.nonceByteCount, with: n)
        shared.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { o in
                _ = crypto_box_curve25519xchacha20poly1305_easy_afternm(
                    o.baseAddress! + Self.nonceByteCount, plaintext, UInt64(plaintext.count), n,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return out
    }

    public func open(_ sealed: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.overhead else {
            throw .ciphertextTooShort(minimum: Self.overhead, actual: sealed.count)
        }
        var plain = [UInt8](repeating: 0, count: sealed.count - Self.overhead)
        let result = shared.withUnsafeBytes { k in
            sealed.withUnsafeBufferPointer { s in
                plain.withUnsafeMutableBufferPointer { p in
                    crypto_box_curve25519xchacha20poly1305_open_easy_afternm(
                        p.baseAddress ?? UnsafeMutablePointer(mutating: s.baseAddress!),
                        s.baseAddress! + Self.nonceByteCount, UInt64(s.count - Self.nonceByteCount),
                        s.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard result == 0 else { throw .decryptionFailed }
        return plain
    }
}
