/// Every way the `Crypto` module can fail. No function in this module returns
/// `nil` or `false` to mean "failed": it throws one of these, so the caller
/// (and a log line) knows why.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `sodium_init()` failed: libsodium cannot be used in this process.
    case libraryUnavailable
    /// A key, nonce, signature or hash had the wrong number of bytes.
    case badKeyLength(what: String, expected: Int, actual: Int)
    /// An Ed25519 signature did not verify for this key and message.
    case badSignature
    /// A public key is not a valid Ed25519 point (cannot be converted to X25519).
    case badPublicKey
    /// Authenticated decryption failed: wrong key, wrong associated data, or
    /// the ciphertext was changed.
    case decryptionFailed
    /// A sealed message is shorter than its nonce and tag.
    case ciphertextTooShort(minimum: Int, actual: Int)
    /// A key file could not be used; `problem` says why.
    case keyFile(path: String, problem: KeyFileProblem)
    /// Text that should have been hexadecimal was not.
    case badHex
    /// The Noise handshake or transport failed; `NoiseFailure` says how.
    case noise(NoiseFailure)

    public var description: String {
        switch self {
        case .libraryUnavailable:
            return "libsodium could not be initialised"
        case let .badKeyLength(what, expected, actual):
            return "\(what) must be \(expected) bytes, got \(actual)"
        case .badSignature:
            return "signature does not verify"
        case .badPublicKey:
            return "public key is not a valid Ed25519 point"
        case .decryptionFailed:
            return "decryption failed (wrong key or tampered ciphertext)"
        case let .ciphertextTooShort(minimum, actual):
            return "ciphertext is \(actual) bytes, shorter than the minimum \(minimum)"
        case let .keyFile(path, problem):
            return problem.message(path: path)
        case .badHex:
            return "not a hexadecimal string"
        case let .noise(failure):
            return "link handshake: \(failure)"
        }
    }
}

/// Why a Noise handshake or transport message was refused.
public enum NoiseFailure: Equatable, Sendable, CustomStringConvertible {
    /// A message arrived (or was asked for) out of turn.
    case outOfOrder
    case messageTooShort
    /// Noise messages are at most 65 535 bytes (Noise §3).
    case messageTooLong(Int)
    /// Authenticated decryption failed at this handshake message (1-3) or in
    /// transport (0): at message 1 this means another network key (PSK).
    case decryptFailed(message: Int)
    /// The payload's Ed25519 identity does not convert to the static key seen.
    case identityMismatch
    /// The payload's signature over the handshake hash does not verify.
    case badIdentitySignature
    case badPayload
    /// A Diffie-Hellman result was all zeros (a low-order point).
    case weakKey
    /// 2^64 - 1 messages under one key (Noise §5.1): the link must end.
    case nonceExhausted
    /// The cipher asked for is not one this CPU runs (AES-GCM without AES instructions).
    case cipherUnavailable(String)

    public var description: String {
        switch self {
        case .outOfOrder: return "message out of order"
        case .messageTooShort: return "message too short"
        case let .messageTooLong(n): return "message of \(n) bytes exceeds 65535"
        case let .decryptFailed(m): return m == 1 ? "wrong network key (message 1 does not decrypt)" : m == 0 ? "transport message does not decrypt" : "message \(m) does not decrypt"
        case .identityMismatch: return "identity does not match the Noise static key"
        case .badIdentitySignature: return "identity signature over the handshake hash does not verify"
        case .badPayload: return "malformed handshake payload"
        case .weakKey: return "low-order Diffie-Hellman key"
        case .nonceExhausted: return "nonce space exhausted"
        case let .cipherUnavailable(name): return "cipher \(name) is not available on this CPU"
        }
    }
}

/// Why a key file was refused. The messages say which file and what to do,
/// the way ssh does.
public enum KeyFileProblem: Equatable, Sendable {
    case missing
    /// Group or others may read or write the file (mode bits given).
    case tooOpen(mode: UInt32)
    case notRegularFile
    case truncated(actual: Int, expected: Int)
    case tooLong(expected: Int)
    /// The file does not start with the magic bytes of this kind of key.
    case wrongFormat
    /// The stored public key does not match the secret key.
    case corrupt
    case alreadyExists
    case io(operation: String, errno: Int32)

    func message(path: String) -> String {
        switch self {
        case .missing:
            return "key file '\(path)' does not exist"
        case let .tooOpen(mode):
            let octal = String(mode & 0o777, radix: 8)
            return "permissions 0\(octal) for '\(path)' are too open: a key file must not be "
                + "readable by group or others. Fix it with: chmod 600 '\(path)'"
        case .notRegularFile:
            return "key file '\(path)' is not a regular file"
        case let .truncated(actual, expected):
            return "key file '\(path)' is truncated (\(actual) of \(expected) bytes): restore it "
                + "from a backup, or move it away to start over with a new key"
        case let .tooLong(expected):
            return "key file '\(path)' is longer than the \(expected) bytes of a key file: "
                + "it is not a peernode key; move it away or name another file"
        case .wrongFormat:
            return "'\(path)' is not a peernode key file of this kind (wrong magic bytes): "
                + "move it away or name another file"
        case .corrupt:
            return "key file '\(path)' is corrupt (its public key does not match its secret key): "
                + "restore it from a backup, or move it away to start over with a new key"
        case .alreadyExists:
            return "'\(path)' already exists; peernode never overwrites a key file: "
                + "choose another name or remove it first"
        case let .io(operation, errno):
            return "\(operation) '\(path)' failed: \(String(cString: strerror(errno)))"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
