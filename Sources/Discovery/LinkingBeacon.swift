import Crypto
import Glibc

/// How `peernode device join` finds `peernode device add` on the LAN
/// (docs/PROTOCOL.md §15, "Finding the adder"): the adder sends a
/// discovery datagram of type `linking` each second, signed by the account
/// key, naming the TCP port it waits at; the joiner listens on the
/// discovery group for one of its network and connects to its source
/// address. Blocking and single-threaded: both commands do nothing else.
public final class LinkingBeacon {
    /// Seconds between two datagrams of a waiting adder.
    public static let interval = 1.0
    /// How long a joiner listens for an adder before it gives up (s).
    public static let findTimeout = 30.0

    private let socket: MulticastSocket
    private let key: SymmetricKey

    public init(configuration: DiscoveryService.Configuration, network: NetworkKey) throws {
        guard let key = Announcement.key(for: network) else { throw MulticastSocket.Failure(description: "no discovery key for this network") }
        self.key = key
        socket = try MulticastSocket(group: configuration.group, port: configuration.port)
        let interfaces: Set<UInt32>
        if let interface = configuration.interface {
            guard let address = MulticastSocket.address(interface) else {
                throw MulticastSocket.Failure(description: "\(interface) is not an IPv4 address")
            }
            interfaces = [address]
        } else {
            interfaces = MulticastSocket.multicastInterfaces()
        }
        guard !socket.joinExactly(interfaces).isEmpty else {
            throw MulticastSocket.Failure(description: "no multicast-capable interface to find the other machine on (give --peer, or --multicast-if)")
        }
    }

    /// One datagram: `account` waits for a device at TCP `port`. False when
    /// it went out on no interface.
    @discardableResult
    public func announce(by account: SigningKey, port: UInt16, now: UInt64) -> Bool {
        guard let datagram = try? Announcement(kind: .linking, node: account.publicKey, port: port, timestamp: now).sealed(by: account, key: key) else {
            return false
        }
        return socket.send(datagram) > 0
    }

    /// Listens until `deadline` (monotonic seconds, `clock()`) for an adder
    /// of this network: its address, port and account. Datagrams of other
    /// kinds or networks, forged or stale ones (more than
    /// `DiscoveryCore.maximumSkew` from `now()`) are passed over.
    public func find(until deadline: Double, clock: () -> Double, now: () -> UInt64) -> (host: String, port: UInt16, account: PublicKey)? {
        while clock() < deadline {
            var fd = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            let wait = Int32(max(1, min(250, (deadline - clock()) * 1000)))
            guard poll(&fd, 1, wait) > 0 else { continue }
            while let (bytes, host) = socket.receive(limit: Announcement.maximumDatagram) {
                guard case let .success(a) = Announcement.open(bytes, key: key), a.kind == .linking, a.port != 0 else { continue }
                let at = now()
                let skew = a.timestamp > at ? a.timestamp - at : at - a.timestamp
                if skew <= DiscoveryCore.maximumSkew { return (host, a.port, a.node) }
            }
        }
        return nil
    }
}
