import Crypto
import Gossip

/// What the node keeps for its overlay beside `Membership` (pure): where
/// each peer it may link to listens, messages waiting for a peer's link,
/// the links kept outside the bound, links nobody has claimed yet, and the
/// budget of membership messages each link may send. `LinkCore+Overlay.swift`
/// joins it to the links.
public struct Overlay {
    public struct Configuration: Sendable {
        /// Links the membership keeps at most (`--max-links`); 0: no bound,
        /// every peer found is linked (the full mesh of earlier builds).
        public var maximumLinks = Overlay.defaultLinks
        /// Peers known and not linked, kept at most.
        public var passiveSize = Overlay.defaultPassive
        /// Links kept because a peer's user asked for them (`keep`), beyond the bound.
        public var maximumPinned = Overlay.defaultPinned
        /// Where we accept links (0: nowhere), told to peers in join and neighbour requests.
        public var port: UInt16 = 0
        public init() {}

        /// Whether the membership bounds the links (else: the full mesh).
        public var bounded: Bool { maximumLinks > 0 }
    }

    /// Default bound on a node's links (`--max-links`).
    public static let defaultLinks = 6
    /// A relay's default: it links LANs and holds links for nodes that come and go.
    public static let relayLinks = 32
    public static let defaultPassive = 36
    public static let defaultPinned = 64
    /// A relay's: every machine that names it with `--peer` keeps its link.
    public static let relayPinned = 1_024
    /// Seconds a link may stay up without its peer being a neighbour, one
    /// asked, or kept: then it is closed. A peer asks right after the
    /// handshake; the grace covers a loaded machine and a request that crossed ours.
    public static let claimGrace = 5.0
    /// Seconds between two offers of the peers discovery knows to the
    /// membership again (after they left its views).
    public static let rediscoverInterval = 30.0
    /// Membership messages a link may send at once, and per second after that;
    /// more are dropped and counted (`overlay_messages_limited`).
    public static let messageBurst = 32.0
    public static let messageRate = 2.0
    /// Joins taken from one peer at most once in this many seconds.
    public static let joinInterval = 60.0
    /// Messages waiting for one peer's link, at most.
    public static let maximumOutbox = 8
    /// Addresses remembered at once (peers in the views, found by discovery, or waiting).
    public static let maximumAddresses = 4_096
    /// Dials the overlay has on their way at once, past which a forwardJoin
    /// (the one message that makes a node dial a third party) is dropped: a
    /// dial to an address that never answers holds a socket until the
    /// handshake timeout, and a member could otherwise name thousands.
    public static let maximumDialsInFlight = 16

    public internal(set) var configuration: Configuration
    public internal(set) var membership: Membership<PublicKey>
    /// Where each peer listens, as discovery found it or a peer told us.
    public internal(set) var addresses: [PublicKey: OverlayPeer] = [:]
    /// Peers discovery has heard (until they expire), and when last offered to the membership.
    var discovered: [PublicKey: Double] = [:]
    var outbox: [PublicKey: [OverlayMessage]] = [:]
    /// Peers whose links are kept outside the bound: our `--peer` links, and peers that asked (`keep`).
    public internal(set) var pinned: Set<PublicKey> = []
    /// Links up that no membership message has claimed yet, since when.
    var unclaimed: [LinkID: Double] = [:]
    /// Membership messages each link may still send, and when that was worked out.
    var budget: [LinkID: TokenBucket] = [:]
    /// When each peer's last join was taken.
    var joinedAt: [PublicKey: Double] = [:]
    var lastRediscover = 0.0

    public init(me: PublicKey, configuration: Configuration, random: some RandomNumberGenerator) {
        self.configuration = configuration
        membership = Membership(me: me, configuration: Self.membershipSettings(configuration), random: random)
    }

    /// How the node sets its membership core (the simulator sets its own alike):
    /// shuffles answered by the neighbour they are sent to, as their replies go
    /// back on the link they came on.
    public static func membershipSettings<Peer>(_ configuration: Configuration) -> Membership<Peer>.Configuration {
        var settings = Membership<Peer>.Configuration()
        settings.activeSize = max(1, configuration.maximumLinks)
        settings.passiveSize = configuration.passiveSize
        settings.shuffleWalk = 1
        return settings
    }

    /// Whether `peer` is a neighbour, or asked to be one.
    public func isNeighbourOrAsked(_ peer: PublicKey) -> Bool {
        membership.active.contains(peer) || membership.requested[peer] != nil
    }

    /// Whether we keep a link to `peer` now: a neighbour, one asked, or kept (`--peer`, `keep`).
    public func wants(_ peer: PublicKey) -> Bool { isNeighbourOrAsked(peer) || pinned.contains(peer) }

    /// Forgets joins taken longer ago than `joinInterval` (they limit nothing
    /// any more; without this, every identity that ever joined stayed).
    mutating func forgetOldJoins(now: Double) {
        joinedAt = joinedAt.filter { now - $0.value < Self.joinInterval }
    }

    /// Remembers where `peer` listens; an address from discovery is not
    /// replaced by one a peer told us.
    mutating func learn(_ peer: OverlayPeer, fromDiscovery: Bool) {
        guard peer.identity != membership.me, peer.port != 0 else { return }
        if !fromDiscovery, discovered[peer.identity] != nil, addresses[peer.identity] != nil { return }
        if addresses[peer.identity] == nil, addresses.count >= Self.maximumAddresses { forgetUnused() }
        guard addresses[peer.identity] != nil || addresses.count < Self.maximumAddresses else { return }
        addresses[peer.identity] = peer
    }

    /// Drops the addresses of peers in no view, not discovered and not waited for.
    mutating func forgetUnused() {
        let m = membership
        addresses = addresses.filter { key, _ in
            m.active.contains(key) || m.passive.contains(key) || m.requested[key] != nil || discovered[key] != nil
                || outbox[key] != nil || pinned.contains(key)
        }
    }

    /// Spends one message of `link`'s budget (false: over it, drop the message).
    mutating func spend(_ link: LinkID, now: Double) -> Bool {
        var b = budget[link] ?? TokenBucket(capacity: Self.messageBurst, now: now)
        defer { budget[link] = b }
        return b.take(now: now, rate: Self.messageRate, capacity: Self.messageBurst)
    }

    /// Queues a message for `peer`'s next link (false: its outbox is full).
    mutating func queue(_ message: OverlayMessage, for peer: PublicKey) -> Bool {
        var waiting = outbox[peer] ?? []
        guard waiting.count < Self.maximumOutbox else { return false }
        waiting.append(message)
        outbox[peer] = waiting
        return true
    }
}
