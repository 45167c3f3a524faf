import Crypto
import Foundation
import TestSupport
import Testing

@Suite("Who is there: /peers with round-trip times, /who, /quit with a reason", .serialized)
struct PeerListTests {
    @Test("--json /peers: each linked peer with its address, round-trip time and sync state; /who lists the room; /quit REASON reaches the others as presence, not a message")
    func peersWhoQuit() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        a.send("hi bob")
        b.send("hi alice")
        await a.wait { $0["text"] == "hi alice" }
        await b.wait { $0["text"] == "hi bob" }

        // A probe leaves a second after the link comes up and every 10 s after: ask until its answer is in.
        var row: [String: String]?
        for _ in 0..<30 where row == nil {
            let before = b.events.value.count
            b.send("/peers")
            let summary = await b.wait(timeout: 5) { $0["type"] == "peers" }
            #expect(summary?["linked"] == "1")
            try? await Task.sleep(nanoseconds: 200_000_000)
            let fresh: [[String: String]] = Array(b.events.value.dropFirst(before))
            row = fresh.first { (e: [String: String]) -> Bool in e["type"] == "peer" && e["id"] == a.id && e["rtt_us"] != nil }
            if row == nil { try? await Task.sleep(nanoseconds: 500_000_000) }
        }
        #expect(row?["state"] == "linked" && row?["nick"] == "alice", "\(row ?? [:])")
        #expect(row?["addr"]?.hasPrefix("127.0.0.1:") == true)
        // Loopback: a round trip is well under a second (a sanity bound, not a benchmark).
        #expect((row?["rtt_us"]).flatMap { UInt64($0) }.map { $0 < 1_000_000 } == true)

        b.send("/who")
        await b.wait { $0["type"] == "member" && $0["id"] == a.id }
        let members = b.events.value.filter { $0["type"] == "member" }
        #expect(members.first { $0["id"] == a.id }?["state"] == "linked")
        #expect(members.first { $0["id"] == b.id }?["state"] == "you")

        // /quit with a reason: the others are told by its presence (gone, with the reason) before the link closes; no message is posted.
        b.send("/quit gone home")
        let told = await a.wait { $0["type"] == "presence" && $0["id"] == b.id && $0["state"] == "gone" }
        #expect(told?["reason"] == "gone home" && !a.events.value.contains { $0["kind"] == "action" && $0["author"] == b.id }, "alice saw: \(a.events.value.suffix(6)); bob saw: \(b.events.value.suffix(6)); bob logged: \(b.log.suffix(1_000)); alice logged: \(a.log.suffix(1_000))")
        #expect(await b.child.exited() == 0)
        await a.quit()
        withExtendedLifetime(dirs) {}  // the data directories outlive the nodes
    }

    /// `/peers` until a linked row for `who` is there (links come up in a moment).
    func linkRow(_ node: NodeProcess, _ who: NodeProcess) async -> [String: String]? {
        let deadline = Deadline(20)
        while !deadline.passed {
            let before = node.events.value.count
            node.send("/peers")
            guard let head = await node.wait(timeout: 5, { $0["type"] == "peers" }), let rows = head["rows"].flatMap({ Int($0) }) else { continue }
            // The head says how many rows follow it: those after it, once all are in.
            let listed = await eventuallyValue(5) { () -> [[String: String]]? in
                let fresh = node.events.value.dropFirst(before).filter { $0["type"] == "peer" }
                return fresh.count >= rows ? Array(fresh.prefix(rows)) : nil
            }
            if let row = listed?.first(where: { $0["id"] == who.id && $0["state"] == "linked" }) { return row }
        }
        return nil
    }

    @Test("links run AES-256-GCM between two nodes whose CPU has AES, ChaCha20-Poly1305 with a node started --link-cipher chachapoly; messages cross both; /peers says which")
    func linkCiphers() async throws {
        let (dirs, a, b) = try await aliceAndBob(extra: 1)
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", a.url, "--link-cipher", "chachapoly"])
        #expect(await started(c))
        #expect(await linked(a, to: c))
        let fast = NoiseCipher.aesGCM.isAvailable ? "AESGCM" : "ChaChaPoly"
        let toBob = await linkRow(a, b), toCarol = await linkRow(a, c), fromCarol = await linkRow(c, a)
        #expect(toBob?["cipher"] == fast && toBob?["link_version"] == "10", "\(toBob ?? [:])")
        #expect(toCarol?["cipher"] == "ChaChaPoly" && fromCarol?["cipher"] == "ChaChaPoly" && fromCarol?["link_version"] == "10",
                "\(toCarol ?? [:]) \(fromCarol ?? [:])")
        b.send("from bob")
        c.send("from carol")
        #expect(await c.wait { $0["text"] == "from bob" } != nil, "bob's post crossed both links")
        #expect(await b.wait { $0["text"] == "from carol" } != nil, "carol's post crossed both links")
        for node in [a, b, c] { await node.quit() }
        withExtendedLifetime(dirs) {}
    }
}
