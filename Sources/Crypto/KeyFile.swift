#if canImport(Glibc)
import Glibc
#endif

/// Key files: a fixed 8-byte magic, then the key bytes. Created 0600 and
/// never overwritten; refused on load when group or others can read them,
/// when truncated, or when they are some other kind of file.
///
/// Identity (`identity.key`, 72 bytes): "PNID\x01\0\0\0" ‖ Ed25519 seed (32) ‖ public key (32).
/// Network  (40 bytes):                  "PNNK\x01\0\0\0" ‖ network key (32).
public enum KeyFile {
    static let identityMagic: [UInt8] = [0x50, 0x4e, 0x49, 0x44, 0x01, 0, 0, 0]
    static let networkMagic: [UInt8] = [0x50, 0x4e, 0x4e, 0x4b, 0x01, 0, 0, 0]
    public static let identityFileSize = 8 + 32 + 32
    public static let networkFileSize = 8 + 32
    /// Permission bits of every key file this module creates.
    public static let mode: mode_t = 0o600

    // MARK: identity

    /// Loads the identity at `path`, or creates a new one there when no file
    /// exists. Returns the key and whether it was created.
    public static func loadOrCreateIdentity(at path: String) throws(CryptoError) -> (key: SigningKey, created: Bool) {
        do {
            return (try loadIdentity(at: path), false)
        } catch .keyFile(_, .missing) {
            let key = try SigningKey.generate()
            do {
                try writeIdentity(key, to: path)
                return (key, true)
            } catch .keyFile(_, .alreadyExists) {
                // Another process created it between our load and write: use theirs.
                return (try loadIdentity(at: path), false)
            }
        }
    }

    public static func loadIdentity(at path: String) throws(CryptoError) -> SigningKey {
        let contents = try readSecret(path: path, magic: identityMagic, size: identityFileSize)
        let stored = contents.withUnsafeBytes { Array($0[(8 + 32)..<identityFileSize]) }
        let seed = contents.withUnsafeBytes { SecretBytes(copying: $0[8..<(8 + 32)]) }
        let key = try SigningKey(seed: seed)
        guard key.publicKey.bytes == stored else { throw .keyFile(path: path, problem: .corrupt) }
        return key
    }

    public static func writeIdentity(_ key: SigningKey, to path: String) throws(CryptoError) {
        let contents = SecretBytes(count: identityFileSize) { out in
            out.copyBytes(from: identityMagic)
            key.withSeed { seed in
                UnsafeMutableRawBufferPointer(rebasing: out[8..<40]).copyMemory(from: seed)
            }
            UnsafeMutableRawBufferPointer(rebasing: out[40..<72]).copyBytes(from: key.publicKey.bytes)
        }
        try writeNew(path: path, contents: contents)
    }

    // MARK: network key

    public static func loadNetworkKey(at path: String) throws(CryptoError) -> NetworkKey {
        let contents = try readSecret(path: path, magic: networkMagic, size: networkFileSize)
        return NetworkKey(secret: contents.withUnsafeBytes { SecretBytes(copying: $0[8..<networkFileSize]) })
    }

    public static func writeNetworkKey(_ key: NetworkKey, to path: String) throws(CryptoError) {
        let contents = SecretBytes(count: networkFileSize) { out in
            out.copyBytes(from: networkMagic)
            key.secret.withUnsafeBytes { k in
                UnsafeMutableRawBufferPointer(rebasing: out[8..<40]).copyMemory(from: k)
            }
        }
        try writeNew(path: path, contents: contents)
    }

    // MARK: file access

    /// Reads exactly `size` bytes into zeroed-on-release memory, after
    /// checking the file is regular, private, and of the right kind.
    static func readSecret(path: String, magic: [UInt8], size: Int) throws(CryptoError) -> SecretBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            let e = errno
            throw .keyFile(path: path, problem: e == ENOENT ? .missing : .io(operation: "opening", errno: e))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .keyFile(path: path, problem: .io(operation: "stat of", errno: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .keyFile(path: path, problem: .notRegularFile) }
        guard info.st_mode & 0o077 == 0 else {
            throw .keyFile(path: path, problem: .tooOpen(mode: UInt32(info.st_mode & 0o7777)))
        }
        // One byte more than expected tells "too long" from "just right".
        var readError: Int32 = 0
        var total = 0
        let buffer = SecretBytes(count: size + 1) { out in
            while total < out.count {
                let n = read(fd, out.baseAddress! + total, out.count - total)
                if n < 0 {
                    if errno == EINTR { continue }
                    readError = errno
                    return
                }
                if n == 0 { break }
                total += n
            }
        }
        if readError != 0 { throw .keyFile(path: path, problem: .io(operation: "reading", errno: readError)) }
        let magicMatches = buffer.withUnsafeBytes { Array($0[0..<min(total, magic.count)]) == Array(magic.prefix(total)) }
        guard magicMatches else { throw .keyFile(path: path, problem: .wrongFormat) }
        if total > size { throw .keyFile(path: path, problem: .tooLong(expected: size)) }
        if total < size { throw .keyFile(path: path, problem: .truncated(actual: total, expected: size)) }
        return buffer.withUnsafeBytes { SecretBytes(copying: $0[0..<size]) }
    }

    /// Writes `bytes` to a private file (mode 0600) as `writeNew` does; with
    /// `replacing`, over a file that exists (renamed over it, so a reader
    /// sees the old contents or the new, never part of them). For small
    /// private files that are not keys: the web page's token and address.
    public static func writePrivate(_ bytes: [UInt8], to path: String, replacing: Bool) throws(CryptoError) {
        try writeNew(path: path, contents: SecretBytes(copying: bytes), replacing: replacing)
    }

    /// Writes a new file atomically with mode 0600: a temporary file is
    /// written and fsynced, then hard-linked to `path`, which fails rather
    /// than replace a file that exists (`replacing`: renamed over it).
    static func writeNew(path: String, contents: SecretBytes, replacing: Bool = false) throws(CryptoError) {
        let temporary = "\(path).tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw .keyFile(path: path, problem: .io(operation: "creating", errno: errno)) }
        defer { unlink(temporary) }
        // The umask cannot widen 0600, but a restrictive one could narrow it.
        fchmod(fd, mode)
        var writeError: Int32 = 0
        contents.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    writeError = errno
                    return
                }
                done += n
            }
        }
        if writeError == 0 && fsync(fd) != 0 { writeError = errno }
        close(fd)
        if writeError != 0 { throw .keyFile(path: path, problem: .io(operation: "writing", errno: writeError)) }
        guard (replacing ? rename(temporary, path) : link(temporary, path)) == 0 else {
            let e = errno
            throw .keyFile(path: path, problem: e == EEXIST ? .alreadyExists : .io(operation: "creating", errno: e))
        }
        syncDirectory(of: path)
    }

    static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
