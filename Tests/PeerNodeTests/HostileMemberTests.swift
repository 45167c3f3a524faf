import Crypto
import Foundation
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
