import CEpoll
import Glibc
import Reactor

/// Socket addresses: numeric IPv4/IPv6 or a name resolved with getaddrinfo.
enum SocketAddress {
    /// Resolves `host` and `port` to sockaddr bytes and the address family.
    static func resolve(_ host: String, port: UInt16) throws(SystemError) -> (storage: sockaddr_storage, length: socklen_t, family: Int32) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { throw SystemError(call: "getaddrinfo(\(host))", errno: rc == EAI_SYSTEM ? errno : EHOSTUNREACH) }
        defer { freeaddrinfo(list) }
        var storage = sockaddr_storage()
        memcpy(&storage, first.pointee.ai_addr, Int(first.pointee.ai_addrlen))
        return (storage, first.pointee.ai_addrlen, first.pointee.ai_family)
    }

    /// "address:port" of a socket's peer.
    static func peerName(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard rc == 0 else { return "?" }
        return describe(storage)
    }

    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { p -> UInt16 in
            if family == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    static func describe(_ storage: sockaddr_storage) -> String {
        var copy = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafePointer(to: &copy) { p -> String in
            if Int32(storage.ss_family) == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    var addr = a.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                    return "[\(cText(text))]:\(UInt16(bigEndian: a.pointee.sin6_port))"
                }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                var addr = a.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                return "\(cText(text)):\(UInt16(bigEndian: a.pointee.sin_port))"
            }
        }
    }
}
