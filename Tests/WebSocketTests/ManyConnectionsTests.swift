import Foundation
import Glibc
import Testing
import TestSupport
import Reactor
@testable import WebSocket

@Suite("Many connections on one event-loop thread")
struct ManyConnectionsTests {
    static let connections = 2000

    @Test("2,000 clients on one loop, served by one server loop: every one gets its echo")
    func thousands() async throws {
        // Each connection costs a descriptor on both sides, in this one process.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let original = limit
        let needed = rlim_t(2 * Self.connections + 256)
        if limit.rlim_cur < needed {
            limit.rlim_cur = min(needed, limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        try #require(limit.rlim_cur >= needed, "RLIMIT_NOFILE hard limit \(limit.rlim_max) is below \(needed)")

        // All from 127.0.0.1: lift the per-address limit for this test of scale.
        let server = try EchoServer(configuration: .init(paths: ["/peernode/1"], subprotocols: ["peernode.1"],
                                                         maximumConnectionsPerAddress: Self.connections))
        let clientLoop = try EventLoop()
        clientLoop.start()
        let echoed = Locked<Set<Int>>([])
        let failures = Locked<Int>(0)
        var clients: [WebSocketConnection] = []
        for i in 0..<Self.connections {
            let callbacks = WebSocketCallbacks(
                onOpen: { c in c.send(.text("client \(i)")) },
                onMessage: { _, m in if m == .text("client \(i)") { echoed.withLock { _ = $0.insert(i) } } },
                onHandshakeFailure: { _, _ in failures.withLock { $0 += 1 } })
            clients.append(try WebSocketClient.connect(
                host: "127.0.0.1", port: server.port, path: "/peernode/1",
                configuration: .init(subprotocols: ["peernode.1"]), callbacks: callbacks, loop: clientLoop))
        }
        let deadline = Deadline(60)
        while echoed.value.count + failures.value < Self.connections && !deadline.passed {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(failures.value == 0)
        #expect(echoed.value.count == Self.connections)
        #expect(server.opened.value == Self.connections)
        withExtendedLifetime(clients) {}

        // Close every socket before the next test: Foundation's Process.run()
        // crashes (memcpy out of bounds) when it starts a child while
        // descriptors above 1023 are open. Then put the limit back.
        clientLoop.shutdown()
        server.loop.shutdown()
        let closeDeadline = Deadline(20)
        while openDescriptors() > 900 && !closeDeadline.passed { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(openDescriptors() <= 900)
        var restored = original
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored)
    }

    /// Descriptors open in this process right now.
    func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}
