import ChatText
import Crypto
import Foundation
import Gossip
import TestSupport
@testable import PeerNode
import Testing

/// The name a fetched file is saved under (docs/PROTOCOL.md §16, "Saving under a safe name").
@Suite("Saving a fetched file under a safe name")
struct SavedFileTests {
    @Test("a path with spaces as people type or paste it: \"double\" or 'single' quotes, backslashes before spaces, or bare in /get's folder; a bare /send path that names nothing takes the caption's words that make a file's path")
    func pathsWithSpaces() throws {
        #expect(ChatInput.parse("/send \"my docs/q3 report.pdf\" the numbers") == .send(path: "my docs/q3 report.pdf", caption: "the numbers"))
        #expect(ChatInput.parse("/send '/tmp/my docs/q3 report.pdf' ") == .send(path: "/tmp/my docs/q3 report.pdf", caption: ""))
        #expect(ChatInput.parse("/send my\\ docs/q3\\ report.pdf the numbers") == .send(path: "my docs/q3 report.pdf", caption: "the numbers"))
        #expect(ChatInput.parse("/send plain.pdf") == .send(path: "plain.pdf", caption: ""))
        #expect(ChatInput.parse("/get 3 ~/my downloads") == .get(number: 3, folder: "~/my downloads"))
        #expect(ChatInput.parse("/get 3 'my downloads'") == .get(number: 3, folder: "my downloads"))
        #expect(ChatInput.parse("/get 3 my\\ downloads") == .get(number: 3, folder: "my downloads"))
        #expect(ChatInput.parse("/get 3") == .get(number: 3, folder: nil))
        if case .error = ChatInput.parse("/get 3 \"my downloads\" and more") {} else { Issue.record("text after a quoted folder is taken") }
        if case .error = ChatInput.parse("/send \"unclosed") {} else { Issue.record("an unclosed quote is taken") }

        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/my docs", withIntermediateDirectories: true)
        writeFile(dir.path + "/my docs/q3 report.pdf", [1, 2, 3])
        #expect(NetworkNode.widened(dir.path + "/my", "docs/q3 report.pdf the numbers") == (dir.path + "/my docs/q3 report.pdf", "the numbers"))
        #expect(NetworkNode.widened(dir.path + "/my", "docs/q3 report.pdf") == (dir.path + "/my docs/q3 report.pdf", ""))
        #expect(NetworkNode.widened(dir.path + "/my", "docs") == (dir.path + "/my", "docs"), "a folder is not a file to send")
        #expect(NetworkNode.widened(dir.path + "/none", "of these") == (dir.path + "/none", "of these"))
        writeFile(dir.path + "/my", [4])
        #expect(NetworkNode.widened(dir.path + "/my", "docs/q3 report.pdf") == (dir.path + "/my", "docs/q3 report.pdf"), "what names a file is taken as typed")
    }

    @Test("several files dropped at once: a line of only paths, quoted or escaped as terminals paste them, is read as those paths; a word that is no absolute path, or text after a quote, makes it no drop")
    func droppedPaths() {
        #expect(ChatInput.droppedPaths("'/a/q3 report.pdf' '/a/notes.txt' ") == ["/a/q3 report.pdf", "/a/notes.txt"])
        #expect(ChatInput.droppedPaths("/a/q3\\ report.pdf /a/notes.txt") == ["/a/q3 report.pdf", "/a/notes.txt"])
        #expect(ChatInput.droppedPaths("\"/a/x y\" ~/b.txt") == ["/a/x y", "~/b.txt"])
        #expect(ChatInput.droppedPaths("'/a/one.pdf'") == ["/a/one.pdf"])
        #expect(ChatInput.droppedPaths("/etc/passwd and /etc/hosts") == nil, "a word that is no path: words, not a drop")
        #expect(ChatInput.droppedPaths("'/a/x'y") == nil)
        #expect(ChatInput.droppedPaths("'/a/unclosed") == nil)
        #expect(ChatInput.droppedPaths("   ") == nil)
        #expect(ChatInput.droppedPaths("hello") == nil)
    }

    @Test("a drop read against a disk: one file, several, DroppedFiles.maximumFiles at once and one past, a folder alone or among files, a path that is not there, words; the questions name each file inert")
    func droppedFilesRead() {
        let files: [String: UInt64] = Dictionary(uniqueKeysWithValues: (0..<40).map { ("/d/f\($0).txt", UInt64(100 + $0)) } + [("/d/q3 report.pdf", 2_400_000), ("/d/evil\u{1B}[31m.txt", 5)])
        let disk = DroppedFiles.Disk(size: { files[$0] }, isFolder: { $0 == "/d/photos" || $0 == "/home/ann/photos" },
                                     expandingHome: { $0.hasPrefix("~/") ? "/home/ann" + $0.dropFirst() : $0 })
        let one = DroppedFiles.read("'/d/q3 report.pdf' ", disk: disk)
        #expect(one == .files([.init(path: "/d/q3 report.pdf", size: 2_400_000)]))
        #expect(one?.question == "-- send q3 report.pdf (2.4 MB) here as a file? y sends it; t posts the line as text; anything else drops it")
        #expect(DroppedFiles.read("/d/q3\\ report.pdf", disk: disk)?.paths == ["/d/q3 report.pdf"], "escaped, as some terminals paste")
        let quoted = { (n: Int) in (0..<n).map { "'/d/f\($0).txt'" }.joined(separator: " ") + " " }
        let limit = DroppedFiles.maximumFiles
        #expect(limit == 32)
        #expect(DroppedFiles.read(quoted(2), disk: disk)?.question
                == "-- send these 2 files here, each as a file? f0.txt (100 B), f1.txt (101 B): y sends them; t posts the line as text; anything else drops it")
        #expect(DroppedFiles.read(quoted(limit), disk: disk)?.paths.count == limit, "at the limit: all of them")
        #expect(DroppedFiles.read(quoted(limit + 1), disk: disk) == .tooMany(limit + 1), "one past: nothing goes")
        #expect(DroppedFiles.read(quoted(limit + 1), disk: disk)?.paths == [])
        #expect(DroppedFiles.read("'/d/photos' ", disk: disk) == .folder("photos"))
        #expect(DroppedFiles.read("'/d/f0.txt' '~/photos' ", disk: disk) == .folder("photos"), "a folder among files: none of them goes")
        #expect(DroppedFiles.read("'/d/f0.txt' '/d/gone.txt' ", disk: disk) == nil, "a path that is not there: words, not a drop")
        #expect(DroppedFiles.read("'/d/gone.txt' ", disk: disk) == nil)
        #expect(DroppedFiles.read("hello '/d/f0.txt'", disk: disk) == nil)
        #expect(DroppedFiles.read("'relative.txt' ", disk: disk) == nil, "not a path from the root")
        let evil = DroppedFiles.read("'/d/f0.txt' '/d/evil\u{1B}[31m.txt'", disk: disk)?.question ?? ""
        #expect(evil.contains("evil^[[31m.txt (5 B)") && !evil.contains("\u{1B}"), "a file's name is shown inert: \(evil)")
    }

    @Test("path parts, control characters, leading dots, device names and lengths are made safe")
    func safeNames() {
        #expect(SavedFile.safeName("report.pdf") == "report.pdf")
        #expect(SavedFile.safeName("../../etc/passwd") == "passwd")
        #expect(SavedFile.safeName("..\\..\\windows\\win.ini") == "win.ini")
        #expect(SavedFile.safeName("..") == "file" && SavedFile.safeName("/") == "file" && SavedFile.safeName("") == "file")
        #expect(SavedFile.safeName(".bashrc") == "bashrc")
        #expect(SavedFile.safeName("a\u{1B}[31mb\nc.txt") == "a_[31mb_c.txt")
        #expect(SavedFile.safeName("what?.txt") == "what_.txt" && SavedFile.safeName("a:b|c.txt") == "a_b_c.txt")
        #expect(SavedFile.safeName("CON") == "_CON" && SavedFile.safeName("nul.txt") == "_nul.txt" && SavedFile.safeName("com7.log") == "_com7.log")
        #expect(SavedFile.safeName("console.txt") == "console.txt")
        #expect(SavedFile.safeName(String(repeating: "é", count: 300)).utf8.count <= SavedFile.maximumNameBytes)
        #expect(SavedFile.safeName("\u{202E}gpj.exe") == "_gpj.exe", "a right-to-left override is a format character")
    }

    @Test("a taken name gives name (1).ext, then (2); a name without an extension gets the number at its end")
    func candidates() {
        #expect(Array(SavedFile.candidates("report.pdf").prefix(3)) == ["report.pdf", "report (1).pdf", "report (2).pdf"])
        #expect(Array(SavedFile.candidates("README").prefix(2)) == ["README", "README (1)"])
        #expect(SavedFile.candidates("x").count == 1_000)
    }
}

@Suite("Where files go, and how large they may be")
struct FileFolderTests {
    @Test("the download folder: XDG_DOWNLOAD_DIR, else user-dirs.dirs (with $HOME), else ~/Downloads")
    func downloadFolder() throws {
        let config = TemporaryDirectory()
        #expect(SavedFile.downloadFolder(environment: ["XDG_DOWNLOAD_DIR": "/srv/in", "HOME": "/home/a"]) == "/srv/in")
        #expect(SavedFile.downloadFolder(environment: ["HOME": "/home/a", "XDG_CONFIG_HOME": config.path]) == "/home/a/Downloads")
        try "# written by xdg-user-dirs-update\nXDG_DESKTOP_DIR=\"$HOME/Desktop\"\nXDG_DOWNLOAD_DIR=\"$HOME/Téléchargements\"\n"
            .write(toFile: config.path + "/user-dirs.dirs", atomically: true, encoding: .utf8)
        #expect(SavedFile.downloadFolder(environment: ["HOME": "/home/a", "XDG_CONFIG_HOME": config.path]) == "/home/a/Téléchargements")
        #expect(SavedFile.downloadFolder(environment: [:]) == nil)
    }

    @Test("a file of 4 GiB may be sent, one byte more is refused with the limit in words; an empty one too; /send of a sparse 4 GiB + 1 file says so")
    func sizeLimit() throws {
        #expect(throws: Never.self) { try Files.check(size: FileOffer.maximumSize, of: "a") }
        #expect(throws: Never.self) { try Files.check(size: 1, of: "a") }
        do {
            try Files.check(size: FileOffer.maximumSize + 1, of: "big.iso")
            Issue.record("4 GiB + 1 was taken")
        } catch {
            #expect("\(error)" == "big.iso is 4294967297 bytes (4.3 GB): files up to 4 GiB (4294967296 bytes) can be sent")
        }
        #expect(throws: NodeError.self) { try Files.check(size: 0, of: "empty") }
        let dir = TemporaryDirectory()
        let path = dir.path + "/sparse.iso"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: FileOffer.maximumSize + 1)
        try handle.close()
        #expect(throws: NodeError.self) { try Files.seal(path: path, name: nil, caption: "", folder: dir.path) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["sparse.iso"], "no staging file left")
        // A folder is said to be one, with what to do instead.
        do {
            _ = try Files.seal(path: dir.path, name: nil, caption: "", folder: dir.path)
            Issue.record("a folder was sealed")
        } catch {
            #expect("\(error)".hasSuffix("a folder is not sent (send the files in it, or an archive of it)"), "\(error)")
        }
    }

    @Test("a file the system gives no size (/proc, /sys: 0) is read to its end and sent for what it holds; an empty file is still refused")
    func noStatedSize() throws {
        let dir = TemporaryDirectory()
        var info = stat()
        try #require(stat("/proc/self/status", &info) == 0 && info.st_size == 0, "this kernel gives /proc/self/status a size")
        let sealed = try Files.seal(path: "/proc/self/status", name: nil, caption: "", folder: dir.path)
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: sealed.staging)))
        #expect(sealed.offer.size > 0 && UInt64(bytes.count) == sealed.offer.size + UInt64(FileKey.tagByteCount), "one sealed chunk of what was read")
        let key = try #require(FileKey(exactly: sealed.offer.key))
        let text = String(decoding: try key.open(chunk: bytes, index: 0), as: UTF8.self)
        #expect(text.hasPrefix("Name:") && text.contains("\nPid:"), "\(text)")
        #expect(sealed.offer.name == "status" && FileTree.root(sealed.leaves) == sealed.offer.root)
        // Past a chunk, read to its end too: /proc/self/smaps of this test process runs to hundreds of KB.
        let long = try Files.seal(path: "/proc/self/smaps", name: nil, caption: "", folder: dir.path)
        #expect(long.offer.size > UInt64(FileOffer.chunkSize) && UInt64(long.leaves.count) == FileOffer.chunks(size: long.offer.size),
                "\(long.offer.size) bytes in \(long.leaves.count) chunks")
        let empty = dir.path + "/empty.txt"
        #expect(FileManager.default.createFile(atPath: empty, contents: nil))
        #expect(throws: NodeError.self) { try Files.seal(path: empty, name: nil, caption: "", folder: dir.path) }
    }

    @Test("/send says a large file is sealing from 50 MB to the limit, and nothing first of one it then refuses")
    func sealingNotice() {
        let limit = FileOffer.maximumSize
        #expect(NetworkNode.sealingNotice("a.iso", size: limit, regular: true) == "-- sealing a.iso (4.3 GB): it is offered here once that is done")
        #expect(NetworkNode.sealingNotice("a.iso", size: NetworkNode.sealingNoticeBytes, regular: true) != nil)
        #expect(NetworkNode.sealingNotice("a.iso", size: NetworkNode.sealingNoticeBytes - 1, regular: true) == nil)
        #expect(NetworkNode.sealingNotice("a.iso", size: limit + 1, regular: true) == nil)
        #expect(NetworkNode.sealingNotice("dir", size: NetworkNode.sealingNoticeBytes, regular: false) == nil)
        #expect(NetworkNode.sealingNotice("\u{1b}[2Ja.iso", size: limit, regular: true)?.contains("\u{1b}") == false)
    }
}
