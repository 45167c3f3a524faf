import Crypto
import Foundation
import Glibc
import Gossip
@testable import PeerNode
import Store
import TestSupport
import Testing
import WebSocket

/// Issue 13: each finding of the outside review, played as the attacker over
/// a real link (the `HostilePeer` of the forged-envelope tests).
@Suite("Hostile members", .serialized)
struct HostileMemberTests {
    static let network = NetworkKey.derived(fromName: NetworkKey.defaultName)

    @Test("finding 1: a full clock naming two made-up authors at 2^63 is refused where it is decoded (the link closes with 1008); /sync, /peers and /stats still answer")
    func hugeClock() async throws {
        let (dir, node, port) = try await target()
        let made = try (0..<2).map { _ in try SigningKey.generate().publicKey }.sorted()
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: Self.network,
                                   messages: [.clock(entries: made.map { Dependency(author: $0, sequence: 1 << 63) }, full: true)])
        try await peer.attack(port: port, timeout: 20)
        #expect(peer.lock.withLock { peer.closed?.code } == .policyViolation)
        node.send("/sync")
        #expect(await node.wait { $0["type"] == "sync" }?["complete"] == "yes")
        node.send("/peers")
        #expect(await node.wait { $0["type"] == "peers" } != nil)
        node.send("/stats")
        let stats = await node.wait { $0["type"] == "stats" }
        #expect(stats?["bad_gossip_message"] == "1", "\(stats ?? [:])")
        node.quit()
        #expect(node.process.terminationStatus == 0)
        withExtendedLifetime(dir) {}
    }

    @Test("finding 1: a clock saved for a peer by an earlier version, naming authors at 2^63 and 2^64-1, is summed without a trap at start (/sync, /peers at the terminal and in --json)")
    func poisonedSavedClock() async throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: try DataDirectory(path: dir.path))
            let made = try (0..<3).map { _ in try SigningKey.generate().publicKey }
            let declared = VectorClock([made[0]: 1 << 63, made[1]: 1 << 63, made[2]: .max])
            try store.savePeerClocks(PeerClocks(sent: VectorClock(), declared: declared), of: try SigningKey.generate().publicKey, at: 1)
        }
        let text = try PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/sync\n/peers\n")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("missing \(UInt64.max) messages"), "\(text.stdout)")
        let node = try NodeProcess(dir: dir.path, [])
        #expect(await started(node))
        node.send("/sync")
        #expect(await node.wait { $0["type"] == "sync" }?["missing"] == "\(UInt64.max)")
        node.quit()
        #expect(node.process.terminationStatus == 0)
    }
}

extension HostileMemberTests {
    @Test("finding 6: a peer's WebSocket close reason reaches the terminal only sanitized (no title change, no screen clear, no fake message line)")
    func closeReason() async throws {
        let dir = TemporaryDirectory()
        let port = try freeLoopbackPort()
        let node = try TextNodeProcess(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:\(port)"])
        #expect(await node.waitFor("/help lists commands"))
        let evil = "bye\u{1B}]0;pwned\u{07}\u{1B}[2J\n[12:00] #general <alice·k3fq> send me your key"
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: Self.network, messages: [], closeReason: evil)
        try await peer.attack(port: port, timeout: 20)
        #expect(await node.waitFor("closed: bye"))
        let out = node.finish()
        #expect(!out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(out.debugDescription)")
        #expect(out.contains("closed: bye^[]0;pwned^G^[[2J^J[12:00] #general <alice·k3fq> send me your key"), "\(out)")
        // The line with the peer's words is one line: no second line starts with the fake message.
        #expect(!out.split(separator: "\n").contains { $0.hasPrefix("[12:00]") })
    }
}

/// A loopback port nobody listens on now (bound, read and released).
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return UInt16(bigEndian: address.sin_port)
}

/// A node as a person runs it without --json: its printed lines collected
/// (stdout is a pipe, so no prompt and no colours), stdin open until `finish`.
final class TextNodeProcess: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    let output = Locked<String>("")

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: PeerNodeProcess.binary)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardInput = input
        process.standardOutput = pipe
        process.standardError = pipe
        try launch(process)
        let output = output
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.withLock { $0 += String(decoding: data, as: UTF8.self) } }
        }
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    func waitFor(_ text: String, timeout: Double = 20) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.value.contains(text) { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return false
    }

    /// Ends the node (stdin closed) and returns all it printed.
    func finish() -> String {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.1)
        return output.value
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}
