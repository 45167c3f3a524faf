import CEpoll
import Crypto
import Glibc
import Reactor

/// The shell around `DiscoveryCore`: a multicast socket watched by the
/// event loop, the wall clock, and a rescan of the interfaces every
/// `rescanInterval` so that one coming up (a laptop joining Wi-Fi) is
/// joined without a restart. Everything runs on the loop's thread; found
/// and expired peers go to `onEvent` there (that confinement is what makes
/// the unchecked `Sendable` sound).
public final class DiscoveryService: @unchecked Sendable {
    public struct Configuration: Sendable {
        public static let defaultGroup = "239.255.73.73"
        public static let defaultPort: UInt16 = 7733

        public var group: String
        public var port: UInt16
        /// Only this interface address (e.g. 127.0.0.1); nil: every up,
        /// multicast-capable IPv4 interface but loopback.
        public var interface: String?

        public init(group: String = defaultGroup, port: UInt16 = defaultPort, interface: String? = nil) {
            self.group = group
            self.port = port
            self.interface = interface
        }
    }

    /// Seconds between looks at the interface list.
    public static let rescanInterval = 2.0
    /// Most datagrams read between two ticks.
    static let datagramsPerTurn = 512

    private let socket: MulticastSocket
    private let configuration: Configuration
    private let loop: EventLoop
    private let onEvent: (DiscoveryCore.Action) -> Void
    private var core: DiscoveryCore
    private var token: UInt64?
    private var nextRescan = 0.0
    /// When the next turn is due without a datagram (monotonic seconds): the
    /// core's next deadline or the next rescan, whichever is first.
    private var nextTurn = -Double.infinity
    private var stopped = false

    /// `onEvent` is called on `loop`'s thread with found and expired peers.
    public init(configuration: Configuration, signer: SigningKey, network: NetworkKey, linkPort: UInt16, loop: EventLoop,
                onEvent: @escaping (DiscoveryCore.Action) -> Void) throws {
        self.configuration = configuration
        if let interface = configuration.interface, MulticastSocket.address(interface) == nil {
            throw MulticastSocket.Failure(description: "--multicast-if needs an IPv4 address, got \(interface)")
        }
        socket = try MulticastSocket(group: configuration.group, port: configuration.port)
        core = DiscoveryCore(signer: signer, network: network, port: linkPort, random: SystemRandomNumberGenerator())
        self.loop = loop
        self.onEvent = onEvent
    }

    // MARK: on the loop (or before it starts)

    /// Watches the socket on the loop and starts announcing.
    public func start() throws(SystemError) {
        guard token == nil, !stopped else { return }
        token = try loop.register(socket.descriptor, events: peernode_EPOLLIN, handler: Watcher(self))
        loop.execute { [self] in turn() }
    }

    /// The link layer's news: linked peers never expire.
    public func setLinked(_ node: PublicKey, _ linked: Bool) {
        core.setLinked(node, linked, now: Self.wallClock())
        // An unlinked peer's expiry is a deadline of its own.
        planNextTurn()
    }

    /// Stops reading and announcing (the socket closes with the service).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        if let token { loop.deregister(socket.descriptor, token: token) }
        token = nil
    }

    /// Dropped datagrams by reason, and datagrams sent by kind.
    public var counters: [String: Int] {
        var out: [String: Int] = [:]
        for (reason, n) in core.drops { out["discovery_drop_" + reason.rawValue] = n }
        for (kind, n) in core.sent { out[kind == .announce ? "discovery_announce_sent" : "discovery_query_sent"] = n }
        return out
    }

    static func wallClock() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return UInt64(max(0, t.tv_sec)) * 1000 + UInt64(max(0, t.tv_nsec)) / 1_000_000
    }

    private func wantedInterfaces() -> Set<UInt32> {
        if let interface = configuration.interface, let address = MulticastSocket.address(interface) { return [address] }
        return MulticastSocket.multicastInterfaces()
    }

    /// Datagrams in (a bounded number, so a flood cannot stop announcements
    /// and expiry), interfaces rescanned when due, the core's timers, and
    /// what it says sent or reported.
    private func turn() {
        guard !stopped else { return }
        let monotonic = monotonicNow()
        let now = Self.wallClock()
        var actions: [DiscoveryCore.Action] = []
        if monotonic >= nextRescan {
            nextRescan = monotonic + Self.rescanInterval
            // A newly joined interface: ask who is there on it, and say who we are.
            if !socket.joinExactly(wantedInterfaces()).isEmpty { actions += core.start(now: now) }
        }
        for _ in 0..<Self.datagramsPerTurn {
            guard let (bytes, host) = socket.receive(limit: Announcement.maximumDatagram) else { break }
            actions += core.received(bytes, from: host, now: now)
        }
        actions += core.tick(now: now)
        for action in actions {
            if case let .send(datagram) = action {
                _ = socket.send(datagram)
            } else {
                onEvent(action)
            }
        }
        planNextTurn()
    }

    /// Tells the loop when the next turn is due: the core's deadline (wall
    /// clock milliseconds, as its announcements carry) or the next rescan,
    /// which comes every `rescanInterval` whatever the wall clock does.
    private func planNextTurn() {
        guard !stopped else { return }
        let monotonic = monotonicNow()
        let wall = Self.wallClock()
        let deadline = core.nextDeadline
        let untilCore = deadline > wall ? Double(deadline - wall) / 1000 : 0
        nextTurn = min(nextRescan, monotonic + untilCore)
        loop.tickNeeded(at: nextTurn)
    }

    /// The loop's view of the service: readable socket, ticks, shutdown
    /// (weak: a service let go of stops, its socket closed with it).
    private final class Watcher: LoopHandler {
        weak var service: DiscoveryService?
        init(_ service: DiscoveryService) { self.service = service }
        func handle(events: UInt32) { service?.turn() }
        func tick(now: Double) -> Double? {
            guard let service, !service.stopped else { return nil }
            if now >= service.nextTurn { service.turn() }
            return service.nextTurn
        }
        func shutdown() { service?.stop() }
    }
}
