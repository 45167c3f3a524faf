import Foundation
import Glibc
import Testing
import TestSupport
import Reactor
@testable import WebSocket

/// A plain HTTP answer given in parts (`HTTPBodyStream`, what the page
/// serves a file with) to a client that stops reading is cut off after
/// `WebSocketTimeouts.stalledAnswer`; one that reads slowly is not.
@Suite("A download nobody reads")
struct StalledAnswerTests {
    /// Long beside the readers' pace (a fifth of it), so a loaded machine does not cut off the slow one.
    static let stall = 1.5
    static let length = 64 << 20

    func server() throws -> EchoServer {
        let part = [UInt8](repeating: 7, count: 256 << 10)
        return try EchoServer(configuration: .init(paths: nil, timeouts: WebSocketTimeouts(stalledAnswer: Self.stall)), http: { _ in
            HTTPResponse(status: 200, contentType: "application/octet-stream",
                         stream: HTTPBodyStream(length: Self.length) { give in give(part) })
        })
    }

    /// The kernel's state of a TCP socket (`TCP_CLOSE`, 7, once the other end reset it).
    static func tcpState(_ fd: Int32) -> UInt8 {
        var info = tcp_info()
        var size = socklen_t(MemoryLayout<tcp_info>.size)
        return getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &size) == 0 ? info.tcpi_state : 0
    }

    @Test("a client that reads nothing of a 64 MiB answer is cut off (reset) once stalledAnswer has passed with bytes waiting, not before")
    func cutOff() async throws {
        let server = try server()
        let client = try RawSocket(port: server.port, receiveBuffer: 64 << 10)
        let asked = Deadline.now()
        client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await eventually(30) { Self.tcpState(client.fd) == 7 }, "still open")
        let waited = Deadline.now() - asked
        #expect(waited >= Self.stall, "cut off after \(waited) s, before the \(Self.stall) s allowed")
        let got = client.readToEnd()
        #expect(got.count < Self.length, "the whole answer came: \(got.count)")
        withExtendedLifetime(server) {}
    }

    @Test("a client that takes 64 KB every fifth of stalledAnswer, for three times stalledAnswer, is served to the end")
    func slowReaderServed() async throws {
        let server = try server()
        let client = try RawSocket(port: server.port, receiveBuffer: 64 << 10)
        client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        // A read of 64 KB: on loopback a segment is 64 KB, and a window is opened no less than a segment at a time.
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let slow = Deadline(Self.stall * 3)
        var got = 0
        while !slow.passed {
            let n = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            try #require(n > 0, "cut off while reading slowly, after \(got) bytes")
            got += n
            try await Task.sleep(for: .seconds(Self.stall / 5))
        }
        #expect(Self.tcpState(client.fd) == 1, "not established while read")
        got += client.readToEnd().count
        let head = "HTTP/1.1 200 OK".utf8.count
        #expect(got > Self.length + head, "\(got) of \(Self.length) and the head")
        withExtendedLifetime(server) {}
    }
}
