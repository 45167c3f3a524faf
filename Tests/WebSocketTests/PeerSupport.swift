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
    let process = Process()
    private let output = Locked<String>("")
    private let pipe = Pipe()

    init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["NODE_PATH"] = Peers.nodePath
        env["PYTHONUNBUFFERED"] = "1"
        process.environment = env
        process.standardOutput = pipe
        process.standardError = pipe
        try launch(process)
        // A plain reading thread: the output is collected while the peer runs.
        let handle = pipe.fileHandleForReading
        let output = self.output
        Thread.detachNewThread {
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                output.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
    }

    var text: String { output.withLock { $0 } }

    /// Waits for a line starting with "PORT " and returns the port.
    func port(timeout: Double = 20) async throws -> UInt16? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) {
                return UInt16(line.dropFirst(5))
            }
            if !process.isRunning { return nil }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return nil
    }

    /// Waits for exit (killing it after `timeout`), returns the status.
    func wait(timeout: Double = 60) async throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        if process.isRunning { await stop() }
        try await Task.sleep(nanoseconds: 50_000_000)  // let the last output arrive
        return process.terminationStatus
    }

    /// Ends the peer (SIGTERM, then SIGKILL after two seconds).
    func stop() async {
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// Our echo server on a fresh event loop, recording how connections closed.
final class EchoServer: @unchecked Sendable {
    let loop: EventLoop
    let server: WebSocketServer
    let port: UInt16
    let closes = Locked<[CloseInfo]>([])
    let opened = Locked<Int>(0)

    init(configuration: WebSocketServer.Configuration = .init(paths: ["/peernode/1"], subprotocols: ["peernode.1"]),
         http: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil) throws {
        loop = try EventLoop()
        loop.start()
        let closes = self.closes
        let opened = self.opened
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
            onClose: { _, info in closes.withLock { $0.append(info) } })
        server = WebSocketServer(loop: loop, configuration: configuration, callbacks: callbacks, httpHandler: http)
        port = try server.listen(host: "127.0.0.1", port: 0)
    }

    var url: String { "ws://127.0.0.1:\(port)/peernode/1" }

    /// Waits until `count` connections have closed.
    func waitForCloses(_ count: Int, timeout: Double = 10) async throws -> [CloseInfo] {
        let deadline = Date().addingTimeInterval(timeout)
        while closes.withLock({ $0.count }) < count && Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
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

    init(port: UInt16, path: String = "/peernode/1", configuration: WebSocketClient.Configuration = .init(subprotocols: ["peernode.1"]),
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
    func next(timeout: Double = 30) async -> Event? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let e = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return e }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return nil
    }

    deinit { loop.shutdown() }
}
