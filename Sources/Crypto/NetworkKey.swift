import CSodium

/// The 32 bytes every node of one chat network shares. Nodes without it can
/// neither read discovery announcements nor complete a link handshake, and
/// public room keys are derived from it.
public struct NetworkKey: Sendable {
    public static let byteCount = 32
    /// The network name used when none is configured: zero-configuration LAN chat.
    public static let defaultName = "lan"

    let secret: SecretBytes

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        try Sodium.checkLength("network key", bytes, Self.byteCount)
        secret = SecretBytes(copying: bytes)
    }

    init(secret: SecretBytes) { self.secret = secret }

    /// A random network key (`peernode network new FILE`).
    public static func generate() -> NetworkKey {
        _ = try? Sodium.ensureInitialised()
        return NetworkKey(secret: SecretBytes(count: byteCount) { randombytes_buf($0.baseAddress!, $0.count) })
    }

    /// The key of a named network: BLAKE2b-256("peernode/1 network-key" ‖ 0 ‖ name).
    /// Anyone who knows the name has the key: a name keeps networks apart, it
    /// does not keep them private (use `generate` and a key file for that).
    public static func derived(fromName name: String) -> NetworkKey {
        let bytes = BLAKE2b.derive(label: "peernode/1 network-key", Array(name.utf8))
        return NetworkKey(secret: SecretBytes(copying: bytes))
    }

    /// A keyed BLAKE2b-256 of `label ‖ 0 ‖ input` under the network key: the
    /// one derivation every network-scoped value (room ids, room keys,
    /// discovery keys) goes through.
    public func derive(label: String, _ input: some Collection<UInt8>) -> [UInt8] {
        let message = Array(label.utf8) + [0] + Array(input)
        return secret.withUnsafeBytes { k in
            BLAKE2b.hash(message, outputLength: 32, keyPointer: k.baseAddress!.assumingMemoryBound(to: UInt8.self), keyLength: k.count)
        }
    }

    /// The key of a public room: derive("peernode/1 room-key", room name).
    public func publicRoomKey(roomName: String) -> SymmetricKey {
        let bytes = derive(label: "peernode/1 room-key", Array(roomName.utf8))
        return SymmetricKey(secret: SecretBytes(copying: bytes))
    }

    /// The raw 32 bytes, for handing the key to another implementation
    /// (test peers) or a file; never log them.
    public var exportedBytes: [UInt8] { secret.withUnsafeBytes { Array($0) } }

    /// Constant-time equality, so tests and config reloads can compare keys.
    public func isSame(as other: NetworkKey) -> Bool { secret.isEqual(to: other.secret) }
}
