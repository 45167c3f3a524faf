import CSodium

/// BLAKE2b (RFC 7693) through libsodium's `crypto_generichash`.
public enum BLAKE2b {
    public static let minimumOutput = 16
    public static let maximumOutput = 64
    public static let minimumKey = 16
    public static let maximumKey = 64

    /// Unkeyed hash. `outputLength` must be 16…64 bytes; the callers in this
    /// project pass constants, so a bad length is a programming error and
    /// gives the nearest valid length instead of trapping.
    public static func hash(_ data: some Collection<UInt8>, outputLength: Int = 32) -> [UInt8] {
        hash(data, outputLength: outputLength, keyPointer: nil, keyLength: 0)
    }

    /// Keyed hash (a MAC / PRF). The key must be 16…64 bytes.
    public static func hash(
        _ data: some Collection<UInt8>, key: some Collection<UInt8>, outputLength: Int = 32
    ) throws(CryptoError) -> [UInt8] {
        guard (minimumKey...maximumKey).contains(key.count) else {
            throw .badKeyLength(what: "BLAKE2b key", expected: maximumKey / 2, actual: key.count)
        }
        let k = Array(key)
        return k.withUnsafeBufferPointer { kp in
            hash(data, outputLength: outputLength, keyPointer: kp.baseAddress, keyLength: kp.count)
        }
    }

    static func hash(
        _ data: some Collection<UInt8>, outputLength: Int, keyPointer: UnsafePointer<UInt8>?, keyLength: Int
    ) -> [UInt8] {
        if let out = data.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), outputLength: outputLength, keyPointer: keyPointer, keyLength: keyLength) }) {
            return out
        }
        return Array(data).withUnsafeBytes { hash($0, outputLength: outputLength, keyPointer: keyPointer, keyLength: keyLength) }
    }

    /// Hashes bytes behind a raw pointer without copying them.
    public static func hash(_ data: UnsafeRawBufferPointer, outputLength: Int = 32) -> [UInt8] {
        hash(data, outputLength: outputLength, keyPointer: nil, keyLength: 0)
    }

    /// BLAKE2b-256 of `head ‖ body` without joining them: a file chunk's
    /// leaf (64 KB behind a 9-byte head) was two copies of the chunk before.
    public static func hash(_ head: [UInt8], then body: UnsafeRawBufferPointer) -> [UInt8] {
        _ = try? Sodium.ensureInitialised()
        return withUnsafeTemporaryAllocation(byteCount: crypto_generichash_statebytes(), alignment: 64) { state in
            let s = OpaquePointer(state.baseAddress!)
            crypto_generichash_init(s, nil, 0, 32)
            head.withUnsafeBufferPointer { _ = crypto_generichash_update(s, $0.baseAddress, UInt64($0.count)) }
            if let base = body.baseAddress { crypto_generichash_update(s, base.assumingMemoryBound(to: UInt8.self), UInt64(body.count)) }
            return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
                crypto_generichash_final(s, out.baseAddress!, 32)
                count = 32
            }
        }
    }

    /// The one call into libsodium, written straight into the result: each
    /// envelope that arrives is hashed twice (its body, its id), and a
    /// captured output buffer cost an allocation more each time.
    private static func hash(
        _ data: UnsafeRawBufferPointer, outputLength: Int, keyPointer: UnsafePointer<UInt8>?, keyLength: Int
    ) -> [UInt8] {
        _ = try? Sodium.ensureInitialised()
        let length = min(max(outputLength, minimumOutput), maximumOutput)
        return [UInt8](unsafeUninitializedCapacity: length) { out, count in
            crypto_generichash(out.baseAddress!, length, data.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(data.count),
                               keyPointer, keyLength)
            count = length
        }
    }

    /// A labelled hash for deriving values from public inputs: the label and a
    /// zero byte come before the input, so two purposes never collide.
    public static func derive(label: String, _ input: some Collection<UInt8>, outputLength: Int = 32) -> [UInt8] {
        hash(Array(label.utf8) + [0] + Array(input), outputLength: outputLength)
    }
}

/// Lowercase hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        encode(Array(bytes))
    }

    /// Written into the string's own storage: every id in every JSON line
    /// is encoded, and the byte-by-byte append showed in catch-up profiles.
    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, b) in bytes.enumerated() {
                out[2 * i] = digits[Int(b >> 4)]
                out[2 * i + 1] = digits[Int(b & 0x0f)]
            }
            return bytes.count * 2
        }
    }

    /// The bytes of `text`, or nil when it is not hex: for a caller that
    /// only asks whether it is (`decode` throws `.badHex` instead).
    public static func bytes(_ text: String) -> [UInt8]? {
        do { return try decode(text) } catch { return nil }
    }

    /// Accepts upper or lower case; throws `.badHex` on an odd length or a
    /// character that is not a hex digit.
    public static func decode(_ text: String) throws(CryptoError) -> [UInt8] {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { throw .badHex }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { throw .badHex }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// RFC 4648 base32, lowercase, without padding: fingerprints people read aloud.
public enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = (buffer << 8) | UInt32(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// BLAKE2b-256 over bytes that come in pieces (libsodium's
/// `crypto_generichash_init/update/final`): a file's whole plaintext,
/// hashed as it is read, never held in memory at once.
public final class BLAKE2bStream {
    private let state: UnsafeMutableRawPointer
    private var finished = false

    public init() {
        _ = try? Sodium.ensureInitialised()
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        crypto_generichash_init(OpaquePointer(state), nil, 0, 32)
    }

    deinit { state.deallocate() }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard !finished, let base = bytes.baseAddress else { return }
        crypto_generichash_update(OpaquePointer(state), base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The hash; the stream takes nothing after.
    public func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        guard !finished else { return out }
        finished = true
        crypto_generichash_final(OpaquePointer(state), &out, 32)
        return out
    }
}
