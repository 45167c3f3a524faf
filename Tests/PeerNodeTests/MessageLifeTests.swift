import Foundation
import Gossip
@testable import Store
import TestSupport
import Testing

/// Edit and delete for everyone (issue 17), across three nodes and a relay.
@Suite("Edit and delete across nodes and a relay", .serialized)
struct MessageLifeTests {
    /// Every file of a data directory that holds `needle` (the database, its WAL, anything).
    static func files(in dir: String, containing needle: String) -> [String] {
        let bytes = Array(needle.utf8)
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: dir)) ?? []
        return names.filter { name in
            guard let data = FileManager.default.contents(atPath: dir + "/" + name), data.count >= bytes.count else { return false }
            return data.withUnsafeBytes { raw in
                let all = raw.bindMemory(to: UInt8.self)
                var i = 0
                while i + bytes.count <= all.count {
                    if all[i] == bytes[0], (0..<bytes.count).allSatisfy({ all[i + $0] == bytes[$0] }) { return true }
                    i += 1
                }
                return false
            }
        }
    }

    /// What each process last said, for a failure message: each node is
    /// asked for its sync state, peers and counters first, and the relay's
    /// counters are read from its metrics address.
    static func state(_ nodes: [NodeProcess], _ relay: RelayProcess) async -> String {
        let asked = nodes.map { $0.events.value.count }
        for n in nodes { for command in ["/sync", "/peers", "/stats"] { n.send(command) } }
        // Until each has answered (a node that does not within 10 s is stuck: that says something too).
        for (n, before) in zip(nodes, asked) {
            _ = await eventuallyValue(10) { n.events.withLock { $0.dropFirst(before).contains { $0["type"] == "stats" } } ? true : nil }
        }
        let metrics = relay.log.value.first { $0["msg"] == "relay ready" }?["metrics"].flatMap { httpGet($0, "/metrics")?.body } ?? ""
        let counters = metrics.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.hasSuffix(" 0") }.joined(separator: "; ")
        return nodes.map { "\n\($0.id.prefix(8)):\($0.recent(24))\n  log: \($0.log.suffix(800))" }.joined()
            + "\nrelay: \(relay.log.value.suffix(12))\nrelay metrics: \(counters)"
    }

    /// Alice, bob and carol (`--json`), each linked only to a relay (data directories: the relay's first).
    static func throughRelay() async throws -> (dirs: [TemporaryDirectory], relay: RelayProcess, nodes: [NodeProcess]) {
        let dirs = (0..<4).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let ready = try #require(await relay.ready())
        let listen = try #require(ready["listen"])
        let nodes = try ["alice", "bob", "carol"].enumerated().map { i, nick in
            try NodeProcess(dir: dirs[i + 1].path, ["--nick", nick, "--max-links", "0", "--peer", "ws://" + listen])
        }
        for n in nodes { #expect(await started(n)) }
        for n in nodes { #expect(await n.wait { $0["type"] == "peer_up" && $0["id"] == ready["id"] } != nil) }
        return (dirs, relay, nodes)
    }

    @Test("an edit reaches everyone as (edited); a delete erases the text and its edit from every file of three nodes and a relay; every chain still verifies; integrity_check is clean")
    func editAndDelete() async throws {
        let trio = try await Self.throughRelay()
        let (dirs, relay, nodes) = (trio.dirs, trio.relay, trio.nodes)
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])

        // One word each, so the full-text index holds it as one term.
        let secret = "zqxsecretword7f3a", edited = "zqxeditedword9b1c"
        a.send("a line that stays")
        a.send("the plan is \(secret)")
        guard let original = await c.wait({ $0["type"] == "message" && $0["text"] == "the plan is \(secret)" }) else {
            Issue.record("carol never got alice's message through the relay: \(await Self.state(nodes, relay))")
            return
        }
        #expect(await b.wait { $0["text"] == "the plan is \(secret)" } != nil)
        a.send("/edit the plan is \(edited)")
        for n in [b, c] {
            let edit = await n.wait { $0["type"] == "edit" }
            #expect(edit?["original"] == original["id"] && edit?["text"] == "the plan is \(edited)", "\(String(describing: edit))")
        }
        // Both words are in the index of a reader (the check can see them: it is not vacuous).
        b.send("/search \(secret)")
        b.send("/search \(edited)")
        let indexed = await eventuallyValue(30) { () -> Bool? in
            !Self.files(in: dirs[2].path, containing: secret).isEmpty && !Self.files(in: dirs[2].path, containing: edited).isEmpty ? true : nil
        }
        #expect(indexed == true, "the index never held the words")

        // Someone else cannot delete alice's message: bob's /delete 2 names it by number.
        for n in 1...8 { b.send("/delete \(n)") }
        #expect(await b.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("not yours") } != nil, "\(b.events.value.suffix(3))")
        #expect(!b.events.value.contains { $0["type"] == "delete" })

        a.send("/delete")
        for n in [b, c] {
            #expect(await n.wait { $0["type"] == "delete" && $0["id"] == original["id"] } != nil, "\(n.events.value.suffix(3))")
        }
        // After the purge (a quiet moment, then the index merged and the WAL truncated):
        // neither word is in any file of any data directory.
        let gone = await eventuallyValue(60) { () -> Bool? in
            dirs.allSatisfy { Self.files(in: $0.path, containing: secret).isEmpty && Self.files(in: $0.path, containing: edited).isEmpty } ? true : nil
        }
        #expect(gone == true, "still there: \(dirs.map { $0.path }) \(dirs.map { Self.files(in: $0.path, containing: secret) + Self.files(in: $0.path, containing: edited) })")
        _ = await relay.terminate()
        for n in nodes { _ = await n.quit() }
        // Every chain verifies, the erased envelopes are pruned, the database is sound.
        for dir in dirs {
            let store = try Store(directory: try DataDirectory(path: dir.path))
            #expect(try store.db.text("PRAGMA integrity_check") == "ok")
            let s = try store.db.statement("SELECT bytes FROM envelopes ORDER BY author, sequence")
            var previous: Envelope?
            var pruned = 0
            while try s.step() {
                let e = try Envelope.decode(s.blob(0))  // signatures (and erasure proofs) checked
                if let p = previous, p.author == e.author, p.sequence + 1 == e.sequence { try e.checkFollows(p) }
                if e.isPruned { pruned += 1 }
                previous = e
            }
            #expect(pruned == 2, "the message and its edit, in \(dir.path)")
        }
    }

    @Test("at the terminal: /history numbers messages; /edit N and /edit change the text shown (edited); /delete N erases; errors for what cannot be changed")
    func terminal() async throws {
        let dir = TemporaryDirectory()
        let node = try TextNodeProcess(["--data-dir", dir.path, "--no-discovery", "--nick", "alice"])
        #expect(await node.waitFor("/help lists commands"))
        node.send("first line")
        node.send("second line")
        node.send("/history 5")
        #expect(await node.waitFor("> second line"))
        node.send("/edit 999 nothing there")
        #expect(await node.waitFor("no message numbered 999"))
        node.send("/edit second, edited")
        #expect(await node.waitFor("second, edited (edited)"))
        node.send("/history 5")
        #expect(await node.waitFor("<alice·"))
        node.send("/delete")
        #expect(await node.waitFor("deleted a message"))
        node.send("/history 5")
        let out = await node.finish()
        // The numbered history line of the first message, its edit shown in place, then erased.
        #expect(out.contains(") [") && out.contains("first line"), "\(out)")
        let lastHistory = out.components(separatedBy: "--- #general").last ?? ""
        #expect(!lastHistory.contains("second") && lastHistory.contains("deleted a message") && lastHistory.contains("first line"), "\(lastHistory)")
    }
}
