import Foundation
import Glibc
import TestSupport
import Testing

/// Damaged files at start (issue 7, "Disk full"): each is a clear error naming
/// the file, exit status 1 (never a crash), and the file is left as it was
/// (never silently overwritten). Both the chat node and the relay.
@Suite("Damaged files at start", .serialized)
struct BadFilesTests {
    /// A data directory with an identity and a few messages.
    static func populated() async throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--nick", "alice"],
                                        input: (1...200).map { "message \($0) " + String(repeating: "x", count: 200) }.joined(separator: "\n") + "\n")
        #expect(r.status == 0, "\(r.stderr)")
        // Everything into the database file itself, so damage to it is not masked by the WAL.
        let checkpoint = try await runToEnd("/usr/bin/sqlite3", [dir.file("peernode.db"), "PRAGMA wal_checkpoint(TRUNCATE);"])
        #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dir.file("peernode.db" + suffix)) }
        return dir
    }

    /// Runs peernode with these arguments for at most `seconds`; a process
    /// that is still running then (it started when it should have refused)
    /// is killed and reported as status -1.
    static func runBriefly(_ arguments: [String], seconds: Double = 15) async throws -> (status: Int32, stderr: String) {
        let p = try Child(PeerNodeProcess.binary, arguments, stdin: .pipe, stdout: .null, stderr: .pipe)
        p.send("must not be posted\n")
        p.closeInput()
        let deadline = Deadline(seconds)
        while p.isRunning && !deadline.passed { try await Task.sleep(for: .milliseconds(20)) }
        let started = p.isRunning
        if started { p.signal(SIGKILL) }
        let status = await p.exited()
        let text = p.errors
        return (started ? -1 : status, text)
    }

    static func refusesToStart(_ dir: TemporaryDirectory, naming file: String, saying words: [String]) async throws {
        let before = readFile(dir.file(file))
        for command in [["--data-dir", dir.path, "--no-discovery"], ["relay", "--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"]] {
            let r = try await Self.runBriefly(command)
            // Exit status 1 from our own error path (a crash would be a signal: status 128+ or a trap).
            #expect(r.status == 1, "\(command[0]): status \(r.status), stderr: \(r.stderr)")
            #expect(r.stderr.hasPrefix("peernode: "), "\(r.stderr)")
            #expect(r.stderr.contains(dir.file(file)), "the error names the file: \(r.stderr)")
            for word in words { #expect(r.stderr.lowercased().contains(word), "\(word): \(r.stderr)") }
            #expect(readFile(dir.file(file)) == before, "\(file) was changed")
        }
    }

    @Test("a database file overwritten with garbage")
    func garbageDatabase() async throws {
        let dir = try await Self.populated()
        var bytes = readFile(dir.file("peernode.db"))
        for i in 0..<min(4096, bytes.count) { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        _ = FileManager.default.createFile(atPath: dir.file("peernode.db"), contents: Data(bytes))
        try await Self.refusesToStart(dir, naming: "peernode.db", saying: ["database"])
    }

    @Test("a database file cut in half")
    func truncatedDatabase() async throws {
        let dir = try await Self.populated()
        let bytes = readFile(dir.file("peernode.db"))
        #expect(bytes.count > 8192)
        _ = FileManager.default.createFile(atPath: dir.file("peernode.db"), contents: Data(bytes.prefix(bytes.count / 2)))
        try await Self.refusesToStart(dir, naming: "peernode.db", saying: ["damaged", "left untouched"])
    }

    @Test("an identity key file cut short, one too long, and one others can read")
    func identityKey() async throws {
        let dir = try await Self.populated()
        let key = readFile(dir.file("identity.key"))
        _ = FileManager.default.createFile(atPath: dir.file("identity.key"), contents: Data(key.prefix(key.count - 7)),
                                       attributes: [.posixPermissions: 0o600])
        try await Self.refusesToStart(dir, naming: "identity.key", saying: ["identity"])
        _ = FileManager.default.createFile(atPath: dir.file("identity.key"), contents: Data(key + [0]), attributes: [.posixPermissions: 0o600])
        try await Self.refusesToStart(dir, naming: "identity.key", saying: ["identity"])
        _ = FileManager.default.createFile(atPath: dir.file("identity.key"), contents: Data(key), attributes: [.posixPermissions: 0o640])
        chmod(dir.file("identity.key"), 0o640)
        try await Self.refusesToStart(dir, naming: "identity.key", saying: ["chmod 600"])
    }

    @Test("a new data directory is 0700, its key and database 0600; a network key file others can read is refused")
    func modes() async throws {
        let root = TemporaryDirectory()
        let dir = root.file("fresh")
        let r = try await PeerNodeProcess.run(["--data-dir", dir, "--no-discovery"], input: "hello\n")
        #expect(r.status == 0)
        #expect(fileMode(dir) == 0o700)
        #expect(fileMode(dir + "/identity.key") == 0o600)
        #expect(fileMode(dir + "/peernode.db") == 0o600)
        let networkKey = root.file("office.key")
        #expect(try await PeerNodeProcess.run(["network", "new", networkKey]).status == 0)
        #expect(fileMode(networkKey) == 0o600)
        chmod(networkKey, 0o644)
        let refused = try await PeerNodeProcess.run(["--data-dir", dir, "--no-discovery", "--network-key-file", networkKey], input: "x\n")
        #expect(refused.status == 1 && refused.stderr.contains(networkKey) && refused.stderr.contains("chmod 600"), "\(refused.stderr)")
    }
}
