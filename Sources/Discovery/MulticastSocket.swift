import Glibc

/// IPv4 multicast sockets for discovery: one socket bound to the group and
/// port (shared with other processes on the host through SO_REUSEADDR and
/// SO_REUSEPORT) that joins the group per interface, and one that sends on
/// a chosen interface (IP_MULTICAST_IF), TTL 1, loopback on so that several
/// nodes on one host hear each other.
final class MulticastSocket {
    let group: in_addr
    let port: UInt16
    private let receiver: Int32
    private let sender: Int32
    private(set) var joined: Set<UInt32> = []

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(group groupText: String, port: UInt16) throws {
        var group = in_addr()
        guard inet_pton(AF_INET, groupText, &group) == 1, (UInt32(bigEndian: group.s_addr) >> 28) == 0xE else {
            throw Failure(description: "\(groupText) is not an IPv4 multicast address (224.0.0.0/4)")
        }
        self.group = group
        self.port = port
        receiver = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        // Non-blocking both: the event loop never waits on discovery (a full send buffer drops an announcement).
        sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard receiver >= 0, sender >= 0 else {
            let message = String(cString: strerror(errno))
            if receiver >= 0 { close(receiver) }
            if sender >= 0 { close(sender) }
            throw Failure(description: "cannot open a UDP socket: \(message)")
        }
        Self.set(receiver, SOL_SOCKET, SO_REUSEADDR, 1)
        Self.set(receiver, SOL_SOCKET, SO_REUSEPORT, 1)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = group
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            close(receiver)
            close(sender)
            throw Failure(description: "cannot bind UDP \(groupText):\(port): \(message)")
        }
        Self.set(sender, Int32(IPPROTO_IP), IP_MULTICAST_TTL, 1)
        Self.set(sender, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1)
    }

    deinit {
        close(receiver)
        close(sender)
    }

    var descriptor: Int32 { receiver }

    private static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Joins the group on these interface addresses (network byte order) and
    /// leaves it on the ones no longer present. Returns the addresses newly joined.
    func joinExactly(_ interfaces: Set<UInt32>) -> Set<UInt32> {
        for gone in joined.subtracting(interfaces) {
            var request = ip_mreq(imr_multiaddr: group, imr_interface: in_addr(s_addr: gone))
            // The interface may already be gone with its membership: nothing to undo then.
            _ = setsockopt(receiver, Int32(IPPROTO_IP), IP_DROP_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
            joined.remove(gone)
        }
        var added: Set<UInt32> = []
        for new in interfaces.subtracting(joined) {
            var request = ip_mreq(imr_multiaddr: group, imr_interface: in_addr(s_addr: new))
            if setsockopt(receiver, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size)) == 0 || errno == EADDRINUSE {
                joined.insert(new)
                added.insert(new)
            }
        }
        return added
    }

    /// Sends `datagram` to the group once per joined interface.
    func send(_ datagram: [UInt8]) -> Int {
        var sentCount = 0
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = port.bigEndian
        destination.sin_addr = group
        for interface in joined.sorted() {
            var address = in_addr(s_addr: interface)
            _ = setsockopt(sender, Int32(IPPROTO_IP), IP_MULTICAST_IF, &address, socklen_t(MemoryLayout<in_addr>.size))
            let n = datagram.withUnsafeBytes { bytes in
                withUnsafePointer(to: &destination) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(sender, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            if n == datagram.count { sentCount += 1 }
        }
        return sentCount
    }

    /// One waiting datagram and its source address, or nil when none waits.
    /// Datagrams larger than `limit` come back truncated to `limit + 1` bytes
    /// (enough to be dropped as oversized).
    func receive(limit: Int) -> (bytes: [UInt8], host: String)? {
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = buffer.withUnsafeMutableBytes { b in
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(receiver, b.baseAddress, b.count, 0, $0, &length) }
            }
        }
        guard n >= 0 else { return nil }
        return (Array(buffer[0..<n]), Self.text(source.sin_addr))
    }

    static func text(_ address: in_addr) -> String {
        var a = address
        var out = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        _ = inet_ntop(AF_INET, &a, &out, socklen_t(out.count))
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// IPv4 addresses (network byte order) of the interfaces that are up and
    /// multicast-capable, loopback left out.
    static func multicastInterfaces() -> Set<UInt32> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: Set<UInt32> = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0,
                  flags & Int32(IFF_LOOPBACK) == 0 else { continue }
            let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            out.insert(v4)
        }
        return out
    }

    /// Parses a dotted IPv4 address into network byte order.
    static func address(_ text: String) -> UInt32? {
        var a = in_addr()
        return inet_pton(AF_INET, text, &a) == 1 ? a.s_addr : nil
    }
}
