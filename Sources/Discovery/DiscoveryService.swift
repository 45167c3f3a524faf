import Crypto
import Foundation
import Glibc

/// The shell around `DiscoveryCore`: a multicast socket, a thread that
/// waits on it with `poll`, the wall clock, and a rescan of the interfaces
/// every `rescanInterval` so that one coming up (a laptop joining Wi-Fi) is
/// joined without a restart. Found and expired peers go to `onEvent`, on the
/// discovery thread.
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
    /// Longest wait in `poll`, so commands from other threads are seen soon.
    static let pollTimeout: Int32 = 100

    private let socket: MulticastSocket
    private let configuration: Configuration
    private let onEvent: @Sendable (DiscoveryCore.Action) -> Void
    private let lock = NSLock()
    private var core: DiscoveryCore
    private var commands: [(inout DiscoveryCore, UInt64) -> Void] = []
    private var stopped = false
    private var thread: Thread?

    public init(configuration: Configuration, signer: SigningKey, network: NetworkKey, linkPort: UInt16,
                onEvent: @escaping @Sendable (DiscoveryCore.Action) -> Void) throws {
        self.configuration = configuration
        if let interface = configuration.interface, MulticastSocket.address(interface) == nil {
            throw MulticastSocket.Failure(description: "--multicast-if needs an IPv4 address, got \(interface)")
        }
        socket = try MulticastSocket(group: configuration.group, port: configuration.port)
        core = DiscoveryCore(signer: signer, network: network, port: linkPort, random: SystemRandomNumberGenerator())
        self.onEvent = onEvent
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "peernode.discovery"
        self.thread = thread
        thread.start()
    }

    /// The link layer's news: linked peers never expire.
    public func setLinked(_ node: PublicKey, _ linked: Bool) {
        enqueue { core, now in core.setLinked(node, linked, now: now) }
    }

    public func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    /// Dropped datagrams by reason, and datagrams sent by kind.
    public var counters: [String: Int] {
        lock.lock()
        defer { lock.unlock() }
        var out: [String: Int] = [:]
        for (reason, n) in core.drops { out["discovery_drop_" + reason.rawValue] = n }
        for (kind, n) in core.sent { out[kind == .announce ? "discovery_announce_sent" : "discovery_query_sent"] = n }
        return out
    }

    private func enqueue(_ command: @escaping (inout DiscoveryCore, UInt64) -> Void) {
        lock.lock()
        commands.append(command)
        lock.unlock()
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

    private func run() {
        var nextRescan = 0.0
        while true {
            let monotonic = ProcessInfo.processInfo.systemUptime
            var actions: [DiscoveryCore.Action] = []
            lock.lock()
            if stopped {
                lock.unlock()
                return
            }
            let now = Self.wallClock()
            for command in commands { command(&core, now) }
            commands.removeAll()
            if monotonic >= nextRescan {
                nextRescan = monotonic + Self.rescanInterval
                // A newly joined interface: ask who is there on it, and say who we are.
                if !socket.joinExactly(wantedInterfaces()).isEmpty { actions += core.start(now: now) }
            }
            // A bounded number per turn, so a flood cannot stop announcements and expiry.
            for _ in 0..<Self.datagramsPerTurn {
                guard let (bytes, host) = socket.receive(limit: Announcement.maximumDatagram) else { break }
                actions += core.received(bytes, from: host, now: now)
            }
            actions += core.tick(now: now)
            let wait = Int32(clamping: min(Int64(Self.pollTimeout), max(0, Int64(core.nextDeadline) - Int64(now))))
            lock.unlock()
            for action in actions {
                if case let .send(datagram) = action {
                    _ = socket.send(datagram)
                } else {
                    onEvent(action)
                }
            }
            var descriptor = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, wait)
        }
    }
}
