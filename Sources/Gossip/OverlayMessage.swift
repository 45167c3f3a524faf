import Crypto

/// A peer as the overlay names it to others: its identity and where it
/// listens (IPv4 and port). An address learned this way is only ever dialled
/// expecting that identity, so a made-up entry costs one failed dial.
public struct OverlayPeer: Hashable, Sendable, Comparable {
    public let identity: PublicKey
    /// IPv4, four bytes in network order.
    public let address: [UInt8]
    public let port: UInt16

    /// Bytes of one entry on the wire: identity 32 ‖ IPv4 4 ‖ port 2.
    public static let size = 38

    public init(identity: PublicKey, address: [UInt8], port: UInt16) {
        self.identity = identity
        self.address = address
        self.port = port
    }

    /// `host` must be a dotted IPv4 address ("10.0.0.7"); nil otherwise.
    public init?(identity: PublicKey, host: String, port: UInt16) {
        guard let address = Self.ipv4(host) else { return nil }
        self.init(identity: identity, address: address, port: port)
    }

    /// The dotted form of the address.
    public var host: String { address.map(String.init).joined(separator: ".") }

    /// "a.b.c.d" as four bytes (nil for anything else: names, IPv6, junk).
    public static func ipv4(_ host: String) -> [UInt8]? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt8(part) else { return nil }
            out.append(v)
        }
        return out
    }

    public static func < (a: OverlayPeer, b: OverlayPeer) -> Bool {
        a.identity != b.identity ? a.identity < b.identity : (a.address, a.port) < (b.address, b.port)
    }
}

private func < (a: ([UInt8], UInt16), b: ([UInt8], UInt16)) -> Bool {
    a.0 != b.0 ? a.0.lexicographicallyPrecedes(b.0) : a.1 < b.1
}

/// The membership messages of the overlay (gossip type 8, docs/PROTOCOL.md
/// §11, "Overlay"), in the manner of HyParView (Leitão, Pereira, Rodrigues
/// 2007). Each goes on the link to the peer it concerns; `port` is where the
/// sender accepts links (0: nowhere), the host being the link's address.
public enum OverlayMessage: Equatable, Sendable {
    /// "Take me into the overlay" (a new node's first link).
    case join(port: UInt16)
    /// `peer` joins; take it, or pass it on (`ttl` steps left).
    case forwardJoin(OverlayPeer, ttl: UInt8)
    /// "Keep this link" (`urgent`: I have no other link; it must be taken).
    case neighbor(urgent: Bool, port: UInt16)
    case neighborReply(accepted: Bool)
    /// "I drop this link" (`alive`: I am not going away).
    case disconnect(alive: Bool)
    /// A sample of the sender's views, answered by the receiver with its own.
    case shuffle([OverlayPeer])
    case shuffleReply([OverlayPeer])
    /// "My user asked for this link (`--peer`)": kept outside the bound,
    /// within the receiver's `maximumPinned`.
    case keep(port: UInt16)

    /// Entries in one shuffle or shuffle reply.
    public static let maximumPeers = 8
    /// Longest join walk a message may ask for.
    public static let maximumTTL: UInt8 = 6

    enum Kind: UInt8 {
        case join = 1, forwardJoin = 2, neighbor = 3, neighborReply = 4, disconnect = 5, shuffle = 6, shuffleReply = 7, keep = 8
    }

    func write(to w: inout ByteWriter) {
        switch self {
        case let .join(port):
            w.u8(Kind.join.rawValue)
            w.u16(port)
        case let .forwardJoin(peer, ttl):
            w.u8(Kind.forwardJoin.rawValue)
            Self.write(peer, to: &w)
            w.u8(ttl)
        case let .neighbor(urgent, port):
            w.u8(Kind.neighbor.rawValue)
            w.u8(urgent ? 1 : 0)
            w.u16(port)
        case let .neighborReply(accepted):
            w.u8(Kind.neighborReply.rawValue)
            w.u8(accepted ? 1 : 0)
        case let .disconnect(alive):
            w.u8(Kind.disconnect.rawValue)
            w.u8(alive ? 1 : 0)
        case let .shuffle(peers):
            w.u8(Kind.shuffle.rawValue)
            Self.write(peers, to: &w)
        case let .shuffleReply(peers):
            w.u8(Kind.shuffleReply.rawValue)
            Self.write(peers, to: &w)
        case let .keep(port):
            w.u8(Kind.keep.rawValue)
            w.u16(port)
        }
    }

    static func read(_ r: inout ByteReader) throws(EnvelopeError) -> OverlayMessage {
        let byte = try r.u8("overlay kind")
        guard let kind = Kind(rawValue: byte) else { throw .unknownKind(byte) }
        switch kind {
        case .join: return .join(port: try r.u16("port"))
        case .forwardJoin:
            let peer = try readPeer(&r)
            let ttl = try r.u8("ttl")
            guard ttl <= maximumTTL else { throw .tooLarge(size: Int(ttl), limit: Int(maximumTTL)) }
            return .forwardJoin(peer, ttl: ttl)
        case .neighbor:
            let urgent = try flag(&r, "urgent")
            return .neighbor(urgent: urgent, port: try r.u16("port"))
        case .neighborReply: return .neighborReply(accepted: try flag(&r, "accepted"))
        case .disconnect: return .disconnect(alive: try flag(&r, "alive"))
        case .shuffle: return .shuffle(try readPeers(&r))
        case .shuffleReply: return .shuffleReply(try readPeers(&r))
        case .keep: return .keep(port: try r.u16("port"))
        }
    }

    private static func write(_ peer: OverlayPeer, to w: inout ByteWriter) {
        w.raw(peer.identity.bytes)
        w.raw(peer.address)
        w.u16(peer.port)
    }

    private static func write(_ peers: [OverlayPeer], to w: inout ByteWriter) {
        w.u8(UInt8(clamping: peers.count))
        for peer in peers.prefix(Int(UInt8.max)) { write(peer, to: &w) }
    }

    private static func readPeer(_ r: inout ByteReader) throws(EnvelopeError) -> OverlayPeer {
        let identity = try GossipMessage.key(r.take(32, "peer identity"))
        let address = Array(try r.take(4, "peer address"))
        let port = try r.u16("peer port")
        // A peer that listens nowhere cannot be dialled: no use to anyone.
        guard port != 0 else { throw .badValue(field: "peer port", 0) }
        return OverlayPeer(identity: identity, address: address, port: port)
    }

    private static func readPeers(_ r: inout ByteReader) throws(EnvelopeError) -> [OverlayPeer] {
        let count = try r.u8("peer count")
        guard count <= maximumPeers else { throw .tooLarge(size: Int(count), limit: maximumPeers) }
        var peers: [OverlayPeer] = []
        for _ in 0..<count { peers.append(try readPeer(&r)) }
        return peers
    }

    /// A boolean byte: 0 or 1, nothing else.
    private static func flag(_ r: inout ByteReader, _ field: String) throws(EnvelopeError) -> Bool {
        let v = try r.u8(field)
        guard v <= 1 else { throw .badValue(field: field, UInt64(v)) }
        return v == 1
    }
}
