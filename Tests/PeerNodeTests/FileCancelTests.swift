import ChatText
import Foundation
import Glibc
import TestSupport
import Testing

/// `/cancel N`: a `/get` under way stopped, what came of it erased.
@Suite("Cancelling a fetch", .serialized)
struct FileCancelTests {
    let files = FileTransferTests()

    @Test("""
        /cancel N mid-fetch ends the /get (file_failed, reason cancelled), erases what came (chunks, the temporary \
        file), and nothing goes on by itself after a restart; /get N again fetches it whole; /cancel of a file not \
        being fetched, or fetched already, says so and erases nothing
        """)
    func cancelMidway() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let (n, root, file) = try await files.fetchUnderWay(from: a, to: b, "backup.img", size: 160 << 20, source: source,
                                                            into: into.path, held: 20 << 20)
        let mark = b.events.value.count
        b.send("/cancel \(n)")
        let ended = await b.wait { $0["type"] == "file_failed" && $0["n"] == n }
        #expect(ended?["reason"] == "cancelled" && ended?["root"] == root, "\(b.recent(4))")
        a.child.signal(SIGCONT)
        // Nothing of it is left: no chunk file (the erase may still be overwriting it under another name), nothing in the folder.
        #expect(await eventually(30) { !files.chunkFiles(b).contains { $0.contains(root) } }, "\(files.chunkFiles(b))")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: into.path)) ?? ["?"]).isEmpty)
        b.send("/cancel \(n)")
        #expect(await b.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("not being fetched") } != nil, "\(b.recent(3))")
        #expect(b.events.value.dropFirst(mark).filter { $0["type"] == "file_progress" && $0["n"] == n }.count <= 1, "it went on after the cancel")

        // A restart does not take it up again.
        #expect(await b.quit() == 0)
        let again = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(again))
        #expect(await linked(again, to: a))
        #expect(await again.stats() != nil)
        #expect(!again.events.value.contains { $0["type"] == "file_progress" || $0["type"] == "file_done" }, "resumed: \(again.recent(4))")

        // Asked again, it comes whole; cancelled then, it is fetched already and stays.
        let done = await files.get(again, n, into: into.path, timeout: 120)
        #expect(done?["type"] == "file_done" && files.hash(of: into.path + "/backup.img") == file.hash, "\(done ?? [:]) \(again.recent(4))")
        again.send("/cancel \(n)")
        #expect(await again.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("fetched already") } != nil, "\(again.recent(3))")
        #expect(files.chunkFiles(again).contains(root) && files.hash(of: into.path + "/backup.img") == file.hash)
        for node in [a, again] { await node.quit() }
    }

    @Test("/cancel takes one message number, or none (the one fetched here); anything else is refused with how to use it")
    func parsing() {
        #expect(ChatInput.parse("/cancel 14") == .cancel(number: 14))
        #expect(ChatInput.parse("/cancel") == .cancel(number: nil))
        for wrong in ["/cancel 0", "/cancel -3", "/cancel report.pdf", "/cancel 14 15"] {
            if case .error = ChatInput.parse(wrong) {} else { Issue.record("\(wrong) was taken") }
        }
    }
}
