import Foundation
import Store
import TestSupport
import Testing

/// Own posts go to the links before their fsync (docs/DECISIONS.md, "Own
/// posts are sent before their fsync"). A machine that stops in between
/// can lose a post a peer already holds; these tests make that disk by
/// hand (the database as it was before the post, and another boot on
/// record) and check that no sequence number is used twice.
@Suite("A machine that stops while its node runs", .serialized)
struct MachineStopTests {
    /// What a machine's stop can take back: the database and the post written aside before its row (`own-intent`).
    static let databaseFiles = ["peernode.db", "peernode.db-wal", "peernode.db-shm", "own-intent"]

    static func copyDatabase(from source: String, to target: String) throws {
        for name in databaseFiles {
            try? FileManager.default.removeItem(atPath: target + "/" + name)
            if FileManager.default.fileExists(atPath: source + "/" + name) {
                try FileManager.default.copyItem(atPath: source + "/" + name, toPath: target + "/" + name)
            }
        }
    }

    @Test("a post that reached a peer but not this disk before the machine stopped: posting waits for a peer's clock, alone and across a restart in the same boot; with the peer, the post comes back and the next one follows it (no fork)")
    func lostTail() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        a.send("one")
        await b.wait { $0["text"] == "one" }
        await a.quit()
        // The disk as the machine will leave it: "one", and not "two".
        let disk = TemporaryDirectory()
        try Self.copyDatabase(from: dirs[0].path, to: disk.path)
        let a2 = try NodeProcess(dir: dirs[0].path, ["--peer", b.url])
        #expect(await started(a2))
        #expect(await linked(a2, to: b))
        a2.send("two")
        #expect(await b.wait { $0["text"] == "two" } != nil)
        await a2.quit()
        try Self.copyDatabase(from: disk.path, to: dirs[0].path)
        // ... and the machine booted again.
        do {
            let store = try Store(directory: try DataDirectory(path: dirs[0].path))
            #expect(try store.setting("last_boot") != nil, "the node records the boot it runs under")
            try store.setSetting("last_boot", "an earlier boot")
        }

        // Alone, and again after a restart in this boot: refused with the reason, nothing signed.
        for run in 0..<2 {
            let alone = try NodeProcess(dir: dirs[0].path, [])
            #expect(await started(alone))
            alone.send("three")
            let refusal = await alone.wait { $0["type"] == "error" }
            #expect(refusal?["error"]?.contains("this machine stopped while peernode ran") == true, "run \(run): \(alone.recent(5))")
            #expect(!alone.events.value.contains { $0["type"] == "message" && $0["text"] == "three" })
            await alone.quit()
        }

        // With Bob: "two" comes back, and "three" follows it.
        let back = try NodeProcess(dir: dirs[0].path, ["--peer", b.url])
        #expect(await started(back))
        #expect(await back.wait { $0["text"] == "two" && $0["author"] == a.id } != nil, "\(back.recent(5))")
        #expect(await postWhenAllowed(back, "three").posted)
        #expect(await b.wait { $0["text"] == "three" } != nil)
        #expect(b.messages(from: a.id) == ["one", "two", "three"])
        #expect(b.sequence(of: "three") == b.sequence(of: "two").map { $0 + 1 }, "the chain goes on after the post that came back")
        let stats = await b.stats()
        #expect(stats?["fork"] == nil || stats?["fork"] == "0", "\(stats ?? [:])")
        await back.quit()

        // The doubt is gone with the peer's word: alone again, posting goes at once.
        let later = try NodeProcess(dir: dirs[0].path, [])
        #expect(await started(later))
        later.send("four")
        #expect(await later.wait { $0["type"] == "message" && $0["text"] == "four" } != nil, "\(later.recent(5))")
        #expect(!later.events.value.contains { $0["type"] == "error" })
        await later.quit(); await b.quit()
    }

    @Test("a node killed under the same boot posts at once when restarted alone (the kernel kept what it had committed); a clean stop clears the boot on record")
    func killedProcess() async throws {
        let dir = TemporaryDirectory()
        let first = try NodeProcess(dir: dir.path, ["--nick", "ann"])
        #expect(await started(first))
        first.send("before the kill")
        #expect(await first.wait { $0["type"] == "message" && $0["text"] == "before the kill" } != nil)
        await first.kill()
        let boot = { () throws -> String? in try Store(directory: try DataDirectory(path: dir.path)).setting("last_boot") }
        #expect(try boot().map { !$0.isEmpty } == true, "killed: this boot stays on record")
        let again = try NodeProcess(dir: dir.path, [])
        #expect(await started(again))
        again.send("after the kill")
        #expect(await again.wait { $0["type"] == "message" && $0["text"] == "after the kill" } != nil, "\(again.recent(5))")
        #expect(!again.events.value.contains { $0["type"] == "error" })
        await again.quit()
        #expect(try boot() == "", "a clean stop records that nothing of ours is only on peers: no wait after any reboot")
    }

    @Test("SIGTERM, SIGHUP and SIGINT stop a chat node as the end of its input does: exit 0, the peer sees it go, the WAL folded, the clean stop recorded")
    func stopSignals() async throws {
        let bob = TemporaryDirectory()
        let b = try NodeProcess(dir: bob.path, [])
        #expect(await started(b))
        for signal in [SIGTERM, SIGHUP, SIGINT] {
            let dir = TemporaryDirectory()
            let a = try NodeProcess(dir: dir.path, ["--peer", b.url])
            #expect(await started(a))
            #expect(await linked(a, to: b))
            a.send("before signal \(signal)")
            #expect(await a.wait { $0["type"] == "message" && $0["text"] == "before signal \(signal)" } != nil)
            let id = a.id
            let downs = b.events.value.count { $0["type"] == "peer_down" && $0["id"] == id }
            a.child.signal(signal)
            let status = await a.child.exited()
            #expect(status == 0, "signal \(signal): \(a.log.suffix(500))")
            let gone = await eventuallyValue(10) { () -> Bool? in
                b.events.value.count { $0["type"] == "peer_down" && $0["id"] == id } > downs ? true : nil
            }
            #expect(gone == true, "signal \(signal): \(b.recent(5))")
            let wal = (try? FileManager.default.attributesOfItem(atPath: dir.path + "/peernode.db-wal")[.size] as? Int) ?? 0
            #expect(wal == 0, "signal \(signal): WAL left with \(wal) bytes")
            let boot = try Store(directory: try DataDirectory(path: dir.path)).setting("last_boot")
            #expect(boot == "", "signal \(signal): the clean stop is on record")
        }
        await b.quit()
    }
}
