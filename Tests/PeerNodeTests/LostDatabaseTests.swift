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
        a.quit()

        // The database goes; the key stays. Restarting with --nick must not post
        // sequence 1 again: B holds the old one, and would refuse the new one as a fork.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dirs[0].path + "/peernode.db" + suffix) }
        let a2 = try NodeProcess(dir: dirs[0].path, ["--nick", "alice-again", "--peer", b.url])
        #expect(await started(a2))
        #expect(a2.id == a.id)
        #expect(await linked(a2, to: b))
        #expect(await a2.wait { $0["text"] == "three" && $0["author"] == a.id } != nil, "our history came back")
        // Posting may be refused for a moment while our history comes back; then it goes through.
        var posted = false
        for _ in 0..<50 where !posted {
            let errors = a2.events.value.filter { $0["type"] == "error" }.count
            a2.send("four")
            try? await Task.sleep(nanoseconds: 200_000_000)
            let refusals = a2.events.value.filter { $0["type"] == "error" }
            if refusals.count == errors {
                posted = true
            } else {
                #expect(refusals.last?["error"]?.contains("coming back") == true, "\(refusals.last ?? [:])")
            }
        }
        #expect(posted)
        await b.wait { $0["text"] == "four" }
        #expect(b.messages(from: a.id) == ["one", "two", "three", "four"])
        // The deferred nick went out after the history, and B took everything: no fork.
        #expect(await b.wait { $0["type"] == "message" && $0["author"] == a.id && $0["nick"] == "alice-again" } != nil)
        b.send("/stats")
        let stats = await b.wait { $0["type"] == "stats" }
        #expect(stats?["fork"] == nil || stats?["fork"] == "0", "\(stats ?? [:])")
        #expect(stats?["invalid_envelope"] == nil || stats?["invalid_envelope"] == "0", "\(stats ?? [:])")
        a2.quit(); b.quit()
    }
}
