import Foundation
import Glibc
import TestSupport
import Testing

/// A file offered is handed to relays that come later: one first linked
/// after the offer (and after its author restarted), and one that was
/// killed while fetching it (`RelayHandOver`, `Files.eraseUnfinished`).
@Suite("Files handed to relays linked later or restarted", .serialized)
struct HandOverAgainTests {
    let files = FileTransferTests()

    func relayFiles(_ dir: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: dir + "/files")) ?? []
    }

    @Test("""
        alice offers a file linked to no relay and quits; started again with the relay, she hands it over (read back \
        from her store) and quits; carol, who reaches nobody but the relay, fetches it whole
        """)
    func handedLater() async throws {
        let apart = try RelayOnlyFileTests.ApartPorts()
        defer { withExtendedLifetime(apart) {} }
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let url = "ws://" + (try #require(await relay.ready())["listen"] ?? "")
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let file = try files.randomFile(source, "slides.odp", size: 3 << 20)
        let alone = try NodeProcess(dir: dirs[1].path, ["--nick", "alice"], listen: "127.0.0.1:\(apart.ports[0])")
        #expect(await started(alone))
        alone.send("/send \(file.path)")
        let offer = try #require(await alone.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "slides.odp" })
        #expect(await alone.quit() == 0)
        #expect(relayFiles(dirs[0].path).isEmpty)
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", url], listen: "127.0.0.1:\(apart.ports[0])")
        #expect(await started(a))
        let tree = (offer["root"] ?? "?") + ".tree"
        #expect(await eventually(60) { relayFiles(dirs[0].path).contains(tree) }, "the relay holds it whole: \(relayFiles(dirs[0].path)) \(a.recent(4))")
        #expect(await a.quit() == 0)
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", url], listen: "127.0.0.1:\(apart.ports[1])")
        #expect(await started(c))
        let seen = try #require(await c.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "slides.odp" })
        let done = await files.get(c, try #require(seen["n"]), into: into.path, timeout: 60)
        #expect(done?["type"] == "file_done" && files.hash(of: into.path + "/slides.odp") == file.hash, "\(done ?? [:]) \(c.recent(5))")
        await c.quit()
        _ = await relay.terminate()
    }

    @Test("""
        a relay killed (SIGKILL) while fetching a file handed to it erases what it held in part when it starts again, \
        and alice's next link hands it over again: the relay ends holding the same sealed chunks as she does
        """)
    func relayKilledWhileFetching() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let port = try freeLoopbackPort()
        let arguments = ["relay", "--data-dir", dirs[0].path, "--listen", "127.0.0.1:\(port)", "--metrics-listen", "127.0.0.1:0",
                         "--no-discovery", "--log-format", "json"]
        let first = try RelayProcess(commandLine: arguments)
        #expect(await first.ready() != nil)
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", "ws://127.0.0.1:\(port)"])
        #expect(await started(a))
        #expect(await a.wait { $0["type"] == "presence" && $0["state"] == "relay" } != nil, "the relay's presence: \(a.recent(4))")
        let source = TemporaryDirectory()
        let size = 160 << 20
        let file = try files.randomFile(source, "backup.img", size: size)
        a.send("/send \(file.path)")
        let offer = try #require(await a.wait(timeout: 120) { $0["type"] == "file" && $0["name"] == "backup.img" })
        let root = try #require(offer["root"])
        let chunkFile = dirs[0].path + "/files/" + root
        let held = { () -> Int in (try? FileManager.default.attributesOfItem(atPath: chunkFile)[.size] as? Int) ?? 0 }
        // Once the relay holds some 20 MiB, alice stops: it can get no further than what she was asked before.
        #expect(await eventually(120, interval: .milliseconds(5)) { held() > 20 << 20 }, "the relay fetches: \(relayFiles(dirs[0].path))")
        a.child.signal(SIGSTOP)
        first.child.signal(SIGKILL)
        _ = await first.child.exited()
        #expect(held() < size * 3 / 4 && !relayFiles(dirs[0].path).contains(root + ".tree"), "killed while fetching: \(held()) bytes held")
        let again = try RelayProcess(commandLine: arguments)
        #expect(await again.ready() != nil)
        a.child.signal(SIGCONT)
        #expect(await eventually(120) { relayFiles(dirs[0].path).contains(root + ".tree") }, "handed over again: \(relayFiles(dirs[0].path)) \(a.recent(5))")
        #expect(files.hash(of: chunkFile) == files.hash(of: dirs[1].path + "/files/" + root), "the relay's sealed chunks are alice's")
        await a.quit()
        _ = await again.terminate()
    }
}
