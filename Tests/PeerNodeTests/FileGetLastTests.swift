import ChatText
import Foundation
import Glibc
import TestSupport
import Testing

/// `/get` alone: the file offered last in the open room or conversation;
/// `/cancel` alone: the one fetch under way there.
@Suite("Getting and cancelling without a number")
struct FileGetLastTests {
    let files = FileTransferTests()

    @Test("/get alone parses as the last file; a word that is no number is refused with how to say it")
    func parse() {
        #expect(ChatInput.parse("/get") == .get(number: nil, folder: nil))
        #expect(ChatInput.parse("/get   ") == .get(number: nil, folder: nil))
        if case let .error(words) = ChatInput.parse("/get report.pdf") { #expect(words.contains("nothing for the last file here")) } else {
            Issue.record("a /get of a name is taken")
        }
        #expect(ChatInput.parse("/cancel") == .cancel(number: nil))
        #expect(ChatInput.parse("/cancel 7") == .cancel(number: 7))
        if case .error = ChatInput.parse("/cancel all") {} else { Issue.record("/cancel all is taken") }
    }

    @Test("/cancel with no number stops the one fetch under way here; with none it says so")
    func cancelTheOne() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        b.send("/cancel")
        #expect(await b.wait { $0["type"] == "error" && $0["error"] == "no file is being fetched in #general" } != nil, "\(b.recent(3))")
        let (n, root, _) = try await files.fetchUnderWay(from: a, to: b, "disk.img", size: 64 << 20, source: source, into: into.path, held: 4 << 20)
        b.send("/cancel")
        let ended = await b.wait { $0["type"] == "file_failed" && $0["n"] == n }
        #expect(ended?["reason"] == "cancelled" && ended?["root"] == root, "\(b.recent(4))")
        a.child.signal(SIGCONT)
        for node in [a, b] { await node.quit() }
        withExtendedLifetime(dirs) {}
    }

    @Test("/get with no number fetches the file offered last here (not an earlier one, not a text after it); with none offered, it says so")
    func lastOffered() async throws {
        let dirs = [TemporaryDirectory(), TemporaryDirectory()], source = TemporaryDirectory(), into = TemporaryDirectory()
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        // Bob's download folder is the test's own (a /get alone saves there), not the home of whoever runs the tests.
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url], environment: ["XDG_DOWNLOAD_DIR": into.path])
        #expect(await started(b))
        #expect(await linked(b, to: a))
        b.send("/get")
        #expect(await b.wait { $0["type"] == "error" && ($0["error"] ?? "").hasPrefix("no file is offered in #general yet") } != nil, "\(b.recent(3))")
        let first = try files.randomFile(source, "first.bin", size: 70_000), second = try files.randomFile(source, "second.bin", size: 90_000)
        a.send("/send \(first.path)")
        #expect(await b.wait { $0["type"] == "file" && $0["name"] == "first.bin" } != nil)
        a.send("/send \(second.path)")
        let offer = await b.wait { $0["type"] == "file" && $0["name"] == "second.bin" }
        a.send("a text after the files")
        #expect(await b.wait { $0["text"] == "a text after the files" } != nil)
        b.send("/get")
        let done = await b.wait(timeout: 60) { $0["type"] == "file_done" || $0["type"] == "file_failed" }
        #expect(done?["type"] == "file_done" && done?["n"] == offer?["n"] && done?["path"] == into.path + "/second.bin", "\(done ?? [:])")
        #expect(files.hash(of: into.path + "/second.bin") == second.hash)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: into.path)) == ["second.bin"])
        withExtendedLifetime(dirs) {}
        for node in [a, b] { await node.quit() }
    }
}
