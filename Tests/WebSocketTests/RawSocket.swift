import Foundation
import Glibc

/// A blocking TCP client for tests that misbehave on purpose.
final class RawSocket {
    let fd: Int32

    init(port: UInt16, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads until the peer closes (or 5 s pass); returns everything read.
    func readToEnd() -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return all }
            all += buffer[0..<n]
        }
    }

    /// The first two bytes of the next frame on `fd`, waiting at most `seconds`; nil if none came.
    static func readFrameStart(_ fd: Int32, within seconds: Int) -> [UInt8]? {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var start = [UInt8](repeating: 0, count: 2)
        let n = start.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 2, Int32(MSG_WAITALL)) }
        return n == 2 ? start : nil
    }

    /// Completes a WebSocket handshake on /peernode/1 and returns what followed it.
    func handshake() -> Bool {
        send("GET /peernode/1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: peernode.1\r\n\r\n")
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1 else { return false }
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101")
    }
}
