import Foundation
import TestSupport
import Testing

@Suite("A node whose database was lost, with its identity key kept", .serialized)
struct LostDatabaseTests {
    @Test("restarted on an empty database with --nick: the nick waits for the peers, history comes back, new posts continue it (no fork)")
    func lostDatabase() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        for text in ["one", "two", "three"] { a.send(text) }
        await b.wait { $0["text"] == "three" }
        await a.quit()

        // The database goes; the key stays. Restarting with --nick must not post
        // sequence 1 again: B holds the old one, and would refuse the new one as a fork.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dirs[0].path + "/peernode.db" + suffix) }
        let a2 = try NodeProcess(dir: dirs[0].path, ["--nick", "alice-again", "--peer", b.url])
        #expect(await started(a2))
        #expect(a2.id == a.id)
        #expect(await linked(a2, to: b))
        #expect(await a2.wait { $0["text"] == "three" && $0["author"] == a.id } != nil, "our history came back")
        // Posting may be refused for a moment while our history comes back; then it goes through.
        let four = await postWhenAllowed(a2, "four")
        for refusal in four.refusals {
            #expect(refusal["error"]?.contains("coming back") == true, "\(refusal)")
        }
        #expect(four.posted)
        await b.wait { $0["text"] == "four" }
        #expect(b.messages(from: a.id) == ["one", "two", "three", "four"])
        // The deferred nick went out after the history, and B took everything: no fork.
        #expect(await b.wait { $0["type"] == "message" && $0["author"] == a.id && $0["nick"] == "alice-again" } != nil)
        let stats = await b.stats()
        #expect(stats?["fork"] == nil || stats?["fork"] == "0", "\(stats ?? [:])")
        #expect(stats?["invalid_envelope"] == nil || stats?["invalid_envelope"] == "0", "\(stats ?? [:])")
        await a2.quit(); await b.quit()
    }

    @Test("restarted on an empty database with nobody linked: every post is refused with the reason (no fork); once a peer says, posting resumes and continues the old chain")
    func lostDatabaseAlone() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        for text in ["one", "two"] { a.send(text) }
        await b.wait { $0["text"] == "two" }
        await a.quit()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dirs[0].path + "/peernode.db" + suffix) }

        // Alone: a message, an action and a DM are all refused, and none is signed.
        let alone = try NodeProcess(dir: dirs[0].path, [])
        #expect(await started(alone))
        for line in ["three", "/me waves", "/msg \(b.id) hello"] { alone.send(line) }
        let deadline = Deadline(20)
        while alone.events.value.filter({ $0["type"] == "error" }).count < 3, !deadline.passed { try await Task.sleep(nanoseconds: 50_000_000) }
        let refusals = alone.events.value.filter { $0["type"] == "error" }
        #expect(refusals.count == 3 && refusals.allSatisfy { $0["error"]?.contains("posting waits until a peer says") == true }, "\(refusals)")
        #expect(!alone.events.value.contains { $0["type"] == "message" && $0["author"] == a.id })
        await alone.quit()

        // With B linked, the history comes back and the next post follows "two".
        let back = try NodeProcess(dir: dirs[0].path, ["--peer", b.url])
        #expect(await started(back))
        #expect(await back.wait { $0["text"] == "two" && $0["author"] == a.id } != nil)
        #expect(await postWhenAllowed(back, "three").posted)
        await b.wait { $0["text"] == "three" }
        #expect(b.messages(from: a.id) == ["one", "two", "three"])
        #expect(b.sequence(of: "three") == b.sequence(of: "two").map { $0 + 1 }, "the old chain goes on")
        let stats = await b.stats()
        #expect(stats?["fork"] == nil || stats?["fork"] == "0", "\(stats ?? [:])")
        await back.quit(); await b.quit()
    }

    @Test("a new identity that never posted may post after a restart with nobody linked (its database was made with the key)")
    func newIdentityRestartedAlone() async throws {
        let dir = TemporaryDirectory()
        let first = try NodeProcess(dir: dir.path, [])
        #expect(await started(first))
        await first.quit()
        let again = try NodeProcess(dir: dir.path, [])
        #expect(await started(again))
        again.send("hello, nobody")
        #expect(await again.wait { $0["type"] == "message" && $0["text"] == "hello, nobody" } != nil)
        #expect(!again.events.value.contains { $0["type"] == "error" })
        await again.quit()
    }
}
