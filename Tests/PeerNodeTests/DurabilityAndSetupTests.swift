import Foundation
import TestSupport
import Testing

/// Runs a program to completion and returns (status, combined output).
func runProgram(_ path: String, _ arguments: [String], input: String = "", environment: [String: String]? = nil) async throws -> (Int32, String) {
    let r = try await runToEnd(path, arguments, environment: environment, input: input, combined: true)
    return (r.status, r.stdout)
}

@Suite("Durability and set-up")
struct DurabilityAndSetupTests {
    /// fsync/fdatasync calls on the database's WAL file while a node posts
    /// `lines` messages (strace -y names the file of each descriptor).
    func walSyncs(posting lines: Int, in dir: TemporaryDirectory) async throws -> Int {
        let trace = dir.file("trace-\(lines).txt")
        let input = (0..<lines).map { "message \($0)\n" }.joined()
        let (status, output) = try await runProgram(
            "/usr/bin/strace", ["-f", "-y", "-e", "trace=fsync,fdatasync", "-o", trace,
                                PeerNodeProcess.binary, "--data-dir", dir.file("data"), "--no-discovery", "--nick", "d"], input: input)
        #expect(status == 0, "\(output) (strace comes with make test)")
        return String(decoding: readFile(trace), as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("peernode.db-wal") }.count
    }

    @Test("a clean exit folds the WAL into peernode.db: the WAL is empty, and a copy of the .db file alone holds every message")
    func cleanExitCheckpoints() async throws {
        let dir = TemporaryDirectory()
        let data = dir.file("data")
        let r = try await PeerNodeProcess.run(["--data-dir", data, "--no-discovery", "--listen", "127.0.0.1:0"], input: "one\ntwo\nthree\n")
        #expect(r.status == 0, "\(r.stdout)")
        let wal = (try? FileManager.default.attributesOfItem(atPath: data + "/peernode.db-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "WAL left with \(wal) bytes")
        try FileManager.default.createDirectory(atPath: dir.file("copy"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: data + "/peernode.db", toPath: dir.file("copy") + "/peernode.db")
        let query = "SELECT count(*) FROM envelopes"
        let (_, copied) = try await runProgram("/usr/bin/sqlite3", [dir.file("copy") + "/peernode.db", query])
        let (_, whole) = try await runProgram("/usr/bin/sqlite3", [data + "/peernode.db", query])
        let n = Int(copied.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(n >= 3 && copied == whole, "the copy holds \(copied), the database \(whole)")
    }

    @Test("each own post is fsynced before the node goes on (strace counts the WAL syncs)")
    func ownPostsAreSynced() async throws {
        let dir = TemporaryDirectory()
        _ = try await walSyncs(posting: 0, in: dir)  // first run: identity, schema, nick
        let idle = try await walSyncs(posting: 0, in: dir)
        let posting = try await walSyncs(posting: 5, in: dir)
        #expect(posting - idle >= 5, "idle run: \(idle) syncs, 5 posts: \(posting)")
    }

    @Test("an own post is written aside (own-intent), goes to the link, then its row is written to the WAL and fsynced, and only then shown (strace orders the calls)")
    func ownPostSentBeforeItsSync() async throws {
        let dir = TemporaryDirectory()
        let b = try NodeProcess(dir: dir.file("b"), [])
        #expect(await started(b))
        let trace = dir.file("trace.txt")
        let a = try NodeProcess(dir: dir.file("a"), ["--peer", b.url], wrapper: [
            "/usr/bin/strace", "-f", "-y", "-s", "256", "-e", "trace=read,sendto,fdatasync,fsync,write,pwrite64", "-o", trace])
        #expect(await started(a), "strace comes with make test")
        #expect(await linked(a, to: b))
        a.send("sent before synced")
        #expect(await b.wait { $0["text"] == "sent before synced" } != nil)
        #expect(await a.wait { $0["text"] == "sent before synced" } != nil)
        await a.quit(); await b.quit()
        let calls = String(decoding: readFile(trace), as: UTF8.self).split(separator: "\n").map(String.init)
        // The line read from standard input, then: the post written aside, on the link, its row in the WAL,
        // the WAL's sync, the line shown.
        let read = calls.firstIndex { $0.contains("read(0") && $0.contains("sent before synced") }
        let after = { (match: (String) -> Bool) in read.flatMap { r in calls[(r + 1)...].firstIndex(where: match) } }
        let aside = after { $0.contains("pwrite64(") && $0.contains("own-intent") }
        let sent = after { $0.contains("sendto(") && $0.contains("MSG_NOSIGNAL") }
        let row = after { $0.contains("pwrite64(") && $0.contains("peernode.db-wal") }
        let synced = after { ($0.contains("fdatasync(") || $0.contains("fsync(")) && $0.contains("peernode.db-wal") }
        let shown = after { $0.contains("write(1") && $0.contains("sent before synced") }
        #expect(read != nil && aside != nil && sent != nil && row != nil && synced != nil && shown != nil, "\(calls.suffix(40).joined(separator: "\n"))")
        if let aside, let sent, let row, let synced, let shown {
            #expect(aside < sent && sent < row && row < synced && synced < shown, "\(calls[(read ?? 0)...].prefix(40).joined(separator: "\n"))")
        }
    }

    @Test("the store follows the loop's wait: the author sleeps between its post's send and its row, the receiver between its line and its store (docs/DECISIONS.md)")
    func storeFollowsTheWait() async throws {
        let dir = TemporaryDirectory()
        let traced = { (name: String) in
            ["/usr/bin/strace", "-f", "-y", "-s", "256", "-e", "trace=read,sendto,write,pwrite64,fsync,fdatasync,epoll_wait,epoll_pwait2", "-o", dir.file(name)]
        }
        let b = try NodeProcess(dir: dir.file("b"), [], wrapper: traced("b.txt"))
        #expect(await started(b), "strace comes with make test")
        let a = try NodeProcess(dir: dir.file("a"), ["--peer", b.url], wrapper: traced("a.txt"))
        #expect(await started(a))
        #expect(await linked(a, to: b))
        let text = "stored after a wait"
        a.send(text)
        #expect(await b.wait { $0["text"] == text } != nil)
        #expect(await a.wait { $0["text"] == text } != nil)
        await a.quit(); await b.quit()
        /// `name`'s trace, a call a line.
        func calls(_ name: String) -> [String] {
            String(decoding: readFile(dir.file(name)), as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let waits = { (call: String) in call.contains("epoll_wait(") || call.contains("epoll_pwait2(") }
        /// In `name`'s trace, after the first call `start` matches: where `first`, a wait and `last` come.
        func order(_ name: String, from start: (String) -> Bool, _ first: (String) -> Bool, _ last: (String) -> Bool) -> (Int, Int, Int)? {
            let calls = calls(name)
            guard let s = calls.firstIndex(where: start), let f = calls[s...].firstIndex(where: first),
                  let w = calls[f...].firstIndex(where: waits), let l = calls[f...].firstIndex(where: last) else { return nil }
            return (f, w, l)
        }
        let wal = { (call: String) in call.contains("pwrite64(") && call.contains("peernode.db-wal") }
        let walSync = { (call: String) in (call.contains("fdatasync(") || call.contains("fsync(")) && call.contains("peernode.db-wal") }
        // A: the post on the link, the loop waits, then its row and that row's fsync. B's envelopes that
        // reach A meanwhile may be written before the wait (their commits are not fsynced): the post's
        // row is the last WAL write before the first fsync of the WAL after the send.
        let author: (Int, Int, Int)? = {
            let calls = calls("a.txt")
            guard let s = calls.firstIndex(where: { $0.contains("read(0") && $0.contains(text) }),
                  let sent = calls[s...].firstIndex(where: { $0.contains("sendto(") && $0.contains("MSG_NOSIGNAL") }),
                  let wait = calls[sent...].firstIndex(where: waits),
                  let synced = calls[sent...].firstIndex(where: walSync),
                  let row = calls[sent..<synced].lastIndex(where: wal) else { return nil }
            return (sent, wait, row)
        }()
        #expect(author.map { $0.0 < $0.1 && $0.1 < $0.2 } == true, "A: send, wait, row at \(String(describing: author))")
        // B: the line shown, the loop waits, then the store's transaction.
        let receiver = order("b.txt", from: { _ in true }, { $0.contains("write(1") && $0.contains(text) }, wal)
        #expect(receiver.map { $0.0 < $0.1 && $0.1 < $0.2 } == true, "B: line, wait, store at \(String(describing: receiver))")
    }

    @Test("set-up without root or sudo stops with a plain message naming the packages")
    func setupWithoutRoot() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/setup-system.sh").path
        // As root (CI), drop to the unprivileged user `nobody`, who has no sudo.
        guard getuid() == 0 else {
            Issue.record("this test needs root to become another user (CI runs as root)")
            return
        }
        let (status, output) = try await runProgram(
            "/usr/sbin/runuser", ["-u", "nobody", "--", "/bin/bash", script, "run"],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PEERNODE_EXTRA_PACKAGES": "peernode-no-such-package"])
        #expect(status == 1)
        #expect(output.contains("peernode needs these Debian packages: peernode-no-such-package"))
        #expect(output.contains("as root"))
    }
}
