import CSodium

/// libsodium must be initialised once before use; `sodium_init` is safe to
/// call from several threads and returns 1 when already done.
enum Sodium {
    private static let initialised: Bool = sodium_init() >= 0

    static func ensureInitialised() throws(CryptoError) {
        guard initialised else { throw .libraryUnavailable }
    }

    /// Fills a new array with `count` bytes from the OS's CSPRNG.
    static func randomBytes(_ count: Int) -> [UInt8] {
        _ = initialised
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }

    static func checkLength(_ what: String, _ bytes: some Collection<UInt8>, _ expected: Int) throws(CryptoError) {
        guard bytes.count == expected else {
            throw .badKeyLength(what: what, expected: expected, actual: bytes.count)
        }
    }
}

/// Random bytes from the operating system's secure generator (for nonces,
/// private room keys, ids).
public func secureRandomBytes(_ count: Int) -> [UInt8] {
    Sodium.randomBytes(count)
}

/// Whether two byte strings are equal, in time that depends only on their
/// lengths (`sodium_memcmp`): for secrets a client presents, such as the
/// web page's token.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { x in b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
}
