import Foundation
import Glibc
import TestSupport
import Testing

/// The page in real headless Chromium (Debian's `chromium`, driven over
/// its DevTools protocol by Tests/PeerNodeTests/Peers/web_page_check.py),
/// against two nodes: the page's and one at the --json lines.
@Suite("The chat page in headless Chromium", .serialized)
struct WebPageTests {
    static let screenshot = WebPeers.logDirectory + "/web-page.png"

    @Test("the page posts and the peer sees it; the reply shows without a reload; the status reaches read; hostile text stays text in the DOM; another origin and a missing token are refused; after a restart the page reconnects by itself and shows what it missed")
    func page() async throws {
        if WebPeers.missing([WebPeers.python, WebPeers.chromium]) { return }
        let pair = try await PageAndPeer()
        let (dirs, b, address) = (pair.dirs, pair.b, pair.address)
        var a = pair.a
        b.send("/set receipts on")
        let check = try WebPeers.start("web_page_check.py", [address, pair.token, Self.screenshot])
        func said(_ word: String) async -> Bool { await WebPeers.said(check, word) }
        #expect(await said("POSTED"), "\(check.output)")
        let seen = await b.wait { $0["type"] == "message" && $0["author"] == a.id && $0["text"] == "<img src=x onerror=alert(1)> stays text" }
        #expect(seen != nil, "\(b.events.value.suffix(5))")
        b.send("hi page")
        let bob = b.id  // read outside the wait: its closure runs under the events' lock
        let own = await b.wait { $0["type"] == "message" && $0["author"] == bob && $0["text"] == "hi page" }
        check.send("REPLIED \(own?["fp"] ?? "none")\n")
        #expect(await said("RESTART"), "\(check.output)")
        await a.quit()
        b.send("while the page was away")
        // The same ports again, so the page and Bob find it where it was.
        let listen = String(a.ready?["listen"] ?? "")
        a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--web", address], listen: listen)
        #expect(await started(a))
        #expect(await linked(a, to: b))
        check.send("BACK\n")
        #expect(await said("RECONNECTED"), "\(check.output)")
        b.send("after the restart")
        check.send("SENT\n")
        let status = await check.exited()
        // Beside the screenshot: what each check said, to read after a run.
        try? check.output.write(toFile: Self.screenshot.replacingOccurrences(of: ".png", with: ".log"), atomically: true, encoding: .utf8)
        #expect(status == 0 && !check.output.contains("FAIL"), "\(check.output)")
        #expect(check.output.split(separator: "\n").count { $0.hasPrefix("ok ") } >= 21, "\(check.output)")
        #expect(FileManager.default.fileExists(atPath: Self.screenshot))
        await a.quit()
        await b.quit()
        withExtendedLifetime(dirs) {}
    }

    @Test("the page lists rooms and direct conversations with unread counts and previews, answers an invite, joins and leaves rooms, loads older history on scroll without moving the reader, searches, shows who is here, the peers and the sync state, works from the keyboard, folds at phone width and follows a dark system")
    func features() async throws {
        if WebPeers.missing([WebPeers.python, WebPeers.chromium]) { return }
        let pair = try await PageAndPeer()
        let (a, b) = (pair.a, pair.b)
        let alice = a.id
        // Bob's side of the story, before the page opens: the last line, a
        // direct message, comes after everything else in his chain.
        let history = (1...120).map { String(format: "h%03d", $0) }
        let story = ["/join #random", "first in random", "/join #history"] + history
            + ["/private #team", "/invite \(alice) #team", "/join #general", "rtl \u{202E}olleh\u{202C} zero\u{200B}width end", "/msg \(alice) psst", "/away at lunch"]
        for line in story { b.send(line) }
        #expect(await a.wait(timeout: 60) { $0["type"] == "message" && $0["kind"] == "dm" && $0["text"] == "psst" } != nil)
        let shot = Self.screenshot.replacingOccurrences(of: "web-page.png", with: "web-page-rooms.png")
        let check = try WebPeers.start("web_page_features_check.py", [pair.address, pair.token, shot])
        #expect(await WebPeers.said(check, "JOINED", timeout: 120), "\(check.output)")
        for line in ["/join #random", "news in random for alice", "/join #general"] { b.send(line) }
        check.send("POSTED\n")
        let status = await check.exited()
        try? check.output.write(toFile: shot.replacingOccurrences(of: ".png", with: ".log"), atomically: true, encoding: .utf8)
        #expect(status == 0 && !check.output.contains("FAIL"), "\(check.output)")
        #expect(check.output.split(separator: "\n").count { $0.hasPrefix("ok ") } >= 30, "\(check.output)")
        // The direct message the page sent reached bob.
        let dm = await b.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["author"] == alice && $0["text"] == "hi bob, privately" }
        #expect(dm != nil, "\(b.events.value.suffix(5))")
        // So did its /me, as a direct action.
        let action = await b.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["author"] == alice && $0["text"] == "waves privately" }
        #expect(action?["action"] == "yes", "\(b.events.value.suffix(5))")
        await a.quit()
        await b.quit()
        withExtendedLifetime(pair.dirs) {}
    }

    @Test("the page replies with a quote, reacts, edits and deletes from a message's buttons; bob's reaction, edit, typing and delete show as they come")
    func messageLife() async throws {
        if WebPeers.missing([WebPeers.python, WebPeers.chromium]) { return }
        let pair = try await PageAndPeer()
        let (a, b) = (pair.a, pair.b)
        let alice = a.id
        b.send("lunch at noon?")
        let lunch = try #require(await b.wait { $0["type"] == "message" && $0["text"] == "lunch at noon?" })
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "lunch at noon?" } != nil)
        let shot = Self.screenshot.replacingOccurrences(of: "web-page.png", with: "web-page-life.png")
        let check = try WebPeers.start("web_page_life_check.py", [pair.address, pair.token, shot, lunch["fp"] ?? ""])
        func said(_ word: String) async -> Bool { await WebPeers.said(check, word) }
        #expect(await said("REPLIED"), "\(check.output)")
        let reply = await b.wait { $0["type"] == "message" && $0["author"] == alice && $0["kind"] == "reply" }
        #expect(reply?["reply_to"] == lunch["id"] && reply?["text"] == "sure, the usual place", "\(String(describing: reply))")
        #expect(await b.wait { $0["type"] == "reaction" && $0["author"] == alice && $0["state"] == "on" } != nil)
        let n = lunch["n"] ?? "0"
        for line in ["/react \(n) 👍", "/edit \(n) lunch at one?", "/typing"] { b.send(line) }
        check.send("BOB\n")
        // The page's edit shown at bob before the page deletes it: sent on its heels, the delete can reach
        // bob's node in the same batch and erase the edit before it is shown (as it should).
        #expect(await said("EDITED"), "\(check.output)")
        #expect(await b.wait { $0["type"] == "edit" && $0["original"] == reply?["id"] && $0["text"] == "sure, at one" } != nil)
        check.send("SEEN\n")
        #expect(await said("CHANGED"), "\(check.output)")
        #expect(await b.wait { $0["type"] == "delete" && $0["id"] == reply?["id"] } != nil)
        b.send("/delete \(n)")
        check.send("GONE\n")
        let status = await check.exited()
        try? check.output.write(toFile: shot.replacingOccurrences(of: ".png", with: ".log"), atomically: true, encoding: .utf8)
        #expect(status == 0 && !check.output.contains("FAIL"), "\(check.output)")
        #expect(check.output.split(separator: "\n").count { $0.hasPrefix("ok ") } >= 14, "\(check.output)")
        await a.quit()
        await b.quit()
        withExtendedLifetime(pair.dirs) {}
    }
}

@Suite("Files in the page")
struct WebPageFileTests {
    @Test("a picture sent from a terminal node shows in the page inline once fetched with its Get button (screenshot); a large one fetched from the page is stopped with its Cancel button and erased; a file sent from the page's file input reaches the terminal node, whole, and one of 72 MiB (past the 64 MiB the page once took) is sent as the socket drains, its progress said; an empty one is refused and the next still goes; files dropped on the page and a pasted screenshot are sent (screenshot of the drop)")
    func files() async throws {
        if WebPeers.missing([WebPeers.python, WebPeers.chromium]) { return }
        let pair = try await PageAndPeer()
        let (a, b) = (pair.a, pair.b)
        let work = TemporaryDirectory(), into = TemporaryDirectory()
        let picture = work.path + "/sunset.png", upload = work.path + "/notes-from-page.txt"
        let shot = WebPageTests.screenshot.replacingOccurrences(of: "web-page.png", with: "web-page-files.png")
        let check = try WebPeers.start("web_page_files_check.py", [pair.address, pair.token, shot, picture, upload])
        #expect(await WebPeers.said(check, "MADE"), "\(check.output)")
        b.send("/send \(picture) the view from the office")
        #expect(await a.wait(timeout: 30) { $0["type"] == "file" && $0["name"] == "sunset.png" } != nil)
        // Large enough that the page's Cancel lands while it is fetched.
        let archive = try FileTransferTests().randomFile(work, "archive.tar", size: 64 << 20)
        b.send("/send \(archive.path)")
        let archiveOffer = await a.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "archive.tar" }
        check.send("SENT\n")
        #expect(await WebPeers.said(check, "UPLOADED"), "\(check.output)")
        // Cancelled from the page: the /get ended so, and nothing of it is kept.
        let root = archiveOffer?["root"] ?? "?"
        #expect(await a.wait { $0["type"] == "file_failed" && $0["root"] == root && $0["reason"] == "cancelled" } != nil, "\(a.recent(5))")
        let held = { ((try? FileManager.default.contentsOfDirectory(atPath: a.dir + "/files")) ?? []).filter { $0.contains(root) } }
        #expect(await eventually(30) { held().isEmpty }, "\(held())")
        let sent = await b.wait(timeout: 30) { $0["type"] == "file" && $0["name"] == "notes-from-page.txt" }
        #expect(sent?["from"] == a.id, "\(String(describing: sent))")
        b.send("/get \(sent?["n"] ?? "0") \(into.path)")
        let done = await b.wait(timeout: 60) { $0["type"] == "file_done" || $0["type"] == "file_failed" }
        #expect(done?["type"] == "file_done", "\(String(describing: done))")
        let got = FileManager.default.contents(atPath: into.path + "/notes-from-page.txt").map { String(decoding: $0, as: UTF8.self) }
        #expect(got == String(repeating: "notes from the page MARKER-UPLOAD\n", count: 1000))
        // Past what the page once took (64 MiB): offered whole, its size as the page read it.
        let big = await b.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "big-from-page.bin" }
        #expect(big?["size"] == String(72 << 20) && big?["from"] == a.id, "\(String(describing: big))")
        // Dropped on the page and pasted into it: offered as any file, whole, and nothing of the empty one.
        let dropped = await b.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "dropped-two.txt" }
        #expect(dropped?["from"] == a.id && dropped?["size"] == "25", "\(String(describing: dropped))")
        b.send("/get \(dropped?["n"] ?? "0") \(into.path)")
        let fetched = await b.wait(timeout: 60) { ($0["type"] == "file_done" || $0["type"] == "file_failed") && $0["root"] == dropped?["root"] }
        #expect(fetched?["path"] == into.path + "/dropped-two.txt", "\(String(describing: fetched))")
        #expect(FileManager.default.contents(atPath: into.path + "/dropped-two.txt") == Data("dropped two MARKER-DROP-2".utf8))
        #expect(await b.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "dropped-one.txt" } != nil)
        let pasted = await b.wait(timeout: 60) { $0["type"] == "file" && $0["name"]?.hasPrefix("pasted ") == true }
        #expect(pasted?["name"]?.hasSuffix(".png") == true && pasted?["media"] == "image/png", "\(String(describing: pasted))")
        #expect(!b.events.withLock { $0.contains { $0["type"] == "file" && ["empty.txt", "render.png", "a-folder", "into-search.png"].contains($0["name"] ?? "") } })
        let status = await check.exited()
        try? check.output.write(toFile: shot.replacingOccurrences(of: ".png", with: ".log"), atomically: true, encoding: .utf8)
        #expect(status == 0 && !check.output.contains("FAIL"), "\(check.output)")
        await a.quit()
        await b.quit()
        withExtendedLifetime(pair.dirs) {}
    }
}
