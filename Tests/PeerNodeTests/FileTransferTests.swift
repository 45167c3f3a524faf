import ChatText
import Crypto
import Foundation
import Glibc
import NodeCore
@testable import PeerNode
import TestSupport
import Testing

/// Files over real links between real node processes (issue 39;
/// docs/PROTOCOL.md §16): offered in a room, fetched verified from whoever
/// holds them, resumed after a kill, caught serving a bad chunk, erased by
/// a delete.
@Suite("Files between nodes: fetched from the swarm, checked, resumed, erased")
struct FileTransferTests {
    /// A file of `size` random bytes in `dir`, and its BLAKE2b-256 in hex.
    func randomFile(_ dir: TemporaryDirectory, _ name: String, size: Int) throws -> (path: String, hash: String) {
        let path = dir.path + "/" + name
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let bytes = [UInt8](random.readData(ofLength: size))
        try random.close()
        #expect(bytes.count == size && FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return (path, Hex.encode(BLAKE2b.hash(bytes)))
    }

    func hash(of path: String) -> String? {
        FileManager.default.contents(atPath: path).map { Hex.encode(BLAKE2b.hash([UInt8]($0))) }
    }

    /// Alice offers `name` (`size` random bytes from `source`) and bob
    /// `/get`s it into `folder`; once more than `held` bytes have come,
    /// alice is stopped (SIGSTOP: at most the chunks asked of her still
    /// come, `FileFetch.perLink`). On a loaded machine this test may see the
    /// progress only when the rest of the file is already on its way (a
    /// 96 MiB fetch takes half a second): then alice goes on, that fetch
    /// ends and its file is taken out of the folder, and a file twice the
    /// size is offered, up to three times, so the fetch is under way
    /// whatever the machine's speed. The offer's number and root, and the
    /// file; the caller lets alice go on.
    func fetchUnderWay(from a: NodeProcess, to b: NodeProcess, _ name: String, size: Int, source: TemporaryDirectory,
                       into folder: String, held: Int) async throws -> (n: String, root: String, file: (path: String, hash: String)) {
        var size = size
        for attempt in 1...3 {
            let file = try randomFile(source, name, size: size)
            let mark = b.events.value.count
            let before = Int(await b.stats()?["file_chunks_received"] ?? "") ?? 0
            a.send("/send \(file.path)")
            let offer = try #require(await eventuallyValue(60) { b.events.withLock { $0.dropFirst(mark).first { $0["type"] == "file" } } },
                                      "A: \(a.recent(4)) B: \(b.recent(4))")
            let n = try #require(offer["n"])
            b.send("/get \(n) \(folder)")
            let some = await eventuallyValue(120) {
                b.events.withLock { $0.dropFirst(mark).first { $0["type"] == "file_progress" && $0["n"] == n && (Int($0["bytes"] ?? "") ?? 0) > held } }
            }
            a.child.signal(SIGSTOP)
            #expect(some != nil, "\(b.recent(5))")
            // Under way for sure if what came, and all that can still come from alice (asked before she
            // stopped), is less than the file.
            let came = (Int(await b.stats()?["file_chunks_received"] ?? "") ?? 0) - before
            guard came + FileFetch.perLink >= (size + 63_999) / 64_000, attempt < 3 else { return (n, offer["root"] ?? "", file) }
            a.child.signal(SIGCONT)
            _ = await eventuallyValue(60) { b.events.withLock { $0.dropFirst(mark).first { $0["type"] == "file_done" && $0["n"] == n } } }
            for saved in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] { try? FileManager.default.removeItem(atPath: folder + "/" + saved) }
            size *= 2
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// `/get N DIR` on `node`: the file_done (or file_failed) event that ends it.
    func get(_ node: NodeProcess, _ n: String, into dir: String, timeout: Double = 120) async -> [String: String]? {
        let mark = node.events.value.count
        node.send("/get \(n) \(dir)")
        return await eventuallyValue(timeout) {
            node.events.withLock { $0.dropFirst(mark).first { $0["type"] == "file_done" || $0["type"] == "file_failed" || $0["type"] == "error" } }
        }
    }

    func chunkFiles(_ node: NodeProcess) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: node.dir + "/files")) ?? []).sorted()
    }

    @Test("A–B–C in a line: A offers a 48 MiB file; B fetches it, identical; A quits and C still fetches it, from B; a delete of the offer leaves no chunk on B or C")
    func lineOfThree() async throws {
        let (dirs, a, b, c) = try await chainOfThree()
        let source = TemporaryDirectory(), intoB = TemporaryDirectory(), intoC = TemporaryDirectory()
        let file = try randomFile(source, "data set.bin", size: 48 << 20)
        a.send("/send \"\(file.path)\" the numbers")
        let offerB = await b.wait(timeout: 60) { $0["type"] == "file" }
        let offerC = await c.wait(timeout: 60) { $0["type"] == "file" }
        #expect(offerB?["name"] == "data set.bin" && offerB?["size"] == String(48 << 20) && offerB?["hash"] == file.hash && offerB?["caption"] == "the numbers")
        let n = try #require(offerB?["n"])
        let done = await get(b, n, into: intoB.path)
        #expect(done?["type"] == "file_done", "\(done ?? [:]) \(b.recent(5))")
        #expect(done?["path"] == intoB.path + "/data set.bin" && done?["hash"] == file.hash)
        #expect(hash(of: intoB.path + "/data set.bin") == file.hash)
        #expect(await a.quit() == 0)
        let fromB = await get(c, try #require(offerC?["n"]), into: intoC.path)
        #expect(fromB?["type"] == "file_done" && hash(of: intoC.path + "/data set.bin") == file.hash, "\(fromB ?? [:]) \(c.recent(5))")
        // Each node holds the sealed chunks once, under the root, and never the plaintext.
        let root = try #require(offerB?["root"])
        #expect(chunkFiles(b) == [root, root + ".tree"] && chunkFiles(c) == [root, root + ".tree"])
        // B deletes nothing of A's; A's delete is what erases. Restart A and delete its offer.
        let again = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--peer", b.url])
        #expect(await started(again))
        #expect(await linked(again, to: b))
        again.send("/delete \(n)")
        #expect(await eventually(30) { chunkFiles(b).isEmpty && chunkFiles(c).isEmpty }, "B: \(chunkFiles(b)) C: \(chunkFiles(c))")
        #expect(await eventually(30) { chunkFiles(again).isEmpty }, "A: \(chunkFiles(again))")
        for node in [again, b, c] { await node.quit() }
    }

    /// Alice offers a random file of `size` bytes named `name`, Bob fetches
    /// it whole and stops, and his copy gets one byte wrong in each chunk
    /// (`every`) or in one: a damaged copy on his disk. Alice is still up.
    func bobHoldsDamaged(_ name: String, size: Int, every: Bool) async throws
        -> (dirs: [TemporaryDirectory], a: NodeProcess, file: (path: String, hash: String), source: TemporaryDirectory) {
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await linked(b, to: a))
        let source = TemporaryDirectory(), intoB = TemporaryDirectory()
        let file = try randomFile(source, name, size: size)
        a.send("/send \(file.path)")
        let offer = try #require(await b.wait(timeout: 60) { $0["type"] == "file" })
        #expect(await get(b, try #require(offer["n"]), into: intoB.path)?["type"] == "file_done")
        await b.quit()
        let chunks = dirs[1].path + "/files/" + (offer["root"] ?? "")
        var bytes = try #require(FileManager.default.contents(atPath: chunks))
        for i in stride(from: 100, to: every ? bytes.count : 101, by: 64_016) { bytes[i] ^= 0xFF }
        try bytes.write(to: URL(fileURLWithPath: chunks))
        return (dirs, a, file, source)
    }

    @Test("a peer that serves a chunk that does not verify is caught (file_bad_chunk) and the file still arrives whole from another")
    func badChunk() async throws {
        let (dirs, a, file, _) = try await bobHoldsDamaged("pictures.tar", size: 3 << 20, every: true)
        let intoC = TemporaryDirectory()
        // Bob and Carol come up linked to both.
        let bob = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(bob))
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", bob.url, "--peer", a.url])
        #expect(await started(c))
        #expect(await linked(c, to: a))
        #expect(await linked(c, to: bob))
        let seen = try #require(await c.wait(timeout: 60) { $0["type"] == "file" })
        let done = await get(c, try #require(seen["n"]), into: intoC.path)
        #expect(done?["type"] == "file_done" && hash(of: intoC.path + "/pictures.tar") == file.hash, "\(done ?? [:]) \(c.recent(5))")
        #expect(await counterAtLeast(c, "file_bad_chunk", 1))
        for node in [a, bob, c] { await node.quit() }
    }

    @Test("the only holder linked serves a damaged copy: the fetch says at once who (file_waiting with bad), asks it no more, and saves nothing")
    func onlyHolderDamaged() async throws {
        let (dirs, a, _, _) = try await bobHoldsDamaged("minutes.odt", size: 1 << 20, every: false)
        await a.quit()
        // Carol links to Bob alone.
        let intoC = TemporaryDirectory()
        let bob = try NodeProcess(dir: dirs[1].path, ["--nick", "bob"])
        #expect(await started(bob))
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", bob.url])
        #expect(await started(c))
        #expect(await linked(c, to: bob))
        let seen = try #require(await c.wait(timeout: 60) { $0["type"] == "file" })
        c.send("/get \(try #require(seen["n"])) \(intoC.path)")
        // Said as soon as the bad chunk came (well within waitingNotice, 30 s), naming Bob.
        let waiting = await c.wait(timeout: Files.waitingNotice - 10) { $0["type"] == "file_waiting" || $0["type"] == "file_done" }
        #expect(waiting?["type"] == "file_waiting" && waiting?["bad"] == bob.id, "\(waiting ?? [:]) \(c.recent(4))")
        #expect(await counterAtLeast(c, "file_bad_chunk", 1))
        #expect(hash(of: intoC.path + "/minutes.odt") == nil, "nothing saved")
        let mark = c.events.value.count
        c.send("/files")
        let listed = await eventuallyValue(20) { c.events.value.dropFirst(mark).first { $0["type"] == "file_listed" && $0["name"] == "minutes.odt" } }
        #expect(listed?["state"] == "not_fetched" || listed?["state"] == "fetching", "not held: \(listed ?? [:]) \(c.recent(3))")
        // The terminal's words name who.
        let person = Person(key: try PublicKey(hex: bob.id), nick: PeerText("bob"), trusted: false, lookAlike: false, forked: false)
        let line = TerminalPresenter.lines(.fileWaiting(number: 3, place: "#general", root: [], bad: [person])).joined()
        #expect(line.contains("bob·") && line.contains("does not match the offer"), "\(line)")
        for node in [bob, c] { await node.quit() }
    }

    @Test("a transfer killed halfway goes on by itself at the next start, from the chunks it holds: what the second run fetches is less than the file")
    func resume() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        // Large enough that what is left after the cut takes far longer than the test takes to stop alice.
        // Once 20 MiB are held (and their map written), alice is stopped, bob killed, and alice let go on:
        // bob's transfer is cut halfway whatever the machine's speed.
        let (n, _, file) = try await fetchUnderWay(from: a, to: b, "backup.img", size: 160 << 20, source: source, into: into.path, held: 20 << 20)
        await b.kill()
        a.child.signal(SIGCONT)
        let again = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(again))
        #expect(await linked(again, to: a))
        // It goes on by itself: no /get typed again.
        let done = await again.wait(timeout: 120) { ($0["type"] == "file_done" || $0["type"] == "file_failed") && $0["n"] == n }
        #expect(done?["type"] == "file_done" && done?["n"] == n && hash(of: into.path + "/backup.img") == file.hash, "\(done ?? [:]) \(again.recent(5)) running: \(again.child.isRunning) log: \(again.log.suffix(2_000))")
        let received = Int(await again.stats()?["file_chunks_received"] ?? "") ?? 0
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        let chunks = (size + 63_999) / 64_000
        #expect(received > 0 && received < chunks * 19 / 20, "fetched \(received) of \(chunks) chunks after the restart")
        for node in [a, again] { await node.quit() }
    }

    @Test("a /get again while the fetch is under way: into the same folder it says where it stands and starts nothing; into another it goes on into that one and says so, the first folder left empty")
    func getAgain() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), first = TemporaryDirectory(), second = TemporaryDirectory()
        // Alice stopped once some has come: the fetch is under way while the /gets below are typed.
        let (n, _, file) = try await fetchUnderWay(from: a, to: b, "archive.tar", size: 96 << 20, source: source, into: first.path, held: 8 << 20)
        let mark = b.events.value.count
        b.send("/get \(n) \(first.path)/")
        let standing = await eventuallyValue(30) { b.events.withLock { $0.dropFirst(mark).first { $0["type"] == "file_progress" && $0["n"] == n } } }
        #expect((Int(standing?["bytes"] ?? "") ?? 0) >= 8 << 20, "where it stands, not from nothing: \(b.recent(3))")
        b.send("/get \(n) \(second.path)")
        let moved = await b.wait { $0["type"] == "notice" && ($0["text"] ?? "").contains("saving into \(second.path) now, not \(first.path)") }
        #expect(moved != nil, "\(b.recent(4))")
        let listing = b.events.value.count
        b.send("/files")
        let listed = await eventuallyValue(30) {
            b.events.withLock { $0.dropFirst(listing).first { $0["type"] == "file_listed" && $0["name"] == "archive.tar" } }
        }
        #expect(listed?["state"] == "fetching" && listed?["saving"] == second.path && listed?["n"] == n,
                "/files says where it saves now: \(listed ?? [:]) \(b.recent(4))")
        a.child.signal(SIGCONT)
        let done = await b.wait(timeout: 120) { ($0["type"] == "file_done" || $0["type"] == "file_failed") && $0["n"] == n }
        #expect(done?["type"] == "file_done" && done?["path"] == second.path + "/archive.tar" && hash(of: second.path + "/archive.tar") == file.hash,
                "\(done ?? [:])")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: first.path)) == [], "the first folder holds nothing, not even a temporary file")
        #expect(b.events.value.count { $0["type"] == "file_done" && $0["n"] == n } == 1)
        for node in [a, b] { await node.quit() }
        withExtendedLifetime(dirs) {}
    }

    @Test("its author deletes the file for everyone while it is fetched: the /get ends with file_failed saying so, after the delete itself, and nothing of it is left, neither in the folder nor among the chunks")
    func deletedWhileFetched() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        // Alice stopped while the delete is typed: she takes it in first when she goes on, long before the rest is sent.
        let (n, root, _) = try await fetchUnderWay(from: a, to: b, "draft.mov", size: 96 << 20, source: source, into: into.path, held: 8 << 20)
        a.send("/delete \(n)")
        a.child.signal(SIGCONT)
        let failed = await b.wait(timeout: 60) { ($0["type"] == "file_failed" || $0["type"] == "file_done") && $0["n"] == n }
        #expect(failed?["type"] == "file_failed" && failed?["n"] == n && (failed?["reason"] ?? "").contains("deleted"), "\(b.recent(4))")
        let order = b.events.value.compactMap { $0["type"] == "delete" ? "delete" : $0["type"] == "file_failed" ? "failed" : nil }
        #expect(order == ["delete", "failed"], "\(order)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: into.path)) == [])
        // Nothing of it among bob's chunks (a file fetched whole in a try before, see fetchUnderWay, may be).
        #expect((try? FileManager.default.contentsOfDirectory(atPath: dirs[1].path + "/files"))?.contains { $0.hasPrefix(root) } != true)
        for node in [a, b] { await node.quit() }
    }

    @Test("a /get while nobody linked holds the file says so once (file_waiting), and goes on by itself when the sender is back")
    func waitingForSender() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let file = try randomFile(source, "minutes.pdf", size: 300_000)
        a.send("/send \(file.path)")
        let offer = try #require(await b.wait(timeout: 60) { $0["type"] == "file" })
        #expect(await a.quit() == 0)
        b.send("/get \(offer["n"] ?? "0") \(into.path)")
        let waiting = await b.wait(timeout: 30 + Files.waitingNotice) { $0["type"] == "file_waiting" }
        #expect(waiting?["n"] == offer["n"] && waiting?["root"] == offer["root"], "\(b.recent(4))")
        let back = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--peer", b.url])
        #expect(await started(back))
        let done = await b.wait(timeout: 120) { $0["type"] == "file_done" || $0["type"] == "file_failed" }
        #expect(done?["type"] == "file_done" && hash(of: into.path + "/minutes.pdf") == file.hash, "\(done ?? [:]) \(b.recent(4))")
        #expect(b.events.value.count { $0["type"] == "file_waiting" } == 1, "said once")
        for node in [back, b] { await node.quit() }
    }

    @Test("a name with escapes, slashes, dots and a device name is shown inert and saved under a safe name inside the folder; a second copy never overwrites the first")
    func hostileNames() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let name = "..\u{1B}]0;pwned\u{07}con.txt"
        let file = try randomFile(source, name, size: 1_000)
        a.send("/send \(source.path)/\(name)")
        let shown = await b.wait(timeout: 60) { $0["type"] == "file" }
        #expect(shown != nil, "A: \(a.recent(4))")
        let offer = try #require(shown)
        #expect(offer["name"] == name, "the name is the sender's, escaped in JSON, never acted on")
        let n = try #require(offer["n"])
        let first = await get(b, n, into: into.path)
        #expect(first?["type"] == "file_done", "\(first ?? [:])")
        let saved = try #require(first?["path"])
        #expect(saved.hasPrefix(into.path + "/") && !saved.dropFirst(into.path.count + 1).contains("/"))
        #expect(!saved.contains("\u{1B}") && !saved.contains("\u{07}") && hash(of: saved) == file.hash)
        let second = await get(b, n, into: into.path)
        #expect(second?["path"] != saved && second?["path"]?.hasSuffix(" (1).txt") == true, "\(second ?? [:])")
        #expect(hash(of: saved) == file.hash)
        for node in [a, b] { await node.quit() }
        _ = dirs
    }
}

/// A relay between two nodes that never link directly.
@Suite("Files through a relay that cannot read them")
struct RelayFileTests {
    let files = FileTransferTests()

    @Test("alice and carol linked to one relay (and to each other once it passes their addresses on; RelayOnlyFileTests keeps them apart): carol fetches alice's file from their conversation, the relay asked for it too; the relay's files and database hold no plaintext of it (a marker), nor its name")
    func throughRelay() async throws {
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let ready = try #require(await relay.ready())
        let url = "ws://" + (ready["listen"] ?? "")
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", url])
        #expect(await started(a))
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", url])
        #expect(await started(c))
        #expect(await a.wait { $0["type"] == "peer_up" } != nil)
        #expect(await c.wait { $0["type"] == "peer_up" } != nil)
        // Carol's nick reaches alice through the relay; then alice offers the file in their conversation.
        #expect(await a.wait(timeout: 30) { $0["nick"] == "carol" } != nil)
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let marker = Array("MARKER-PLAINTEXT-7f3a ".utf8)
        let path = source.path + "/secret-plans-q3.txt"
        #expect(FileManager.default.createFile(atPath: path, contents: Data((0..<20_000).flatMap { _ in marker })))
        let expected = Hex.encode(BLAKE2b.hash((0..<20_000).flatMap { _ in marker }))
        a.send("/query carol")
        a.send("/send \(path)")
        let own = try #require(await a.wait(timeout: 60) { $0["type"] == "file" })
        let offer = try #require(await c.wait(timeout: 60) { $0["type"] == "file" && $0["kind"] == "dm" })
        c.send("/query alice")
        let done = await files.get(c, try #require(offer["n"]), into: into.path, timeout: 90)
        #expect(done?["type"] == "file_done" && files.hash(of: into.path + "/secret-plans-q3.txt") == expected, "\(done ?? [:]) \(c.recent(5))")
        // The relay held the file to pass it on: sealed chunks only, and no name.
        let held = (try? FileManager.default.contentsOfDirectory(atPath: dirs[0].path + "/files")) ?? []
        #expect(held.contains(offer["root"] ?? "?"), "the relay fetched the file to serve it: \(held)")
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: dirs[0].path)) ?? [] {
            guard let bytes = FileManager.default.contents(atPath: dirs[0].path + "/" + name).map({ [UInt8]($0) }) else { continue }
            #expect(!contains(bytes, Array("MARKER-PLAINTEXT".utf8)) && !contains(bytes, Array("secret-plans".utf8)), "\(name) holds plaintext")
        }
        // Alice takes the file back: the relay, which cannot read the offer, erases the file it held with it (its
        // asks named the offer), as carol does.
        a.send("/delete \(try #require(own["n"]))")
        let relayFiles = { (try? FileManager.default.contentsOfDirectory(atPath: dirs[0].path + "/files")) ?? [] }
        #expect(await eventually(30) { relayFiles().isEmpty && files.chunkFiles(c).isEmpty }, "relay: \(relayFiles()) carol: \(files.chunkFiles(c))")
        for node in [a, c] { await node.quit() }
        _ = await relay.terminate()
    }

    func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count, let first = needle.first else { return false }
        var i = 0
        while i <= bytes.count - needle.count {
            if bytes[i] == first, Array(bytes[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }
}

@Suite("Files fetched by themselves (--auto-get)")
struct AutoGetTests {
    @Test("--auto-get 100K fetches a file offered up to that size into the download folder by itself, and leaves a larger one for /get; the file has the rights the person's umask gives (027: 0640), the database stays 0600")
    func autoGet() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let downloads = TemporaryDirectory(), source = TemporaryDirectory()
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url, "--auto-get", "100K"],
                                wrapper: ["/bin/sh", "-c", "umask 027; exec \"$0\" \"$@\"", "/usr/bin/env", "XDG_DOWNLOAD_DIR=" + downloads.path])
        #expect(await started(b))
        #expect(await linked(b, to: a))
        #expect(FileManager.default.createFile(atPath: source.path + "/big.bin", contents: Data(repeating: 1, count: 200_000)))
        #expect(FileManager.default.createFile(atPath: source.path + "/small.txt", contents: Data(repeating: 2, count: 10_000)))
        a.send("/send \(source.path)/big.bin")
        let big = try #require(await b.wait { $0["type"] == "file" && $0["name"] == "big.bin" })
        a.send("/send \(source.path)/small.txt")
        let done = await b.wait { $0["type"] == "file_done" }
        #expect(done?["path"] == downloads.path + "/small.txt", "\(done ?? [:]) \(b.recent(4))")
        #expect(FileManager.default.contents(atPath: downloads.path + "/small.txt") == Data(repeating: 2, count: 10_000))
        #expect(permissions(downloads.path + "/small.txt") == 0o640, "a saved file as the person's umask makes it")
        #expect(permissions(dirs[1].path + "/peernode.db") == 0o600, "the node's own files stay private")
        #expect(!b.events.value.contains { $0["root"] == big["root"] && $0["type"] != "file" }, "the larger file is left for /get")
        for node in [a, b] { await node.quit() }
        withExtendedLifetime(dirs) {}
    }
}

/// A file's permission bits (nil: no such file).
func permissions(_ path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}
