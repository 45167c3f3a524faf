import Foundation
import Glibc

/// A blocking TCP connection that sends and receives length-prefixed frames
/// (4 bytes, big-endian, then the bytes), each wait bounded by a deadline:
/// what `peernode device add` and `device join` talk over. Short-lived, one
/// at a time, so it needs no event loop.
final class FramedSocket {
    let fd: Int32
    /// Each read or write gives up after this long.
    let timeout: Double

    init(fd: Int32, timeout: Double) {
        self.fd = fd
        self.timeout = timeout
    }

    deinit { close(fd) }

    /// Connects to `host:port` (a name or an IPv4 address).
    static func connect(host: String, port: UInt16, timeout: Double) throws -> FramedSocket {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else {
            throw FramedSocketError.failed("cannot resolve \(host)")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FramedSocketError.failed("socket: \(String(describing: SystemErrorText(errno)))") }
        let socket = FramedSocket(fd: fd, timeout: timeout)
        guard Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw FramedSocketError.failed("cannot connect to \(host):\(port): \(String(describing: SystemErrorText(errno)))")
        }
        return socket
    }

    func send(_ frame: [UInt8]) throws {
        let length = UInt32(frame.count)
        try write([UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + frame)
    }

    /// The next frame; refuses one longer than `limit` before reading it.
    func receive(limit: Int) throws -> [UInt8] {
        let header = try read(4)
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length <= limit else { throw FramedSocketError.failed("a frame of \(length) bytes exceeds \(limit)") }
        return try read(length)
    }

    private func wait(for events: Int16) throws {
        var p = pollfd(fd: fd, events: events, revents: 0)
        let rc = poll(&p, 1, Int32(timeout * 1000))
        guard rc > 0 else { throw FramedSocketError.timedOut }
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count), got = 0
        while got < count {
            try wait(for: Int16(POLLIN))
            let n = out.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw FramedSocketError.closed }
            got += n
        }
        return out
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            try wait(for: Int16(POLLOUT))
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw FramedSocketError.closed }
            sent += n
        }
    }
}

/// A listening TCP socket for `peernode device add`.
final class FramedListener {
    let fd: Int32
    let port: UInt16

    init(host: String, port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FramedSocketError.failed("socket: \(String(describing: SystemErrorText(errno)))") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw FramedSocketError.failed("\(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            let reason = String(describing: SystemErrorText(errno))
            close(fd)
            throw FramedSocketError.failed("cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        self.port = UInt16(bigEndian: actual.sin_port)
    }

    deinit { close(fd) }

    /// The next connection and where it came from; nil when `deadline` (seconds from now) passes first.
    func accept(within deadline: Double, timeout: Double) -> (FramedSocket, String)? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(max(0, deadline) * 1000)) > 0 else { return nil }
        var peer = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let client = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &length) }
        }
        guard client >= 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &peer.sin_addr, &text, socklen_t(INET_ADDRSTRLEN))
        return (FramedSocket(fd: client, timeout: timeout), String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}

enum FramedSocketError: Error, CustomStringConvertible {
    case timedOut
    case closed
    case failed(String)

    var description: String {
        switch self {
        case .timedOut: return "the other side did not answer in time"
        case .closed: return "the other side closed the connection"
        case let .failed(reason): return reason
        }
    }
}

/// `strerror` of an errno, for messages.
struct SystemErrorText: CustomStringConvertible {
    let code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(validatingCString: text) ?? "error \(code)"
    }
}
