import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Reactor
@testable import WebSocket

enum Peers {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers")
    /// The virtualenv `make test` fills with Python `websockets`.
    static let python = root.appendingPathComponent(".build/peers-venv/bin/python").path
    static let node = "/usr/bin/node"
    /// Debian's `node-ws` installs here; Node must be told.
    static let nodePath = "/usr/share/nodejs"

    static func script(_ name: String) -> String { scripts.appendingPathComponent(name).path }

    /// Fails the test with the reason when a peer is missing (never skips).
    static func require(_ path: String, _ what: String) -> Bool {
        if FileManager.default.isExecutableFile(atPath: path) { return true }
        Issue.record("\(what) not found at \(path): run `make test`, which installs the test peers")
        return false
    }
}

/// A process with its output collected; killed if it outlives `timeout`.
final class PeerProcess: @unchecked Sendable {
    let child: Child

    init(_ executable: String, _ arguments: [String]) throws {
        var env = ProcessInfo.processInfo.environment
        env["NODE_PATH"] = Peers.nodePath
        env["PYTHONUNBUFFERED"] = "1"
        child = try Child(executable, arguments, environment: env, stdout: .pipe, stderr: .stdout)
    }

    var text: String { child.output }

    /// Waits for a line starting with "PORT " and returns the port.
    func port(timeout: Double = 20) async throws -> UInt16? {
        let line = await eventuallyValue(timeout) { () -> Substring?? in
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) { return .some(line) }
            return child.isRunning ? nil : .some(nil)
        }
        return line?.flatMap { UInt16($0.dropFirst(5)) }
    }

    /// Waits for exit (killing it after `timeout`), returns the status.
    func wait(timeout: Double = 60) async throws -> Int32 {
        let deadline = Deadline(timeout)
        while child.isRunning && !deadline.passed { try await Task.sleep(nanoseconds: 20_000_000) }
        if child.isRunning { await stop() }
        return await child.exited()
    }

    /// Ends the peer (SIGTERM, then SIGKILL after two seconds).
    func stop() async {
        child.signal(SIGTERM)
        let deadline = Deadline(2)
        while child.isRunning && !deadline.passed { try? await Task.sleep(nanoseconds: 10_000_000) }
        child.signal(SIGKILL)
    }
}

/// Our echo server on a fresh event loop, recording how connections closed.
final class EchoServer: @unchecked Sendable {
    let loop: EventLoop
    let server: WebSocketServer
    let port: UInt16
    let closes = Locked<[CloseInfo]>([])
    let opened = Locked<Int>(0)
    /// Pongs received (answers to the server's keepalive pings).
    let pongs = Locked<Int>(0)

    init(configuration: WebSocketServer.Configuration = .init(paths: ["/peernode/1"], subprotocols: ["peernode.1"]),
         http: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil) throws {
        loop = try EventLoop()
        loop.start()
        let closes = self.closes
        let opened = self.opened
        let pongs = self.pongs
        let callbacks = WebSocketCallbacks(
            onOpen: { _ in opened.withLock { $0 += 1 } },
            onMessage: { connection, message in
                if case let .text(t) = message, t.hasPrefix("close:") {
                    let parts = t.split(separator: ":", maxSplits: 2).map(String.init)
                    connection.close(code: CloseCode(rawValue: UInt16(parts[1]) ?? 1000), reason: parts.count > 2 ? parts[2] : "")
                } else {
                    connection.send(message)
                }
            },
            onPong: { _, _ in pongs.withLock { $0 += 1 } },
            onClose: { _, info in closes.withLock { $0.append(info) } })
        server = WebSocketServer(loop: loop, configuration: configuration, callbacks: callbacks, httpHandler: http)
        port = try server.listen(host: "127.0.0.1", port: 0)
    }

    var url: String { "ws://127.0.0.1:\(port)/peernode/1" }

    /// Waits until `count` connections have closed.
    func waitForCloses(_ count: Int, timeout: Double = 10) async throws -> [CloseInfo] {
        let deadline = Deadline(timeout)
        while closes.withLock({ $0.count }) < count && !deadline.passed { try await Task.sleep(nanoseconds: 10_000_000) }
        return closes.withLock { $0 }
    }

    deinit { loop.shutdown() }
}

/// Our client, with its callbacks turned into an async sequence of events.
final class ClientProbe: @unchecked Sendable {
    enum Event: Equatable {
        case open(subprotocol: String?)
        case message(WebSocketMessage)
        case pong
        case closed(CloseInfo)
        case failed(HandshakeError)
    }

    let loop: EventLoop
    var connection: WebSocketConnection?
    private let queue = Locked<[Event]>([])

    /// Keepalive pings are pushed far out (`quiet`): under load a peer can
    /// be silent past the default 20 s, and the pong of a keepalive would
    /// then land between the events a conversation expects in order.
    static let quiet = WebSocketTimeouts(pingInterval: 600, pongDeadline: 60)

    init(port: UInt16, path: String = "/peernode/1",
         configuration: WebSocketClient.Configuration = .init(subprotocols: ["peernode.1"], timeouts: quiet),
         loop: EventLoop? = nil) throws {
        let l = try loop ?? EventLoop()
        l.start()
        self.loop = l
        let queue = self.queue
        connection = try WebSocketClient.connect(
            host: "127.0.0.1", port: port, path: path, configuration: configuration,
            callbacks: WebSocketCallbacks(
                onOpen: { c in queue.withLock { $0.append(.open(subprotocol: c.subprotocol)) } },
                onMessage: { _, m in queue.withLock { $0.append(.message(m)) } },
                onPong: { _, _ in queue.withLock { $0.append(.pong) } },
                onClose: { _, info in queue.withLock { $0.append(.closed(info)) } },
                onHandshakeFailure: { _, e in queue.withLock { $0.append(.failed(e)) } }),
            loop: l)
    }

    /// The next event, or nil after `timeout` seconds.
    func next(timeout: Double = 60) async -> Event? {
        await eventuallyValue(timeout, interval: .milliseconds(2)) { queue.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
    }

    deinit { loop.shutdown() }
}
