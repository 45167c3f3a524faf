import Foundation
import TestSupport
import Testing

/// A relay's fan-out with its seals on both cores (`LinkCore.inParallel`), over
/// real links: every node linked to it gets every message, whole and in order.
@Suite("A relay's fan-out sealed on all the cores")
struct RelayFanOutTests {
    @Test("ten nodes linked to a relay only: one posts three messages of 9,000 bytes, the relay seals each for nine links at once (past 8 links and 64 KB), and all nine show all three in order")
    func splitFanOut() async throws {
        let dirs = (0..<11).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let ready = try #require(await relay.ready())
        let listen = try #require(ready["listen"])
        // --max-links 0: the nodes link to the relay only, so every message crosses its fan-out.
        let nodes = try (1...10).map { i in try NodeProcess(dir: dirs[i].path, ["--nick", "n\(i)", "--max-links", "0", "--peer", "ws://" + listen]) }
        for node in nodes {
            #expect(await started(node))
            #expect(await node.wait { $0["type"] == "peer_up" && $0["id"] == ready["id"] } != nil)
        }
        // A node says it is linked when its side of the handshake ends; the relay's side ends a message
        // later. Posted before the relay has all ten up, the fan-out goes to fewer than eight links (the
        // rest catch up, one link at a time) and nothing is split.
        let metricsAddress = try #require(ready["metrics"])
        let allUp = await eventually(30) {
            (fetchMetrics(metricsAddress)?["peernode_links"] ?? 0) >= Double(nodes.count)
        }
        #expect(allUp, "the relay never had all \(nodes.count) links up")
        let texts = (1...3).map { "\($0) " + String(repeating: "x", count: 9_000) }
        for text in texts { nodes[0].send(text) }
        for node in nodes.dropFirst() {
            if await node.wait(timeout: 30, { $0["text"] == texts[2] }) == nil { Issue.record("a node never showed the third message") }
            #expect(node.messages(from: nodes[0].id) == texts)
        }
        let metrics = try #require(fetchMetrics(metricsAddress))
        #expect((metrics["peernode_seals_split_total"] ?? 0) >= 1, "the relay split no fan-out: \(metrics.filter { $0.key.contains("seals") })")
        for node in nodes { await node.quit() }
        _ = await relay.terminate()
    }
}
