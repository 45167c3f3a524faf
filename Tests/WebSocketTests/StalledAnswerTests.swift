import Foundation
import Glibc
import Testing
import TestSupport
import Reactor
@testable import WebSocket

/// A plain HTTP answer given in parts (`HTTPBodyStream`, what the page
/// serves a file with) to a client that stops reading is cut off after
/// `WebSocketTimeouts.stalledAnswer` (over a real socket); one that reads
/// slowly is not (`AnswerStall`, the rule, looked at with numbers: a slow
/// reader paced by a test's sleeps was cut off on a loaded machine).
@Suite("A download nobody reads")
struct StalledAnswerTests {
    static let stall = 1.0
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

    @Test("the stall's rule: nothing taken for the limit while bytes wait cuts off, one moment less does not; a queue that goes down, or a write, is progress; nothing waiting is no stall")
    func rule() {
        let limit = 60.0
        var s = AnswerStall(now: 0)
        let (first, before, at) = (s.stalled(queued: 4_000_000, unsent: 500_000, now: 0, limit: limit),
                                   s.stalled(queued: 4_000_000, unsent: 500_000, now: limit - 0.01, limit: limit),
                                   s.stalled(queued: 4_000_000, unsent: 500_000, now: limit, limit: limit))
        #expect(!first && !before && at, "one moment before the limit: \(before); at it: \(at)")
        // A slow reader: the queue goes down by a little at each look, however rarely we write.
        var slow = AnswerStall(now: 0)
        var cut = false
        for look in 1...100 { cut = cut || slow.stalled(queued: 4_000_000 - look * 65_536, unsent: 500_000, now: Double(look) * (limit / 2), limit: limit) }
        #expect(!cut, "a slow reader was cut off")
        // A write is progress; so is all of it taken (nothing waits: never a stall).
        var written = AnswerStall(now: 0)
        written.wrote(now: 50)
        let (soon, late) = (written.stalled(queued: 100, unsent: 0, now: 100, limit: limit), written.stalled(queued: 100, unsent: 0, now: 110, limit: limit))
        #expect(!soon && late)
        var done = AnswerStall(now: 0)
        let idle = done.stalled(queued: 0, unsent: 0, now: 1_000, limit: limit)
        #expect(!idle)
    }
}
