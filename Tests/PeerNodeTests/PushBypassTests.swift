import Crypto
import Gossip
import TestSupport
import Testing
import WebSocket

/// Issue 13, finding 3: a peer declared a large clock of its own first, and
/// then 3,000 envelopes at or below it cost nothing against `--push-rate 100`.
@Suite("Hostile members: the push budget cannot be bypassed by declaring", .serialized)
struct PushBypassTests {
    @Test("finding 3: a peer that declares 3,000 envelopes of its own and then sends them all at once, against --push-rate 100 (a burst of 500), is closed with 1008 and counted; what was asked for (500) and the push burst (500) are kept, no more", arguments: LinkProtocol.allCases)
    func declaredThenFlooded(version: LinkProtocol) async throws {
        let (dir, node, port) = try await target(["--push-rate", "100"])
        let network = HostilePeer.lan
        let author = try SigningKey.generate()
        let chain = try generalChain(by: author, count: 3_000, network: network)
        // Its own clock at 3,000 first: under the old rule all of it came free.
        let messages = [GossipMessage.clock(entries: [Dependency(author: author.publicKey, sequence: 3_000)], full: true)] + batches(chain)
        let peer = try HostilePeer(identity: author, network: network, messages: messages, version: version)
        try await peer.attack(port: port, timeout: 30)
        let closed = peer.lock.withLock { peer.closed }
        #expect(closed?.code == .policyViolation, "\(String(describing: closed))")
        #expect(await counterReaches(node, "disconnected_flood", "1"))
        // The asked-for part arrives (at least the push burst's worth).
        #expect(await eventually(30) { node.messages(from: author.publicKey.hex).count >= 500 })
        node.send("/stats")
        let stats = await node.wait(timeout: 30) { $0["type"] == "stats" }
        // Counted are the refused envelopes of the message that crossed the budget (the rest never reach a closed link).
        let limited = (stats?["push_rate_limited"]).flatMap { Int($0) } ?? 0
        #expect(limited >= 1, "\(stats ?? [:])")
        await node.quit()
        // Every event is in once the node has exited: at most asked (500) + burst (500) + what refilled meanwhile.
        let stored = node.messages(from: author.publicKey.hex).count
        #expect(stored >= 500 && stored <= 1_200, "\(stored) of 3,000 stored")
        withExtendedLifetime(dir) {}
    }
}
