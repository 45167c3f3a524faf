import Foundation
import Glibc
import TestSupport
import Testing
/// Delete for everyone through a crash (issue 43): the purge an erasure
/// owes is kept in the database with the erasure, so a process killed
/// (SIGKILL) at any moment after applying a delete purges at its next start.
@Suite("Erasure through kill -9", .serialized)
struct ErasureCrashTests {
    enum Victim: String { case author, receiver, relay }

    /// How many links `n` has seen come up.
    static func ups(_ n: NodeProcess) -> Int { n.events.value.count { $0["type"] == "peer_up" } }

    @Test("""
        kill -9 of the author, a receiver or the relay at 0, 0.5, 1, 1.5 and 2 s after a delete, then a restart: at once, \
        and after all quit, no file of any data directory (database, WAL, search index) holds a word of the deleted \
        message or of its edit; the words were in the receiver's files before
        """)
    func killedAfterDelete() async throws {
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        // A fixed port, so a relay restarted after its kill is found where the nodes dial it. A port free when
        // picked can be taken by a test running beside this one before the relay binds it: then another.
        var port: UInt16 = 0, relayArguments: [String] = [], relay: RelayProcess?
        for _ in 0..<5 where relay == nil {
            port = try freeLoopbackPort()
            relayArguments = ["relay", "--data-dir", dirs[0].path, "--listen", "127.0.0.1:\(port)", "--metrics-listen", "127.0.0.1:0",
                              "--no-discovery", "--log-format", "json"]
            let started = try RelayProcess(commandLine: relayArguments)
            if await started.ready() != nil { relay = started } else { _ = await started.terminate() }
        }
        guard var relay else {
            Issue.record("no relay could listen on a free port in five tries")
            return
        }
        func node(_ i: Int, _ nick: String) throws -> NodeProcess {
            try NodeProcess(dir: dirs[i].path, ["--nick", nick, "--max-links", "0", "--peer", "ws://127.0.0.1:\(port)"])
        }
        var (a, b) = (try node(1, "alice"), try node(2, "bob"))
        for n in [a, b] { #expect(await started(n)) }
        var words: [String] = []
        let rounds: [(Victim, Double)] = [(.author, 0), (.receiver, 0), (.relay, 0.5), (.author, 0.5), (.receiver, 1),
                                          (.author, 1.5), (.receiver, 1.5), (.relay, 2), (.author, 2), (.receiver, 2)]
        for (round, (victim, delay)) in rounds.enumerated() {
            let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
            let secret = "zqx\(round)secret\(tag)", edited = "zqx\(round)edited\(tag)"
            words += [secret, edited]
            // Bob has the message and its edit.
            a.send("round \(round): \(secret)")
            guard let shown = await b.wait(timeout: 60, { $0["type"] == "message" && $0["text"] == "round \(round): \(secret)" }),
                  let id = shown["id"],
                  let own = await a.wait(timeout: 30, { $0["type"] == "message" && $0["id"] == id }), let number = own["n"] else {
                Issue.record("round \(round): bob never got the message; alice: \(a.recent(8)) bob: \(b.recent(8))")
                return
            }
            a.send("/edit round \(round): \(edited)")
            #expect(await b.wait(timeout: 60) { $0["type"] == "edit" && $0["text"] == "round \(round): \(edited)" } != nil)
            // The words are in the files of the node to be killed (a relay holds only sealed bodies, which name no word).
            let victimDir = dirs[victim == .author ? 1 : victim == .receiver ? 2 : 0].path
            if victim != .relay {
                let indexed = await eventuallyValue(30) { () -> Bool? in
                    !MessageLifeTests.files(in: victimDir, containing: edited).isEmpty ? true : nil
                }
                #expect(indexed == true, "round \(round): the words never reached the \(victim.rawValue)'s files: the round would show nothing")
            }
            // A delete just before, whose purge is seen to run (its word indexed, then gone from the files): the
            // next purge then waits `erasurePurgeInterval`, so the delete that matters is killed while its purge is owed.
            let scrap = "zqx\(round)scrap\(tag)", watched = victim == .author ? dirs[1].path : dirs[2].path
            a.send("round \(round): \(scrap)")
            guard let throwaway = await b.wait(timeout: 60, { $0["type"] == "message" && $0["text"] == "round \(round): \(scrap)" }) else {
                Issue.record("round \(round): the second line never reached bob")
                return
            }
            // `/search` indexes what is delivered before it answers: once it finds the word, the word is in the files.
            let watcher = victim == .author ? a : b
            watcher.send("/search \(scrap)")
            #expect(await watcher.wait(timeout: 60) { $0["type"] == "search" && $0["text"] == scrap && $0["count"] == "1" } != nil,
                    "round \(round): the line to take back was never found")
            #expect(!MessageLifeTests.files(in: watched, containing: scrap).isEmpty, "round \(round): the line to take back is in no file")
            a.send("/delete")
            #expect(await b.wait(timeout: 60) { $0["type"] == "delete" && $0["id"] == throwaway["id"] } != nil)
            let scrapPurged = await eventuallyValue(30) { MessageLifeTests.files(in: watched, containing: scrap).isEmpty ? true : nil }
            #expect(scrapPurged == true, "round \(round): the first delete's purge never ran")
            words.append(scrap)
            a.send("/delete \(number)")
            // The author applies its delete at once; the receiver (and so the relay, which passed it on) when bob shows it.
            let shower = victim == .author ? a : b
            #expect(await shower.wait(timeout: 60) { $0["type"] == "delete" && $0["id"] == id } != nil, "round \(round): the delete was never shown")
            let upsBefore = [Self.ups(a), Self.ups(b)]
            // The fault's own timing, not a wait for something: the kill lands `delay` s after the delete was applied.
            if delay > 0 { try await Task.sleep(for: .milliseconds(Int(delay * 1_000))) }
            switch victim {
            case .author:
                await a.kill()
                a = try node(1, "alice")
                #expect(await started(a))
            case .receiver:
                await b.kill()
                b = try node(2, "bob")
                #expect(await started(b))
            case .relay:
                relay.child.signal(SIGKILL)
                _ = await relay.child.exited()
                relay = try RelayProcess(commandLine: relayArguments)
                #expect(await relay.ready() != nil)
            }
            // Purged at the start, before anything else ran.
            let left = [secret, edited].flatMap { MessageLifeTests.files(in: victimDir, containing: $0) }
            #expect(left.isEmpty, "round \(round), \(victim.rawValue) killed \(delay) s after the delete: still in \(left)")

            // Both nodes are linked to the relay again before the next round: one more link up than before the kill
            // (a restarted node's first; after the relay's restart, each node's next).
            for (n, before) in [(a, victim == .author ? 0 : upsBefore[0]), (b, victim == .receiver ? 0 : upsBefore[1])] {
                let wanted = victim == .relay || before == 0 ? before + 1 : before
                let up = await eventuallyValue(90) { () -> Bool? in Self.ups(n) >= wanted ? true : nil }
                #expect(up == true, "round \(round): not linked to the relay again: \(n.recent(6))")
            }
        }
        for n in [a, b] { #expect(await n.quit() == 0) }
        _ = await relay.terminate()
        for dir in dirs {
            let left = words.filter { !MessageLifeTests.files(in: dir.path, containing: $0).isEmpty }
            #expect(left.isEmpty, "after every process quit, \(dir.path) still holds \(left)")
        }
    }
}
