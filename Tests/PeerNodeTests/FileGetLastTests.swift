import ChatText
import Foundation
import Glibc
@testable import PeerNode
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

    /// `/files`' row (`file_listed`, in `--json`) for each of `names`, by the file's name.
    static func listed(_ node: NodeProcess, _ names: [String]) async -> [String: [String: String]] {
        let mark = node.events.value.count
        node.send("/files")
        let rows = await eventuallyValue(30) { () -> [String: [String: String]]? in
            let rows = node.events.withLock { $0.dropFirst(mark).filter { $0["type"] == "file_listed" } }
            var found: [String: [String: String]] = [:]
            for name in names { found[name] = rows.first { $0["name"] == name } }
            return found.count == names.count ? found : nil
        }
        return rows ?? [:]
    }

    @Test("/files lists at most the newest 200 offers (Files.maximumListed): all of them at the limit, and one past it the newest 200 with a line that says older ones are not listed")
    func filesListedAtTheLimit() async throws {
        let dir = TemporaryDirectory(), source = TemporaryDirectory()
        let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
        #expect(await started(a))
        let limit = Files.maximumListed
        #expect(limit == 200)
        let file = try files.randomFile(source, "note.txt", size: 100)
        func offer(_ count: Int) async {
            let mark = a.events.value.count
            for _ in 0..<count { a.send("/send \(file.path)") }
            _ = await eventuallyValue(60) { a.events.withLock { $0.dropFirst(mark).count { $0["type"] == "file" } } >= count ? true : nil }
        }
        // The listing in --json: the terminal's lines as notices (as before: scripts read them), then its head
        // (`files`, with the count and `more`) and its rows, written together.
        func listing() async -> (head: [String: String], rows: [[String: String]], notices: [String]) {
            let mark = a.events.value.count
            a.send("/files")
            let head = await eventuallyValue(30) { a.events.withLock { $0.dropFirst(mark).first { $0["type"] == "files" } } } ?? [:]
            let count = Int(head["count"] ?? "") ?? -1
            let rows = await eventuallyValue(30) { () -> [[String: String]]? in
                let rows = a.events.withLock { $0.dropFirst(mark).filter { $0["type"] == "file_listed" } }
                return rows.count >= count ? rows : nil
            } ?? []
            let notices = a.events.withLock { $0.dropFirst(mark).compactMap { $0["type"] == "notice" ? $0["text"] : nil } }
            return (head, rows, notices)
        }
        await offer(limit)
        var (head, rows, notices) = await listing()
        #expect(head["room"] == "#general" && head["count"] == "\(limit)" && head["more"] == nil, "\(head)")
        #expect(notices.first == "-- files offered in #general:" && notices.count { $0.contains(") note.txt ") } == limit, "\(notices.prefix(3))")
        #expect(rows.count == limit && rows.allSatisfy { $0["name"] == "note.txt" && $0["state"] == "held" }, "\(rows.prefix(3))")
        await offer(1)
        (head, rows, notices) = await listing()
        #expect(head["count"] == "\(limit)" && head["more"] == "yes", "one past the limit says older ones are left out: \(head)")
        #expect(notices.contains("  (older ones not listed: these are the newest \(limit))"), "\(notices.prefix(3))")
        #expect(rows.count == limit && rows.first?["n"] == "2" && rows.last?["n"] == "\(limit + 1)",
                "the newest \(limit), oldest first: \(rows.first ?? [:]) … \(rows.last ?? [:])")
        await a.quit()
    }

    @Test("/files says where /get saved a file, after a restart too, and that it is gone from there once it is, with how to save it again")
    func filesSaysWhereSaved() async throws {
        let dirs = [TemporaryDirectory(), TemporaryDirectory()], source = TemporaryDirectory(), into = TemporaryDirectory()
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await linked(b, to: a))
        let kept = try files.randomFile(source, "kept.bin", size: 70_000), other = try files.randomFile(source, "other.bin", size: 5_000)
        a.send("/send \(kept.path)")
        let offer = try #require(await b.wait { $0["type"] == "file" && $0["name"] == "kept.bin" })
        a.send("/send \(other.path)")
        #expect(await b.wait { $0["type"] == "file" && $0["name"] == "other.bin" } != nil)
        let n = try #require(offer["n"])
        b.send("/get \(n) \(into.path)")
        let done = await b.wait(timeout: 60) { $0["type"] == "file_done" || $0["type"] == "file_failed" }
        let path = into.path + "/kept.bin"
        #expect(done?["type"] == "file_done" && done?["path"] == path, "\(done ?? [:])")

        var rows = await Self.listed(b, ["kept.bin", "other.bin"])
        #expect(rows["kept.bin"]?["state"] == "held" && rows["kept.bin"]?["saved"] == path && rows["kept.bin"]?["saved_gone"] == nil
                && rows["kept.bin"]?["bytes"] == "70000" && rows["kept.bin"]?["n"] == n, "\(rows)")
        #expect(rows["other.bin"]?["state"] == "not_fetched" && rows["other.bin"]?["saved"] == nil && rows["other.bin"]?["bytes"] == "0",
                "a file never fetched says nothing of a folder: \(rows)")
        // Alice's own offer: hers, never saved by a /get, so no folder is named.
        let hers = await Self.listed(a, ["kept.bin"])
        #expect(hers["kept.bin"]?["state"] == "held" && hers["kept.bin"]?["saved"] == nil, "\(hers)")

        // Kept across a restart; once the saved copy is gone, /files says so and how to save it again.
        #expect(await b.quit() == 0)
        #expect(unlink(path) == 0)
        let again = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(again))
        rows = await Self.listed(again, ["kept.bin"])
        #expect(rows["kept.bin"]?["saved"] == path && rows["kept.bin"]?["saved_gone"] == "yes", "\(rows)")
        again.send("/get \(n) \(into.path)")
        #expect(await again.wait(timeout: 60) { $0["type"] == "file_done" && $0["path"] == path } != nil, "\(again.recent(3))")
        #expect(files.hash(of: path) == kept.hash)
        rows = await Self.listed(again, ["kept.bin"])
        #expect(rows["kept.bin"]?["saved"] == path && rows["kept.bin"]?["saved_gone"] == nil, "\(rows)")
        withExtendedLifetime(dirs) {}
        for node in [a, again] { await node.quit() }
    }
}
