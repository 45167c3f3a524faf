import Foundation
import Testing
import TestSupport
import Reactor
@testable import WebSocket

@Suite("Timeouts, liveness and back-pressure over real sockets")
struct ResilienceTests {
    @Test("a client that stalls in the handshake is dropped after the handshake timeout")
    func handshakeTimeout() throws {
        let server = try EchoServer(configuration: .init(paths: nil, timeouts: WebSocketTimeouts(handshake: 0.3)))
        let raw = try RawSocket(port: server.port)
        raw.send("GET /peernode/1 HTTP/1.1\r\nHost: x\r\n")  // and never the rest
        let start = Deadline.now()
        #expect(raw.readToEnd().isEmpty)
        let waited = Deadline.now() - start
        #expect(waited >= 0.2 && waited < 3, "\(waited)")
    }

    @Test("a request head at the limit is answered; one byte past gets 431")
    func headLimit() throws {
        let base = "GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: \r\n\r\n"
        let limit = 200
        let server = try EchoServer(configuration: .init(paths: nil, limits: WebSocketLimits(maximumHandshakeSize: limit)),
                                    http: { _ in HTTPResponse(status: 200, text: "ok") })
        let pad = String(repeating: "p", count: limit - base.utf8.count)
        let atLimit = try RawSocket(port: server.port)
        atLimit.send("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: \(pad)\r\n\r\n")
        #expect(String(decoding: atLimit.readToEnd(), as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
        let over = try RawSocket(port: server.port)
        over.send("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: \(pad)p\r\n\r\n")
        #expect(String(decoding: over.readToEnd(), as: UTF8.self).hasPrefix("HTTP/1.1 431"))
        // Methods other than GET: 405.
        let post = try RawSocket(port: server.port)
        post.send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
        #expect(String(decoding: post.readToEnd(), as: UTF8.self).hasPrefix("HTTP/1.1 405"))
    }

    @Test("a peer that stops answering pings is closed and reported (1006); one that answers stays")
    func liveness() async throws {
        let timeouts = WebSocketTimeouts(pingInterval: 0.2, pongDeadline: 1)
        let server = try EchoServer(configuration: .init(paths: nil, subprotocols: ["peernode.1"], timeouts: timeouts))
        let silent = try RawSocket(port: server.port)
        #expect(silent.handshake())
        let closes = try await server.waitForCloses(1, timeout: 5)
        #expect(closes.first?.code == .abnormal)
        #expect(closes.first?.reason.unsanitized.contains("ping") == true)
        // Our client answers pings by itself.
        let alive = try ClientProbe(port: server.port)
        #expect(await alive.next() == .open(subprotocol: "peernode.1"))
        // Three pings answered (each within the deadline), and still only the silent one closed.
        #expect(await eventually(10) { server.pongs.value >= 3 })
        #expect(server.closes.value.count == 1)
        alive.connection?.send(.text("still here"))
        #expect(await alive.next() == .message(.text("still here")))
    }

    @Test("a connection's first keepalive ping goes a ping interval after it opens, not at its handshake's deadline, with no other connection to wake the loop")
    func firstPing() async throws {
        // The handshake's own deadline is the default 10 s; the ping interval far shorter.
        let server = try EchoServer(configuration: .init(paths: nil, subprotocols: ["peernode.1"],
                                                         timeouts: WebSocketTimeouts(pingInterval: 0.2, pongDeadline: 5)))
        // The request only once the server has looked at the connection (its tick at accept), so
        // what the loop learned there is the handshake's deadline. The loop's tick count, read on its
        // thread: settled before the connect, one more after it.
        func ticks() async -> Int? {
            let seen = Locked<Int?>(nil)
            server.loop.execute { [loop = server.loop] in seen.withLock { $0 = loop.tickTurns } }
            return await eventuallyValue(5) { seen.value }
        }
        var last = await ticks(), settled: Int?
        let deadline = Deadline(5)
        while settled == nil && !deadline.passed {
            let now = await ticks()
            if now == last { settled = now } else { last = now }
        }
        let raw = try RawSocket(port: server.port)
        let looked = Deadline(5)
        var after = await ticks()
        while let s = settled, let a = after, a <= s, !looked.passed { after = await ticks() }
        #expect((after ?? 0) > (settled ?? .max), "the server's loop ticked at the accept: \(String(describing: settled)) → \(String(describing: after))")
        #expect(raw.handshake())
        let fd = raw.fd
        let first = try await offThePool { RawSocket.readFrameStart(fd, within: 2) }
        #expect(first?.first == 0x89, "a ping (FIN, opcode 9) within 2 s of the open: \(String(describing: first))")
        // And after each answer, the next a ping interval on (not at the answered ping's deadline).
        let alive = try ClientProbe(port: server.port)
        #expect(await alive.next() == .open(subprotocol: "peernode.1"))
        let before = server.pongs.value
        #expect(await eventually(3) { server.pongs.value >= before + 3 }, "pongs in 3 s: \(server.pongs.value - before)")
    }

    @Test("send queue: at the limit is fine, one byte past means the peer is not reading")
    func sendQueueRule() {
        #expect(!WebSocketConnection.sendQueueOverflows(pending: 1000, limit: 1000))
        #expect(WebSocketConnection.sendQueueOverflows(pending: 1001, limit: 1000))
        #expect(WebSocketLimits().maximumSendQueue == WebSocketLimits.defaultMaximumSendQueue)
    }

    @Test("a reader that does not keep up is closed with 1008, memory stays bounded")
    func slowReader() async throws {
        let limit = 256 << 10
        let closes = Locked<[CloseInfo]>([])
        let loop = try EventLoop()
        loop.start()
        defer { loop.shutdown() }
        let chunk = [UInt8](repeating: 0x42, count: 64 << 10)
        let server = WebSocketServer(
            loop: loop,
            configuration: .init(paths: nil, limits: WebSocketLimits(maximumSendQueue: limit), timeouts: WebSocketTimeouts(closeDeadline: 0.5)),
            callbacks: WebSocketCallbacks(
                onOpen: { c in for _ in 0..<2000 { c.send(.binary(chunk)) } },  // 128 MiB offered
                onClose: { _, info in closes.withLock { $0.append(info) } }))
        let port = try server.listen(host: "127.0.0.1", port: 0)
        let raw = try RawSocket(port: port, receiveBuffer: 4096)
        #expect(raw.handshake())  // then never reads
        let deadline = Deadline(10)
        while closes.value.isEmpty && !deadline.passed { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(closes.value.first?.code == .policyViolation)
        #expect(closes.value.first?.byPeer == false)
    }

    @Test("a sender that paces itself with whenUnsent(below:) sends 32 MiB through a 1 MiB send-queue limit to a slow reader: nothing closed, everything arrives, the queue stays near its window")
    func pacedSender() async throws {
        let window = 256 << 10
        let chunk = [UInt8](repeating: 0x5A, count: 64 << 10)
        let total = 512
        let state = Locked<(sent: Int, highest: Int, closes: [CloseInfo])>((0, 0, []))
        let loop = try EventLoop()
        loop.start()
        defer { loop.shutdown() }
        @Sendable func pump(_ c: WebSocketConnection) {
            while state.value.sent < total {
                guard c.unsentBytes < window else {
                    c.whenUnsent(below: window / 2) { pump(c) }
                    return
                }
                c.send(.binary(chunk))
                state.withLock { $0.sent += 1; $0.highest = max($0.highest, c.unsentBytes) }
            }
        }
        let server = WebSocketServer(
            loop: loop,
            configuration: .init(paths: nil, limits: WebSocketLimits(maximumSendQueue: 1 << 20)),
            callbacks: WebSocketCallbacks(onOpen: { c in pump(c) }, onClose: { _, info in state.withLock { $0.closes.append(info) } }))
        let port = try server.listen(host: "127.0.0.1", port: 0)
        let raw = try RawSocket(port: port, receiveBuffer: 16 << 10)
        #expect(raw.handshake())
        // Slow at first (the window fills and the sender waits), then read it all (off the test pool: recv blocks).
        #expect(await eventually(10) { state.value.highest >= window })
        let expected = total * (chunk.count + 10)  // 10: the header of an unmasked 64 KiB frame
        let fd = raw.fd
        let received = try await offThePool {
            var received = 0
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while received < expected {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                received += n
            }
            return received
        }
        #expect(received == expected)
        #expect(state.value.sent == total)
        #expect(state.value.closes.isEmpty, "\(state.value.closes)")
        #expect(state.value.highest <= window + chunk.count + 10, "the queue stayed within its window: \(state.value.highest)")
    }
}
