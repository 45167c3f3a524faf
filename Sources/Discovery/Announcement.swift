import Crypto

/// One discovery datagram (docs/PROTOCOL.md §12):
///
///     magic "PNDA" 4 ‖ version 1 ‖ nonce 24 ‖ sealed body ‖ tag 16
///     body = type 1 ‖ node id 32 ‖ port 2 ‖ timestamp 8 ‖ signature 64
///
/// The body is sealed with XChaCha20-Poly1305 under a key derived from the
/// network key (the magic and version are the associated data), so a device
/// without the key can neither read who is there nor forge a datagram. The
/// signature (context "peernode/1 announcement") covers magic ‖ version ‖
/// type ‖ node id ‖ port ‖ timestamp, so a member of the network cannot
/// announce another node's identity either.
public struct Announcement: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        /// "I am here, linkable at this port."
        case announce = 1
        /// "I just started: who is here?" Receivers answer with an announce.
        case query = 2
        /// "`peernode device add` waits for a new device of this account at
        /// this TCP port" (docs/PROTOCOL.md §15, "Finding the adder"). A
        /// node takes no peer from it.
        case linking = 3
    }

    public static let magic: [UInt8] = Array("PNDA".utf8)
    public static let version: UInt8 = 1
    static let bodySize = 1 + PublicKey.byteCount + 2 + 8 + Signature.byteCount
    /// Every version-1 datagram has exactly this size.
    public static let size = magic.count + 1 + SymmetricKey.overhead + bodySize
    /// Datagrams larger than this are dropped unread (`oversized`): room for
    /// later versions, not for floods.
    public static let maximumDatagram = 512

    public let kind: Kind
    public let node: PublicKey
    /// The WebSocket port the node accepts links on (0: it accepts none).
    public let port: UInt16
    /// Milliseconds since 1970 at the sender.
    public let timestamp: UInt64

    public init(kind: Kind, node: PublicKey, port: UInt16, timestamp: UInt64) {
        self.kind = kind
        self.node = node
        self.port = port
        self.timestamp = timestamp
    }

    /// The key that seals datagrams of one network.
    public static func key(for network: NetworkKey) -> SymmetricKey? {
        try? SymmetricKey(bytes: network.derive(label: "peernode/1 discovery", []))
    }

    private var signedFields: [UInt8] {
        var out = Self.magic + [Self.version, kind.rawValue] + node.bytes
        out += [UInt8(port >> 8), UInt8(port & 0xFF)]
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: timestamp >> UInt64(shift))) }
        return out
    }

    /// Signs and seals. `signer` must be the key of `node`.
    public func sealed(by signer: SigningKey, key: SymmetricKey) throws(CryptoError) -> [UInt8] {
        let fields = signedFields
        let signature = signer.sign(fields, context: .announcement)
        let body = Array(fields[(Self.magic.count + 1)...]) + signature
        return Self.magic + [Self.version] + (try key.seal(body, associatedData: Self.magic + [Self.version]))
    }

    /// Why a datagram was dropped; each reason has its own counter.
    public enum Drop: String, Error, Sendable, CaseIterable {
        case oversized, truncated
        case notPeernode = "not_peernode"
        case unknownVersion = "unknown_version"
        /// The tag does not check: another network's key, or changed bytes.
        case foreignNetwork = "foreign_network"
        case malformed
        case badSignature = "bad_signature"
        case stale, replayed
        case own
        case rateLimited = "rate_limited"
        case tableFull = "table_full"
        /// The source address already has `DiscoveryCore.maximumPeersPerSource` entries.
        case sourceFull = "source_full"
    }

    /// Opens and checks a datagram: size, magic, version, tag, layout and
    /// signature, in that order. Nothing in it is trusted before the tag and
    /// the signature are checked.
    public static func open(_ datagram: [UInt8], key: SymmetricKey) -> Result<Announcement, Drop> {
        switch unseal(datagram, key: key) {
        case let .failure(reason): return .failure(reason)
        case let .success((announcement, signature)):
            return announcement.verify(signature) ? .success(announcement) : .failure(.badSignature)
        }
    }

    /// The checks of `open` up to the layout, without the signature (so a
    /// receiver can spend a budget before paying for it): the fields, and
    /// the signature still to check with `verify`.
    public static func unseal(_ datagram: [UInt8], key: SymmetricKey) -> Result<(Announcement, [UInt8]), Drop> {
        guard datagram.count <= maximumDatagram else { return .failure(.oversized) }
        guard datagram.count >= magic.count + 1 else { return .failure(.truncated) }
        guard Array(datagram[0..<magic.count]) == magic else { return .failure(.notPeernode) }
        guard datagram[magic.count] == version else { return .failure(.unknownVersion) }
        guard datagram.count == size else { return .failure(datagram.count < size ? .truncated : .malformed) }
        guard let body = try? key.open(Array(datagram[(magic.count + 1)...]), associatedData: magic + [version]) else {
            return .failure(.foreignNetwork)
        }
        guard body.count == bodySize, let kind = Kind(rawValue: body[0]),
              let node = try? PublicKey(bytes: body[1..<33]) else { return .failure(.malformed) }
        let port = UInt16(body[33]) << 8 | UInt16(body[34])
        let timestamp = body[35..<43].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return .success((Announcement(kind: kind, node: node, port: port, timestamp: timestamp), Array(body[43...])))
    }

    /// Whether `signature` is the node's signature of these fields.
    public func verify(_ signature: [UInt8]) -> Bool {
        (try? node.verify(signature: signature, message: signedFields, context: .announcement)) != nil
    }
}
