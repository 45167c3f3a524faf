import CEpoll
import Glibc

/// A failed system call: which one and errno (STYLE.md §4).
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
}

/// Every system call of the shell goes through here: EINTR is retried, EAGAIN
/// becomes `.wouldBlock`, anything else a `SystemError` naming the call.
enum Syscall {
    enum Result<T> {
        case done(T)
        case wouldBlock
    }

    static func call<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> Result<T> {
        while true {
            let rc = body()
            if rc >= 0 { return .done(rc) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: name, errno: e)
        }
    }

    static func check<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let rc = body()
            if rc >= 0 { return rc }
            let e = errno
            if e == EINTR { continue }
            throw SystemError(call: name, errno: e)
        }
    }

    static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try check("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try check("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }
}

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

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// A NUL-terminated C string buffer as a Swift string.
func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
