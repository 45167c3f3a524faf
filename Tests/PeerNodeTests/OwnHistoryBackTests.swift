import Foundation
import TestSupport
import Testing

/// A node that lost its database (its key kept) takes its own messages back
/// from a peer. They count as sent: the next command does not send or show
/// them again as if just posted (`finishStoring` raises `sentOwnUpTo`).
@Suite("Our own history back from a peer")
struct OwnHistoryBackTests {
    @Test("a node whose database was lost gets its own messages back from a peer and shows each once; its next post does not send or show them again")
    func backOnce() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let bob = try NodeProcess(dir: dirs[1].path, ["--nick", "bob"])
        #expect(await started(bob))
        var alice = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--peer", bob.url])
        #expect(await started(alice))
        #expect(await alice.wait { $0["type"] == "peer_up" } != nil)
        let texts = (1...5).map { "before the loss \($0)" }
        for text in texts { alice.send(text) }
        #expect(await bob.wait { $0["text"] == texts.last } != nil)
        #expect(await alice.quit() == 0)
        // The database goes, the key stays.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dirs[0].file("peernode.db" + suffix)) }
        alice = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--peer", bob.url])
        #expect(await started(alice))
        #expect(await alice.wait { $0["text"] == texts.last } != nil, "alice never got her own history back: \(alice.recent(6))")
        alice.send("after the loss")
        #expect(await bob.wait { $0["text"] == "after the loss" } != nil)
        #expect(await alice.wait { $0["text"] == "after the loss" } != nil)
        // Each old message once at each end: none shown again at alice, none delivered twice at bob.
        for text in texts {
            #expect(alice.events.value.count { $0["type"] == "message" && $0["text"] == text } == 1, "\(text) at alice: \(alice.recent(12))")
            #expect(bob.events.value.count { $0["type"] == "message" && $0["text"] == text } == 1, "\(text) at bob")
        }
        // What alice sent since the restart: the new post (and at most one more of her own), not her history again.
        alice.send("/stats")
        let sent = await alice.wait { $0["type"] == "stats" }.flatMap { Int($0["envelopes_sent"] ?? "") }
        #expect((sent ?? .max) <= 2, "alice sent \(sent.map(String.init) ?? "?") envelopes after her history came back")
        await alice.quit()
        await bob.quit()
    }
}
