import Foundation
import TestSupport
import Testing

/// Runs a program to completion and returns (status, combined output).
func runProgram(_ path: String, _ arguments: [String], input: String = "", environment: [String: String]? = nil) throws -> (Int32, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    if let environment { p.environment = environment }
    let stdin = Pipe(), out = Pipe()
    p.standardInput = stdin
    p.standardOutput = out
    p.standardError = out
    try launch(p)
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite("Durability and set-up")
struct DurabilityAndSetupTests {
    /// fsync/fdatasync calls on the database's WAL file while a node posts
    /// `lines` messages (strace -y names the file of each descriptor).
    func walSyncs(posting lines: Int, in dir: TemporaryDirectory) throws -> Int {
        let trace = dir.file("trace-\(lines).txt")
        let input = (0..<lines).map { "message \($0)\n" }.joined()
        let (status, output) = try runProgram(
            "/usr/bin/strace", ["-f", "-y", "-e", "trace=fsync,fdatasync", "-o", trace,
                                PeerNodeProcess.binary, "--data-dir", dir.file("data"), "--no-discovery", "--nick", "d"], input: input)
        #expect(status == 0, "\(output) (strace comes with make test)")
        return String(decoding: readFile(trace), as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("peernode.db-wal") }.count
    }

    @Test("a clean exit folds the WAL into peernode.db: the WAL is empty, and a copy of the .db file alone holds every message")
    func cleanExitCheckpoints() throws {
        let dir = TemporaryDirectory()
        let data = dir.file("data")
        let r = try PeerNodeProcess.run(["--data-dir", data, "--no-discovery", "--listen", "127.0.0.1:0"], input: "one\ntwo\nthree\n")
        #expect(r.status == 0, "\(r.stdout)")
        let wal = (try? FileManager.default.attributesOfItem(atPath: data + "/peernode.db-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "WAL left with \(wal) bytes")
        try FileManager.default.createDirectory(atPath: dir.file("copy"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: data + "/peernode.db", toPath: dir.file("copy") + "/peernode.db")
        let query = "SELECT count(*) FROM envelopes"
        let (_, copied) = try runProgram("/usr/bin/sqlite3", [dir.file("copy") + "/peernode.db", query])
        let (_, whole) = try runProgram("/usr/bin/sqlite3", [data + "/peernode.db", query])
        let n = Int(copied.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(n >= 3 && copied == whole, "the copy holds \(copied), the database \(whole)")
    }

    @Test("each own post is fsynced before the node goes on (strace counts the WAL syncs)")
    func ownPostsAreSynced() throws {
        let dir = TemporaryDirectory()
        _ = try walSyncs(posting: 0, in: dir)  // first run: identity, schema, nick
        let idle = try walSyncs(posting: 0, in: dir)
        let posting = try walSyncs(posting: 5, in: dir)
        #expect(posting - idle >= 5, "idle run: \(idle) syncs, 5 posts: \(posting)")
    }

    @Test("set-up without root or sudo stops with a plain message naming the packages")
    func setupWithoutRoot() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/setup-system.sh").path
        // As root (CI), drop to the unprivileged user `nobody`, who has no sudo.
        guard getuid() == 0 else {
            Issue.record("this test needs root to become another user (CI runs as root)")
            return
        }
        let (status, output) = try runProgram(
            "/usr/sbin/runuser", ["-u", "nobody", "--", "/bin/bash", script, "run"],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PEERNODE_EXTRA_PACKAGES": "peernode-no-such-package"])
        #expect(status == 1)
        #expect(output.contains("peernode needs these Debian packages: peernode-no-such-package"))
        #expect(output.contains("as root"))
    }
}
