import Crypto

/// LAN discovery as a pure state machine: datagrams and time in, datagrams
/// to multicast and peers found or expired out. No sockets, no clocks inside
/// (STYLE.md §1); `now` is wall-clock milliseconds, given by the shell.
///
/// - At start (and when an interface comes up) a node sends a query and an
///   announcement; nodes that hear a query answer with an announcement after
///   a short random delay, so a new node learns everyone within about a second.
/// - Announcements repeat every `announceInterval` with jitter.
/// - A peer that is not linked and has not been heard for `expiry` expires.
/// - Every dropped datagram is counted by reason (`Announcement.Drop`);
///   memory is bounded by `maximumPeers` and `maximumSources`.
public struct DiscoveryCore {
    public enum Action: Equatable, Sendable {
        /// Multicast this datagram on every joined interface.
        case send([UInt8])
        /// A peer appeared (or moved): it accepts links at host:port.
        case found(PublicKey, host: String, port: UInt16)
        /// A peer was not heard for `expiry` and has no link.
        case expired(PublicKey)
    }

    public struct Peer: Equatable, Sendable {
        public var host: String
        public var port: UInt16
        /// When it was last heard (our clock, ms).
        public var lastSeen: UInt64
        /// The newest timestamp it sent (its clock, ms); older ones are replays.
        public var lastTimestamp: UInt64
        public var linked = false
    }

    /// Milliseconds between announcements (each ±`jitter`).
    public static let announceInterval: UInt64 = 5_000
    public static let jitter = 0.2
    /// A silent, unlinked peer expires after three missed announcements.
    public static let expiry: UInt64 = 3 * announceInterval
    /// Datagrams whose timestamp is further than this from our clock are stale.
    public static let maximumSkew: UInt64 = 30_000
    /// An answer to a query waits up to this long (spreads the answers).
    public static let answerDelay: UInt64 = 100
    /// At most one answer per this many milliseconds, however many queries come.
    public static let answerSpacing: UInt64 = 250
    /// Most peers in the table. When it is full, a new node takes the place of
    /// the unlinked peer heard least recently (linked peers are never pushed
    /// out), so made-up identities cannot keep real nodes undiscovered.
    public static let maximumPeers = 256
    /// Most peers in the table from one source address (nodes on one host
    /// share an address; more than this from one is made up). Further new
    /// nodes from it are dropped (`source_full`).
    public static let maximumPeersPerSource = 16
    /// Datagrams that pass the tag check, per source address per second;
    /// more are dropped. Generous, since nodes on one host share an address.
    public static let perSourceLimit = 64
    /// Signature checks per second in all (about 60 ms of one core).
    public static let maximumVerifies = 1_000
    /// Most source addresses tracked per second for the limit above.
    public static let maximumSources = 1_024

    private let signer: SigningKey
    private let key: SymmetricKey?
    public var port: UInt16
    public private(set) var peers: [PublicKey: Peer] = [:]
    public private(set) var drops: [Announcement.Drop: Int] = [:]
    /// Datagrams this node has sent, by kind (for the idle-traffic figure).
    public private(set) var sent: [Announcement.Kind: Int] = [:]
    private var random: any RandomNumberGenerator
    private var nextAnnounce: UInt64 = 0
    private var answerAt: UInt64?
    private var lastAnswer: UInt64?
    private var lastTimestamp: UInt64 = 0
    private var window: UInt64 = 0
    private var perSource: [String: Int] = [:]
    private var verifiesThisSecond = 0

    public init(signer: SigningKey, network: NetworkKey, port: UInt16, random: some RandomNumberGenerator) {
        self.signer = signer
        key = Announcement.key(for: network)
        self.port = port
        self.random = random
    }

    public var me: PublicKey { signer.publicKey }

    /// Start, or an interface came up: ask who is there and say who we are.
    public mutating func start(now: UInt64) -> [Action] {
        nextAnnounce = jittered(now)
        return [datagram(.query, now: now), datagram(.announce, now: now)].compactMap { $0 }
    }

    public mutating func received(_ bytes: [UInt8], from host: String, now: UInt64) -> [Action] {
        guard let key else { return [] }
        // The tag check comes first: it is cheap (about a microsecond), and a
        // device without the network key must not be able to use up anyone's
        // budget below, even from the same source address.
        let announcement: Announcement
        let signature: [UInt8]
        switch Announcement.unseal(bytes, key: key) {
        case let .failure(reason): return drop(reason)
        case let .success((a, s)): (announcement, signature) = (a, s)
        }
        // Our own datagrams come back through multicast loopback.
        if announcement.node == me { return drop(.own) }
        // Members of the network get a budget per source address and one in
        // all, spent before the signature check (about 60 µs) is paid.
        if now / 1000 != window {
            window = now / 1000
            perSource.removeAll(keepingCapacity: true)
            verifiesThisSecond = 0
        }
        if perSource[host] == nil, perSource.count >= Self.maximumSources { return drop(.rateLimited) }
        perSource[host, default: 0] += 1
        if perSource[host, default: 0] > Self.perSourceLimit || verifiesThisSecond >= Self.maximumVerifies { return drop(.rateLimited) }
        verifiesThisSecond += 1
        guard announcement.verify(signature) else { return drop(.badSignature) }
        let skew = announcement.timestamp > now ? announcement.timestamp - now : now - announcement.timestamp
        if skew > Self.maximumSkew { return drop(.stale) }
        // A device add waiting for its joiner: nothing for a node to dial.
        if announcement.kind == .linking { return [] }

        var actions: [Action] = []
        if var peer = peers[announcement.node] {
            guard announcement.timestamp > peer.lastTimestamp else { return drop(.replayed) }
            let moved = peer.host != host || peer.port != announcement.port
            peer.host = host
            peer.port = announcement.port
            peer.lastSeen = now
            peer.lastTimestamp = announcement.timestamp
            peers[announcement.node] = peer
            if moved { actions.append(.found(announcement.node, host: host, port: announcement.port)) }
        } else {
            guard peers.values.filter({ $0.host == host }).count < Self.maximumPeersPerSource else { return drop(.sourceFull) }
            if peers.count >= Self.maximumPeers {
                // Full: the unlinked peer heard least recently goes, if it is older than this one's news.
                guard let (oldest, peer) = peers.filter({ !$0.value.linked }).min(by: { ($0.value.lastSeen, $0.key) < ($1.value.lastSeen, $1.key) }),
                      peer.lastSeen < now else { return drop(.tableFull) }
                peers[oldest] = nil
                drops[.tableFull, default: 0] += 1
                actions.append(.expired(oldest))
            }
            peers[announcement.node] = Peer(host: host, port: announcement.port, lastSeen: now, lastTimestamp: announcement.timestamp)
            actions.append(.found(announcement.node, host: host, port: announcement.port))
        }
        if announcement.kind == .query, answerAt == nil {
            var at = now + UInt64.random(in: 0...Self.answerDelay, using: &random)
            if let lastAnswer { at = max(at, lastAnswer + Self.answerSpacing) }
            answerAt = at
        }
        return actions
    }

    /// Announcements and answers that are due; peers that expired.
    public mutating func tick(now: UInt64) -> [Action] {
        var actions: [Action] = []
        if let at = answerAt, now >= at {
            answerAt = nil
            lastAnswer = now
            if let d = datagram(.announce, now: now) { actions.append(d) }
            nextAnnounce = jittered(now)
        }
        if now >= nextAnnounce {
            if let d = datagram(.announce, now: now) { actions.append(d) }
            nextAnnounce = jittered(now)
        }
        for (node, peer) in peers.sorted(by: { $0.key < $1.key }) where !peer.linked && now > peer.lastSeen + Self.expiry {
            peers[node] = nil
            actions.append(.expired(node))
        }
        return actions
    }

    /// The link layer reports a link to `node` up or down; linked peers never expire.
    public mutating func setLinked(_ node: PublicKey, _ linked: Bool, now: UInt64) {
        guard var peer = peers[node] else { return }
        peer.linked = linked
        // Expiry counts from the link's end, not from the last announcement.
        if !linked { peer.lastSeen = max(peer.lastSeen, now) }
        peers[node] = peer
    }

    /// When the next call to `tick` may have something to do.
    public var nextDeadline: UInt64 {
        var next = nextAnnounce
        if let at = answerAt { next = min(next, at) }
        for peer in peers.values where !peer.linked { next = min(next, peer.lastSeen + Self.expiry + 1) }
        return next
    }

    // MARK: helpers

    private mutating func drop(_ reason: Announcement.Drop) -> [Action] {
        drops[reason, default: 0] += 1
        return []
    }

    private mutating func jittered(_ now: UInt64) -> UInt64 {
        let spread = Double(Self.announceInterval) * Self.jitter
        return now + UInt64(Double(Self.announceInterval) + Double.random(in: -spread...spread, using: &random))
    }

    private mutating func datagram(_ kind: Announcement.Kind, now: UInt64) -> Action? {
        guard let key else { return nil }
        // Strictly increasing, so receivers can tell a replay from news.
        lastTimestamp = max(now, lastTimestamp + 1)
        guard let bytes = try? Announcement(kind: kind, node: me, port: port, timestamp: lastTimestamp).sealed(by: signer, key: key) else {
            return nil
        }
        sent[kind, default: 0] += 1
        return .send(bytes)
    }
}
