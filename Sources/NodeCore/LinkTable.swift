import Crypto
import Gossip
import NetworkText

/// The node's links and diallers, pure (STYLE.md §1): which connection
/// carries which peer, which of two links to one peer stays, when a dialler
/// tries again, and which addresses are held after a misdirected dial. The
/// shell owns the sockets: it reports what happened to them, with the time,
/// and performs the effects this returns. Links are numbered by the shell
/// (`LinkID`); diallers by this table (`DialerID`, never reused).
public struct LinkTable {
    public typealias DialerID = Int

    /// One connection, from the moment its WebSocket is open.
    public struct Link: Sendable, Equatable {
        /// The dialler that opened it (nil: accepted).
        public let dialer: DialerID?
        /// The identity it carries, once its handshake finished and it won any tie-break.
        public fileprivate(set) var remote: PublicKey?
        /// When it began to carry `remote`.
        public fileprivate(set) var since: Double?
    }

    /// Something that dials one address again and again: a `--peer`, or a
    /// peer discovery found.
    public struct Dialer: Sendable, Equatable {
        public fileprivate(set) var host: String
        public fileprivate(set) var port: UInt16
        /// Learned at the first handshake (or known from discovery): lets a
        /// redial be skipped while linked, and refuses anyone else.
        public fileprivate(set) var remote: PublicKey?
        /// Made for a peer that discovery found; retired when it expires.
        public let discovered: Bool
        /// Made because the overlay wants a link to its peer (`want`): it
        /// dials once, and is retired when that connection ends; the overlay
        /// decides whether to want the peer again (`Effect.released`).
        public fileprivate(set) var oneShot = false
        public fileprivate(set) var retired = false
        fileprivate var attempt = 0
        public fileprivate(set) var nextTry: Double
        /// A connection of this dialler is open or on its way.
        public fileprivate(set) var connecting = false
        public var address: String { "\(host):\(port)" }
    }

    /// Why the table closes a link.
    public enum Closing: Equatable, Sendable {
        /// Another link carries the same peer and won the tie-break.
        case duplicate
        /// The peer was blocked.
        case blocked
    }

    public enum Effect: Equatable, Sendable {
        /// Open a connection to `host:port` for this dialler; report it with
        /// `opened`, or `dialFailed`.
        case dial(DialerID, host: String, port: UInt16)
        case close(LinkID, Closing)
        /// The link carries `peer` now: replication and probes start on it.
        /// `announce`: no other link carried it just before (show it as up).
        case up(LinkID, PublicKey, announce: Bool)
        /// A link that carried a peer no longer does.
        case down(LinkID)
        /// No link carries `peer` any more: show it as down, with the reason
        /// its last link gave when there was one.
        case peerDown(PublicKey, reason: PeerText?)
        case count(Counter)
        /// A dial for a discovered peer reached another identity: the
        /// address is held until `until` (for the log).
        case misdirected(address: String, announced: PublicKey?, answered: PublicKey, until: Double)
        /// A dialler made by `want` ended (its dial failed, or its link
        /// closed): it is retired. `peer` is who it was for.
        case released(PublicKey)
    }

    /// Reconnect backoff: 0.5 s doubling up to 30 s, with ±25 % jitter.
    public static let backoffBase = 0.5
    public static let backoffCap = 30.0
    /// The doubling stops here (2^16 × 0.5 s is far past the cap anyway).
    static let maximumAttempt = 16
    /// Seconds a peer whose link the other side closed as a duplicate stays
    /// up without a link: its other link is on its way.
    public static let duplicateGrace = 5.0
    /// Seconds the node with the larger id waits before dialling a peer it found.
    public static let discoveredDialDelay = 2.0
    /// Seconds an address stays held after a misdirected dial.
    public static let misdirectedHold = 600.0
    /// Held addresses remembered at once (the one held longest ago goes first).
    public static let maximumMisdirected = 1_024

    public let me: PublicKey
    public private(set) var links: [LinkID: Link] = [:]
    public private(set) var dialers: [DialerID: Dialer] = [:]
    private var nextDialer: DialerID = 1
    /// Peers whose link was closed as a duplicate, until when they stay up.
    private var pendingDown: [PublicKey: Double] = [:]
    /// Held addresses (host:port): until when, and who answered there.
    private var held: [String: (until: Double, answered: PublicKey)] = [:]
    private var random: any RandomNumberGenerator

    public init(me: PublicKey, random: some RandomNumberGenerator) {
        self.me = me
        self.random = random
    }

    // MARK: what the shell asks

    /// Each link that carries a peer, with the peer.
    public var linkedPeers: [LinkID: PublicKey] {
        var out: [LinkID: PublicKey] = [:]
        for (id, link) in links { if let remote = link.remote { out[id] = remote } }
        return out
    }

    /// Whether some link carries `peer`.
    public func carries(_ peer: PublicKey) -> Bool { links.values.contains { $0.remote == peer } }

    /// The identity a dialler's handshake must meet (nil: anyone on the network).
    public func expectedRemote(of dialer: DialerID?) -> PublicKey? { dialer.flatMap { dialers[$0]?.remote } }

    /// Diallers in the order they were made.
    public var dialersInOrder: [(id: DialerID, dialer: Dialer)] { dialers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }

    // MARK: events

    /// `--peer`: a dialler that tries at the first tick.
    @discardableResult
    public mutating func addPeer(host: String, port: UInt16) -> DialerID {
        add(Dialer(host: host, port: port, remote: nil, discovered: false, nextTry: 0))
    }

    /// A connection's WebSocket is open (dialled by `dialer`, or accepted).
    public mutating func opened(_ id: LinkID, dialer: DialerID?) {
        links[id] = Link(dialer: dialer)
    }

    /// A link's handshake finished: `remote` is who is there. One link per
    /// pair: of two, the connection dialled by the smaller id stays (both
    /// ends decide alike), and the peer stays up across the swap.
    public mutating func established(_ id: LinkID, remote: PublicKey, now: Double) -> [Effect] {
        guard var link = links[id] else { return [] }
        if let d = link.dialer {
            dialers[d]?.remote = remote
            dialers[d]?.attempt = 0
        }
        var effects: [Effect] = []
        var announced = pendingDown.removeValue(forKey: remote) != nil
        if let (otherID, other) = links.first(where: { $0.key != id && $0.value.remote == remote }) {
            announced = true
            let me = self.me
            let dialledBy = { (l: Link) -> PublicKey in l.dialer != nil ? me : remote }
            let keepNew = dialledBy(link) < dialledBy(other) || (dialledBy(link) == dialledBy(other) && id > otherID)
            let loser = keepNew ? otherID : id
            if links[loser]?.remote != nil { effects.append(.down(loser)) }
            links[loser]?.remote = nil
            effects.append(.close(loser, .duplicate))
            if !keepNew { return effects }
        }
        link.remote = remote
        link.since = now
        links[id] = link
        return effects + [.up(id, remote, announce: !announced)]
    }

    /// A link closed (`duplicate`: the other side closed it as the loser of
    /// a tie-break, with this reason).
    public mutating func closed(_ id: LinkID, reason: PeerText, duplicate: Bool, now: Double) -> [Effect] {
        guard let link = links.removeValue(forKey: id) else { return [] }
        var effects: [Effect] = []
        if let remote = link.remote {
            effects.append(.down(id))
            if carries(remote) {
                // Another link carries it: nothing changes for the peer.
            } else if duplicate {
                // The peer kept our other link, which is still being set up here.
                pendingDown[remote] = now + Self.duplicateGrace
            } else {
                effects.append(.peerDown(remote, reason: reason))
            }
        }
        // A link the peer closed as the loser of a tie-break: its other link
        // carries the peer (or soon will), so a one-shot dialler ends quietly.
        if let d = link.dialer { effects += redialLater(d, now: now, released: !duplicate) }
        return effects
    }

    /// A dial did not become a link (no connection, or its WebSocket
    /// handshake failed): the dialler tries again after its backoff.
    @discardableResult
    public mutating func dialFailed(_ d: DialerID, now: Double) -> [Effect] { redialLater(d, now: now) }

    /// A link's handshake met another identity than its dialler expected.
    /// For a discovered peer, the address is held: for `misdirectedHold`
    /// nobody but the identity that answered is dialled there. A member can
    /// announce its identity at a third party's address; this keeps every
    /// node from dialling that party once per backoff.
    public mutating func misdirected(_ id: LinkID, answered: PublicKey, now: Double) -> [Effect] {
        guard let d = links[id]?.dialer, let dialer = dialers[d], dialer.discovered else { return [] }
        let address = dialer.address
        if held[address] == nil, held.count >= Self.maximumMisdirected,
           let oldest = held.min(by: { $0.value.until < $1.value.until })?.key {
            held[oldest] = nil
        }
        held[address] = (now + Self.misdirectedHold, answered)
        return [.count(.discoveryMisdirected), .misdirected(address: address, announced: dialer.remote, answered: answered, until: now + Self.misdirectedHold)]
    }

    /// Discovery found `peer` at `host:port`. The node with the smaller id
    /// dials at once, the other after `discoveredDialDelay` (in case the
    /// smaller cannot reach it); a node not listening dials at once (it
    /// cannot be dialled). The tie-break removes any duplicate.
    public mutating func found(_ peer: PublicKey, host: String, port: UInt16, listening: Bool, now: Double) -> [Effect] {
        guard port != 0 else { return [] }
        let first = me < peer || !listening ? now : now + Self.discoveredDialDelay
        if let d = discoveredDialer(of: peer), var dialer = dialers[d] {
            let moved = dialer.host != host || dialer.port != port
            dialer.host = host
            dialer.port = port
            if dialer.retired || moved || dialer.oneShot {
                dialer.oneShot = false
                dialer.retired = false
                dialer.attempt = 0
                dialer.nextTry = first
            }
            dialers[d] = dialer
        } else if !dialers.values.contains(where: { $0.remote == peer }) {
            // A --peer dialler that already knows this identity needs no second one.
            _ = add(Dialer(host: host, port: port, remote: peer, discovered: true, nextTry: first))
        }
        // Due now: dial at once rather than at the next tick.
        guard let d = discoveredDialer(of: peer), let dialer = dialers[d], !dialer.connecting, !dialer.retired, dialer.nextTry <= now else { return [] }
        return dial(d, now: now)
    }

    /// The overlay wants a link to `peer` at `host:port`: one dial, now,
    /// expecting that identity (unless a link carries it, or a `--peer`
    /// dialler already dials it). When that connection ends, the dialler
    /// is retired (`Effect.released`).
    public mutating func want(_ peer: PublicKey, host: String, port: UInt16, now: Double) -> [Effect] {
        guard port != 0, peer != me, !carries(peer) else { return [] }
        if dialers.values.contains(where: { $0.remote == peer && !$0.discovered && !$0.retired }) { return [] }
        let d: DialerID
        if let existing = discoveredDialer(of: peer), var dialer = dialers[existing] {
            guard !dialer.connecting else { return [] }
            dialer.host = host
            dialer.port = port
            dialer.retired = false
            dialer.oneShot = true
            dialer.attempt = 0
            dialer.nextTry = now
            dialers[existing] = dialer
            d = existing
        } else {
            var dialer = Dialer(host: host, port: port, remote: peer, discovered: true, nextTry: now)
            dialer.oneShot = true
            d = add(dialer)
        }
        return dial(d, now: now)
    }

    /// The overlay no longer wants `peer`: its one-shot diallers stop (a
    /// connection on its way is still reported).
    public mutating func release(_ peer: PublicKey) {
        for (d, dialer) in dialers where dialer.oneShot && dialer.remote == peer && !dialer.connecting { dialers[d]?.retired = true }
    }

    /// Dials the overlay asked for (`want`) that are on their way.
    public var overlayDialsInFlight: Int { dialers.values.count { $0.oneShot && $0.connecting } }

    /// Whether `link` was dialled by a `--peer` dialler (the user asked for it).
    public func isUserLink(_ link: LinkID) -> Bool {
        guard let d = links[link]?.dialer, let dialer = dialers[d] else { return false }
        return !dialer.discovered
    }

    /// Discovery has not heard `peer` for its expiry: its dialler stops.
    public mutating func expired(_ peer: PublicKey) {
        for (d, dialer) in dialers where dialer.discovered && dialer.remote == peer { dialers[d]?.retired = true }
    }

    /// `peer` was blocked: its links close.
    public func block(_ peer: PublicKey) -> [Effect] {
        links.filter { $0.value.remote == peer }.keys.sorted().map { .close($0, .blocked) }
    }

    /// Once a second, or when a deadline may have passed: peers whose
    /// duplicate grace ran out, and diallers whose turn came.
    public mutating func tick(now: Double) -> [Effect] {
        var effects: [Effect] = []
        for (remote, deadline) in pendingDown.sorted(by: { $0.key < $1.key }) where now >= deadline {
            pendingDown[remote] = nil
            if !carries(remote) { effects.append(.peerDown(remote, reason: nil)) }
        }
        for (d, dialer) in dialersInOrder where !dialer.connecting && !dialer.retired && now >= dialer.nextTry {
            effects += dial(d, now: now)
        }
        return effects
    }

    // MARK: inside

    private mutating func add(_ dialer: Dialer) -> DialerID {
        let id = nextDialer
        nextDialer += 1
        dialers[id] = dialer
        return id
    }

    private func discoveredDialer(of peer: PublicKey) -> DialerID? {
        dialers.filter { $0.value.discovered && $0.value.remote == peer }.keys.min()
    }

    private mutating func dial(_ d: DialerID, now: Double) -> [Effect] {
        guard var dialer = dialers[d] else { return [] }
        defer { dialers[d] = dialer }
        if let remote = dialer.remote, carries(remote) {
            dialer.nextTry = now + Self.backoffCap
            return [.count(.redialSkippedLinked)]
        }
        if let until = heldUntil(dialer, now: now) {
            dialer.nextTry = until
            return [.count(.dialSkippedHeld)]
        }
        dialer.connecting = true
        return [.dial(d, host: dialer.host, port: dialer.port)]
    }

    private mutating func redialLater(_ d: DialerID, now: Double, released: Bool = true) -> [Effect] {
        guard var dialer = dialers[d] else { return [] }
        dialer.connecting = false
        if dialer.oneShot {
            dialer.retired = true
            dialers[d] = dialer
            return released ? dialer.remote.map { [.released($0)] } ?? [] : []
        }
        let delay = min(Self.backoffCap, Self.backoffBase * Double(1 << dialer.attempt))
        dialer.attempt = min(dialer.attempt + 1, Self.maximumAttempt)
        dialer.nextTry = now + delay * Double.random(in: 0.75...1.25, using: &random)
        dialers[d] = dialer
        return []
    }

    /// When a discovered dialler's address is held for it (nil: it may dial).
    private mutating func heldUntil(_ dialer: Dialer, now: Double) -> Double? {
        guard dialer.discovered, let hold = held[dialer.address] else { return nil }
        guard hold.until > now else {
            held[dialer.address] = nil
            return nil
        }
        return dialer.remote == hold.answered ? nil : hold.until
    }
}
