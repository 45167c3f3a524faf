import CSodium

/// XChaCha20-Poly1305 (IETF, libsodium `crypto_aead_xchacha20poly1305_ietf_*`)
/// over raw buffers: the one place both room keys (`SymmetricKey`, whose
/// output carries its random nonce) and file keys (`FileKey`, whose nonce
/// is the chunk's index) seal and open.
enum XChaCha {
    static let tagByteCount = 16

    /// Seals `plaintext` into `out` (room for it and the tag).
    static func seal(_ plaintext: UnsafeRawBufferPointer, ad: [UInt8], nonce: UnsafePointer<UInt8>, key: SecretBytes,
                     into out: UnsafeMutablePointer<UInt8>) {
        key.withUnsafeBytes { k in
            var written: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                out, &written, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                ad, UInt64(ad.count), nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Opens `sealed` (ciphertext and tag, at least the tag); nil when
    /// anything changed, or it was sealed under another key, nonce or `ad`.
    static func open(_ sealed: UnsafeBufferPointer<UInt8>, ad: [UInt8], nonce: UnsafePointer<UInt8>, key: SecretBytes) -> [UInt8]? {
        var plain = [UInt8](repeating: 0, count: sealed.count - tagByteCount)
        let result = key.withUnsafeBytes { k in
            plain.withUnsafeMutableBufferPointer { p in
                var written: UInt64 = 0
                return crypto_aead_xchacha20poly1305_ietf_decrypt(
                    p.baseAddress ?? UnsafeMutablePointer(mutating: sealed.baseAddress!), &written, nil,
                    sealed.baseAddress!, UInt64(sealed.count), ad, UInt64(ad.count),
                    nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return result == 0 ? plain : nil
    }
}
