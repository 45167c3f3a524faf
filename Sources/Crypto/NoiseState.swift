import CSodium

/// Noise (revision 34) building blocks for `Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b`,
/// from libsodium primitives: X25519, ChaCha20-Poly1305 (IETF), BLAKE2b-512.
enum Noise {
    static let hashLength = 64
    static let blockLength = 128
    static let dhLength = 32
    static let tagLength = 16
    /// Noise §3: no message is longer.
    static let maximumMessage = 65_535

    static func hash(_ data: [UInt8]) -> [UInt8] { BLAKE2b.hash(data, outputLength: hashLength) }

    /// HMAC (RFC 2104) over BLAKE2b-512 with its 128-byte block (Noise §4.3).
    static func hmac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var k = key.count > blockLength ? hash(key) : key
        k += [UInt8](repeating: 0, count: blockLength - k.count)
        let inner = hash(k.map { $0 ^ 0x36 } + data)
        return hash(k.map { $0 ^ 0x5c } + inner)
    }

    /// HKDF as Noise §4.3 defines it: two or three outputs of HASHLEN bytes.
    static func hkdf(chainingKey: [UInt8], _ ikm: [UInt8], outputs: Int) -> [[UInt8]] {
        let temp = hmac(key: chainingKey, ikm)
        let o1 = hmac(key: temp, [1])
        let o2 = hmac(key: temp, o1 + [2])
        if outputs == 2 { return [o1, o2] }
        return [o1, o2, hmac(key: temp, o2 + [3])]
    }

    /// X25519; refuses an all-zero result (a low-order point).
    static func dh(secret: SecretBytes, publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard publicKey.count == dhLength else { throw .noise(.messageTooShort) }
        var out = [UInt8](repeating: 0, count: dhLength)
        let rc = secret.withUnsafeBytes { s in
            out.withUnsafeMutableBufferPointer { o in
                crypto_scalarmult(o.baseAddress!, s.baseAddress!.assumingMemoryBound(to: UInt8.self), publicKey)
            }
        }
        guard rc == 0 else { throw .noise(.weakKey) }
        return out
    }

    /// A fresh X25519 key pair (or one from a fixed seed, for test vectors).
    static func keyPair(seed: [UInt8]? = nil) -> (secret: SecretBytes, publicKey: [UInt8]) {
        let secret = SecretBytes(count: dhLength) { out in
            if let seed, seed.count == dhLength {
                out.copyBytes(from: seed)
            } else {
                randombytes_buf(out.baseAddress!, out.count)
            }
        }
        var pk = [UInt8](repeating: 0, count: dhLength)
        secret.withUnsafeBytes { s in
            _ = pk.withUnsafeMutableBufferPointer { crypto_scalarmult_base($0.baseAddress!, s.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        }
        return (secret, pk)
    }
}

/// Noise §5.1 CipherState with ChaChaPoly (§12.3): 96-bit nonce = 32 zero
/// bits then the 64-bit counter, little-endian.
public struct NoiseCipherState: Sendable {
    var key: SecretBytes?
    public private(set) var nonce: UInt64 = 0

    init(key: [UInt8]? = nil) {
        self.key = key.map { SecretBytes(copying: $0.prefix(32)) }
    }

    private func nonceBytes(_ n: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0))) }
    }

    mutating func encrypt(ad: [UInt8], _ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let key else { return plaintext }
        // §5.1: 2^64 - 1 is reserved; a link must end before it.
        guard nonce < UInt64.max else { throw .noise(.nonceExhausted) }
        let n = nonceBytes(nonce)
        // Not zeroed first: the cipher writes every byte (a link's 64 KiB chunks, once per link).
        let out = key.withUnsafeBytes { k in
            [UInt8](unsafeUninitializedCapacity: plaintext.count + Noise.tagLength) { o, count in
                var written: UInt64 = 0
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    o.baseAddress!, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, n,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                count = o.count
            }
        }
        nonce += 1
        return out
    }

    mutating func decrypt(ad: [UInt8], _ ciphertext: [UInt8], message: Int) throws(CryptoError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw .noise(.nonceExhausted) }
        guard ciphertext.count >= Noise.tagLength else { throw .noise(.messageTooShort) }
        let length = ciphertext.count - Noise.tagLength
        let n = nonceBytes(nonce)
        var rc: Int32 = -1
        // One spare byte so the buffer has an address even for an empty
        // plaintext; not zeroed first, and nothing of it kept unless it opened.
        let out = key.withUnsafeBytes { k in
            [UInt8](unsafeUninitializedCapacity: length + 1) { o, count in
                var written: UInt64 = 0
                rc = crypto_aead_chacha20poly1305_ietf_decrypt(
                    o.baseAddress!, &written, nil, ciphertext, UInt64(ciphertext.count),
                    ad, UInt64(ad.count), n, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                count = rc == 0 ? length : 0
            }
        }
        guard rc == 0 else { throw .noise(.decryptFailed(message: message)) }
        nonce += 1
        return out
    }

    /// §11.3 Rekey: k = first 32 bytes of ENCRYPT(k, 2^64 - 1, zerolen, zeros).
    mutating func rekey() {
        guard let key else { return }
        var out = [UInt8](repeating: 0, count: 32 + Noise.tagLength)
        let n = nonceBytes(UInt64.max)
        let zeros = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { o in
                var written: UInt64 = 0
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    o.baseAddress!, &written, zeros, 32, nil, 0, nil, n, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        self.key = SecretBytes(copying: out.prefix(32))
    }
}

/// Noise §5.2 SymmetricState.
struct NoiseSymmetricState {
    var chainingKey: [UInt8]
    var h: [UInt8]
    var cipher = NoiseCipherState()

    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        h = name.count <= Noise.hashLength ? name + [UInt8](repeating: 0, count: Noise.hashLength - name.count) : Noise.hash(name)
        chainingKey = h
    }

    mutating func mixKey(_ ikm: [UInt8]) {
        let out = Noise.hkdf(chainingKey: chainingKey, ikm, outputs: 2)
        chainingKey = out[0]
        cipher = NoiseCipherState(key: Array(out[1].prefix(32)))
    }

    mutating func mixHash(_ data: [UInt8]) { h = Noise.hash(h + data) }

    mutating func mixKeyAndHash(_ ikm: [UInt8]) {
        let out = Noise.hkdf(chainingKey: chainingKey, ikm, outputs: 3)
        chainingKey = out[0]
        mixHash(out[1])
        cipher = NoiseCipherState(key: Array(out[2].prefix(32)))
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        let c = try cipher.encrypt(ad: h, plaintext)
        mixHash(c)
        return c
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8], message: Int) throws(CryptoError) -> [UInt8] {
        let p = try cipher.decrypt(ad: h, ciphertext, message: message)
        mixHash(ciphertext)
        return p
    }

    /// (initiator → responder, responder → initiator).
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let out = Noise.hkdf(chainingKey: chainingKey, [], outputs: 2)
        return (NoiseCipherState(key: Array(out[0].prefix(32))), NoiseCipherState(key: Array(out[1].prefix(32))))
    }
}
