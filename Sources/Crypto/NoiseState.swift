import CSodium

/// Noise (revision 34) building blocks for `Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b`
/// and `Noise_XXpsk0_25519_AESGCM_BLAKE2b`, from libsodium primitives: X25519,
/// ChaCha20-Poly1305 (IETF) or AES-256-GCM, BLAKE2b-512.
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

/// The two cipher functions a link may use (Noise §12.3 and §12.4), both
/// from libsodium. Their names go into the Noise protocol name, so two ends
/// that disagree fail the handshake's first message.
public enum NoiseCipher: String, Sendable, CaseIterable {
    /// ChaCha20-Poly1305 (IETF): every CPU; the nonce's counter little-endian.
    case chaChaPoly = "ChaChaPoly"
    /// AES-256-GCM: only where the CPU has AES and carry-less multiply
    /// instructions (libsodium offers it only there); the counter big-endian.
    case aesGCM = "AESGCM"

    /// The ciphers this machine runs, the faster first: AES-GCM where the CPU
    /// has it (here twice ChaCha20-Poly1305's speed on a lone 790-byte message,
    /// 1.5x in bulk; docs/SCALE.md, "The link cipher, built and measured").
    public static let linkPreference = [NoiseCipher.aesGCM, .chaChaPoly].filter(\.isAvailable)

    /// How a person reads it.
    public var displayName: String { self == .aesGCM ? "AES-256-GCM" : "ChaCha20-Poly1305" }

    /// Whether this process can use it (`crypto_aead_aes256gcm_is_available`).
    public var isAvailable: Bool {
        switch self {
        case .chaChaPoly: return true
        case .aesGCM: return (try? Sodium.ensureInitialised()) != nil && crypto_aead_aes256gcm_is_available() == 1
        }
    }
}

/// Noise §5.1 CipherState. The 96-bit nonce is 32 zero bits then the 64-bit
/// counter, little-endian for ChaChaPoly (§12.3), big-endian for AESGCM (§12.4).
public struct NoiseCipherState: Sendable {
    let cipher: NoiseCipher
    private(set) var key: SecretBytes?
    /// AES-GCM's key schedule (libsodium's `crypto_aead_aes256gcm_state`, 16-byte
    /// aligned as `SecretBytes` are), made once a key rather than once a message.
    private var schedule: SecretBytes?
    public private(set) var nonce: UInt64 = 0

    init(cipher: NoiseCipher = .chaChaPoly, key: [UInt8]? = nil) {
        self.cipher = cipher
        setKey(key.map { SecretBytes(copying: $0.prefix(32)) })
    }

    private mutating func setKey(_ key: SecretBytes?) {
        self.key = key
        schedule = nil
        guard let key, cipher == .aesGCM else { return }
        schedule = SecretBytes(count: crypto_aead_aes256gcm_statebytes()) { state in
            key.withUnsafeBytes { k in
                _ = crypto_aead_aes256gcm_beforenm(
                    state.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// The 12-byte nonce for counter `n`, on the stack for the call.
    private func withNonce<R>(_ n: UInt64, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        let counter = cipher == .aesGCM ? n.bigEndian : n.littleEndian
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { npub in
            npub.initialize(repeating: 0)
            withUnsafeBytes(of: counter) { UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(npub)[4...]).copyMemory(from: $0) }
            return body(UnsafePointer(npub.baseAddress!))
        }
    }

    /// ENCRYPT(k, n, ad, plaintext) into `out` (plaintext + 16 bytes).
    private func seal(_ out: UnsafeMutablePointer<UInt8>, _ plaintext: [UInt8], ad: [UInt8], nonce n: UInt64, key: SecretBytes) {
        withNonce(n) { npub in
            var written: UInt64 = 0
            if let schedule {
                schedule.withUnsafeBytes { s in
                    _ = crypto_aead_aes256gcm_encrypt_afternm(
                        out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, npub,
                        s.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
                }
            } else {
                key.withUnsafeBytes { k in
                    _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                        out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, npub,
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
    }

    /// DECRYPT(k, n, ad, ciphertext) into `out`; 0 when it opened.
    private func open(_ out: UnsafeMutablePointer<UInt8>, _ ciphertext: [UInt8], ad: [UInt8], nonce n: UInt64, key: SecretBytes) -> Int32 {
        withNonce(n) { npub in
            var written: UInt64 = 0
            if let schedule {
                return schedule.withUnsafeBytes { s in
                    crypto_aead_aes256gcm_decrypt_afternm(
                        out, &written, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), npub,
                        s.baseAddress!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
                }
            }
            return key.withUnsafeBytes { k in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    out, &written, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), npub,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    mutating func encrypt(ad: [UInt8], _ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let key else { return plaintext }
        // §5.1: 2^64 - 1 is reserved; a link must end before it.
        guard nonce < UInt64.max else { throw .noise(.nonceExhausted) }
        // Not zeroed first: the cipher writes every byte (a link's 64 KiB chunks, once per link).
        let out = [UInt8](unsafeUninitializedCapacity: plaintext.count + Noise.tagLength) { o, count in
            seal(o.baseAddress!, plaintext, ad: ad, nonce: nonce, key: key)
            count = o.count
        }
        nonce += 1
        return out
    }

    mutating func decrypt(ad: [UInt8], _ ciphertext: [UInt8], message: Int) throws(CryptoError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw .noise(.nonceExhausted) }
        guard ciphertext.count >= Noise.tagLength else { throw .noise(.messageTooShort) }
        let length = ciphertext.count - Noise.tagLength
        var rc: Int32 = -1
        // One spare byte so the buffer has an address even for an empty
        // plaintext; not zeroed first, and nothing of it kept unless it opened.
        let out = [UInt8](unsafeUninitializedCapacity: length + 1) { o, count in
            rc = open(o.baseAddress!, ciphertext, ad: ad, nonce: nonce, key: key)
            count = rc == 0 ? length : 0
        }
        guard rc == 0 else { throw .noise(.decryptFailed(message: message)) }
        nonce += 1
        return out
    }

    /// §11.3 Rekey, the default: k = first 32 bytes of ENCRYPT(k, 2^64 - 1, zerolen, zeros).
    mutating func rekey() {
        guard let key else { return }
        var out = [UInt8](repeating: 0, count: 32 + Noise.tagLength)
        out.withUnsafeMutableBufferPointer { o in
            seal(o.baseAddress!, [UInt8](repeating: 0, count: 32), ad: [], nonce: UInt64.max, key: key)
        }
        setKey(SecretBytes(copying: out.prefix(32)))
        sodium_memzero(&out, out.count)
    }
}

/// Noise §5.2 SymmetricState.
struct NoiseSymmetricState {
    var chainingKey: [UInt8]
    var h: [UInt8]
    var cipher: NoiseCipherState
    /// The cipher function every key here is made for (the state's own, keyed or not).
    var cipherFunction: NoiseCipher { cipher.cipher }

    init(protocolName: String, cipher: NoiseCipher) {
        self.cipher = NoiseCipherState(cipher: cipher)
        let name = Array(protocolName.utf8)
        h = name.count <= Noise.hashLength ? name + [UInt8](repeating: 0, count: Noise.hashLength - name.count) : Noise.hash(name)
        chainingKey = h
    }

    mutating func mixKey(_ ikm: [UInt8]) {
        let out = Noise.hkdf(chainingKey: chainingKey, ikm, outputs: 2)
        chainingKey = out[0]
        cipher = NoiseCipherState(cipher: cipherFunction, key: Array(out[1].prefix(32)))
    }

    mutating func mixHash(_ data: [UInt8]) { h = Noise.hash(h + data) }

    mutating func mixKeyAndHash(_ ikm: [UInt8]) {
        let out = Noise.hkdf(chainingKey: chainingKey, ikm, outputs: 3)
        chainingKey = out[0]
        mixHash(out[1])
        cipher = NoiseCipherState(cipher: cipherFunction, key: Array(out[2].prefix(32)))
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
        return (NoiseCipherState(cipher: cipherFunction, key: Array(out[0].prefix(32))), NoiseCipherState(cipher: cipherFunction, key: Array(out[1].prefix(32))))
    }
}
