import Glibc
import Crypto
import Foundation
import TestSupport
import Testing

/// Runs the built `peernode` binary as a user would.
struct PeerNodeProcess {
    static var binary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/peernode").path
    }

    /// `inputFile`: stdin is that file (read from disk) instead of a pipe carrying `input`.
    static func run(_ arguments: [String], input: String = "", inputFile: String? = nil, environment: [String: String] = [:]) async throws -> Finished {
        var env = ProcessInfo.processInfo.environment
        env["USER"] = "tester"
        for (k, v) in environment { env[k] = v }
        return try await runToEnd(binary, arguments, environment: env, input: input, inputFile: inputFile)
    }
}

@Suite("The peernode program")
struct ProcessTests {
    @Test("the binary is built")
    func built() {
        #expect(FileManager.default.isExecutableFile(atPath: PeerNodeProcess.binary), "run swift build first")
    }

    @Test("`peernode id` prints 64 lowercase hex characters, then the short fingerprint; stable across runs")
    func id() async throws {
        let dir = TemporaryDirectory()
        let first = try await PeerNodeProcess.run(["id", "--data-dir", dir.path])
        #expect(first.status == 0)
        let lines = first.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0].count == 64 && lines[0].allSatisfy { "0123456789abcdef".contains($0) })
        #expect(lines[1] == (try PublicKey(hex: lines[0])).shortFingerprint)
        #expect(try await PeerNodeProcess.run(["id", "--data-dir", dir.path]).stdout == first.stdout)
        #expect(fileMode(dir.file("identity.key")) == 0o600)
        #expect(fileMode(dir.path) == 0o700)
        // A mistyped --data-dir makes no new identity (issue 44).
        let typo = try await PeerNodeProcess.run(["id", "--data-dir", dir.path + "-typo"])
        #expect(typo.status == 1 && typo.stderr.contains("no data directory at") && typo.stdout.isEmpty, "\(typo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "-typo"))
    }

    @Test("the default data directory is $XDG_DATA_HOME/peernode, else ~/.local/share/peernode")
    func defaultDirectory() async throws {
        let home = TemporaryDirectory()
        let viaHome = try await PeerNodeProcess.run(["id"], environment: ["HOME": home.path, "XDG_DATA_HOME": ""])
        #expect(viaHome.status == 0)
        #expect(FileManager.default.fileExists(atPath: home.file(".local/share/peernode/identity.key")))
        let xdg = TemporaryDirectory()
        let viaXDG = try await PeerNodeProcess.run(["id"], environment: ["HOME": home.path, "XDG_DATA_HOME": xdg.path])
        #expect(FileManager.default.fileExists(atPath: xdg.file("peernode/identity.key")))
        #expect(viaXDG.stdout != viaHome.stdout)
    }

    @Test("unknown options and commands: one line, saying what was wrong and where to look, exit 2")
    func usage() async throws {
        for args in [["--bogus"], ["frobnicate"], ["id", "--data-dir"]] {
            let r = try await PeerNodeProcess.run(args)
            #expect(r.status == 2)
            #expect(r.stderr.hasPrefix("peernode: "))
            #expect(r.stderr.hasSuffix("; try `peernode --help`\n") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
        // A bad value is a usage error too, and makes no data directory.
        let missing = TemporaryDirectory().path + "/never"
        for args in [["--nick", "a b"], ["--peer", "ws://[::1"], ["--listen", ":99999"]] {
            let r = try await PeerNodeProcess.run(args + ["--data-dir", missing])
            #expect(r.status == 2 && r.stderr.hasSuffix("; try `peernode --help`\n"), "\(args): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: missing), "\(args) made \(missing)")
        }
        let help = try await PeerNodeProcess.run(["--help"])
        #expect(help.status == 0 && help.stdout.contains("peernode id"))
        #expect(try await PeerNodeProcess.run(["help"]).stdout == help.stdout)
    }

    @Test("a key file others can read stops the node with a message naming the file and the fix")
    func openKey() async throws {
        let dir = TemporaryDirectory()
        _ = try await PeerNodeProcess.run(["id", "--data-dir", dir.path])
        chmod(dir.file("identity.key"), 0o644)
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], input: "hi\n")
        #expect(r.status == 1)
        #expect(r.stderr.contains(dir.file("identity.key")) && r.stderr.contains("chmod 600"))
    }

    @Test("`peernode network new FILE` writes a 0600 key once and refuses to overwrite it")
    func networkNew() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("office.key")
        let r = try await PeerNodeProcess.run(["network", "new", path])
        #expect(r.status == 0)
        #expect(fileMode(path) == 0o600)
        #expect(readFile(path).count == 40)
        let before = readFile(path)
        let again = try await PeerNodeProcess.run(["network", "new", path])
        #expect(again.status == 1 && again.stderr.contains("never overwrites"))
        #expect(readFile(path) == before)
        // A node on that private network starts with it.
        let data = TemporaryDirectory()
        let chat = try await PeerNodeProcess.run(["--data-dir", data.path, "--no-discovery", "--network-key-file", path], input: "secret\n")
        #expect(chat.status == 0 && chat.stdout.contains("private network"))
    }

    @Test("posts from stdin are stored, and the room's history is shown again after a restart")
    func historyAfterRestart() async throws {
        let dir = TemporaryDirectory()
        let first = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--nick", "alice"],
                                            input: "hello from the first run\n/me waves\n")
        #expect(first.status == 0)
        #expect(first.stdout.contains("<alice·") && first.stdout.contains("hello from the first run"))
        let second = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], input: "")
        #expect(second.status == 0)
        #expect(second.stdout.contains("hello from the first run"))
        #expect(second.stdout.contains("* alice·"))
        // The database is an ordinary SQLite file.
        let db = dir.file("peernode.db")
        #expect(fileMode(db) == 0o600)
    }

    @Test("stdin that epoll cannot watch (a regular file, /dev/null) is read all the same: \\r\\n ends a line, a last line without a newline counts, the end quits cleanly")
    func fileInput() async throws {
        let dir = TemporaryDirectory()
        writeFile(dir.file("input.txt"), Array("first line\r\n/me waves\nlast without newline".utf8))
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--nick", "alice", "--json"], inputFile: dir.file("input.txt"))
        #expect(r.status == 0, "\(r.stderr)")
        let texts = r.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["type"] as? String == "message" else { return nil }
            return object["text"] as? String
        }
        #expect(texts == ["first line", "waves", "last without newline"])
        let empty = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], inputFile: "/dev/null")
        #expect(empty.status == 0 && empty.stdout.contains("last without newline"), "\(empty.stderr)")
    }

    @Test("a second node on the same data directory is refused with 'data directory in use'")
    func lock() async throws {
        let dir = TemporaryDirectory()
        let holder = try Child(PeerNodeProcess.binary, ["--data-dir", dir.path, "--no-discovery"], stdin: .pipe)
        // Wait until the first node has printed its greeting (it holds the lock by then).
        let greeted = await eventually(20) { holder.output.contains("/help") }
        #expect(greeted)
        let second = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], input: "hi\n")
        holder.closeInput()
        await holder.exited()
        #expect(second.status == 1)
        #expect(second.stderr.contains("in use"))
    }

    @Test("hostile text typed into a message is stored, and shown inert")
    func hostile() async throws {
        let dir = TemporaryDirectory()
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], input: "\u{1b}]0;owned\u{07}\u{1b}[2J hi\n")
        #expect(r.status == 0)
        #expect(!r.stdout.contains("\u{1b}"))
        #expect(r.stdout.contains("^[]0;owned^G^[[2J hi"))
    }
}
