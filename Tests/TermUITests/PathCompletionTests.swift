import Foundation
import Testing
import TermUI

@Suite("Tab on a path: /send PATH and /get N DIR")
struct PathCompletionTests {
    /// A small tree, as a lister gives it: `/home/ann` holds folders and files.
    static let tree: [String: [(name: String, isFolder: Bool)]] = [
        "/home/ann/": [("Documents", true), ("Downloads", true), ("notes.txt", false), (".hidden", false), ("my docs", true),
                       ("evil\u{1B}[2J.txt", false), ("bell\u{07}", true)],
        "/home/ann/my docs/": [("report Q3.pdf", false), ("report Q4.pdf", false)],
        "./": [("local.log", false), ("logs", true)],
        "/home/ann/Documents/": [],
    ]
    let completer = Completer(paths: PathCompletion(home: "/home/ann") { folder in PathCompletionTests.tree[folder.hasSuffix("/") ? folder : folder + "/"] })

    func tab(_ line: String) -> (LineEditor.Outcome, String) {
        var e = LineEditor()
        e.set(line)
        let outcome = e.apply(.tab, completer: completer)
        return (outcome, e.text)
    }

    @Test("a file completes with a space after it, a folder with a slash and no space; ~/ stays as typed")
    func oneMatch() {
        #expect(tab("/send ~/no") == (.redraw, "/send ~/notes.txt "))
        #expect(tab("/send ~/Doc") == (.redraw, "/send ~/Documents/"))
        #expect(tab("/send /home/ann/Doc") == (.redraw, "/send /home/ann/Documents/"))
        #expect(tab("/send loc") == (.redraw, "/send local.log "), "a relative path is the node's folder")
    }

    @Test("names with spaces go in escaped as the /send line reads them, and an escaped path is read back")
    func spaces() {
        #expect(tab("/send ~/my") == (.redraw, "/send ~/my\\ docs/"))
        #expect(tab("/send ~/my\\ docs/report") == (.choices(["report Q3.pdf", "report Q4.pdf"]), "/send ~/my\\ docs/report\\ Q"))
        #expect(tab("/send ~/my\\ docs/report\\ Q3") == (.redraw, "/send ~/my\\ docs/report\\ Q3.pdf "))
    }

    @Test("several: the common part, and the names listed; hidden names only after a dot; /get N completes folders only")
    func several() {
        #expect(tab("/send ~/Do") == (.choices(["Documents/", "Downloads/"]), "/send ~/Do"))
        #expect(tab("/send ~/") == (.choices(["Documents/", "Downloads/", "my docs/", "notes.txt"]), "/send ~/"))
        #expect(tab("/send ~/.h") == (.redraw, "/send ~/.hidden "))
        #expect(tab("/get 14 ~/") == (.choices(["Documents/", "Downloads/", "my docs/"]), "/get 14 ~/"))
        #expect(tab("/get 14 ~/Dow") == (.redraw, "/get 14 ~/Downloads/"))
    }

    @Test("nothing to complete rings the bell: no such folder, nothing matching, an empty folder, a quoted path, elsewhere in the line")
    func nothing() {
        #expect(tab("/send /nowhere/x").0 == .bell)
        #expect(tab("/send ~/zz").0 == .bell)
        #expect(tab("/send ~/Documents/").0 == .bell)
        #expect(tab("/send \"~/no").0 == .bell)
        #expect(tab("/get 14 ~/no").0 == .bell, "a file is no folder for /get")
        #expect(tab("/get x ~/Dow").0 == .bell)
        #expect(tab("hello ~/no").0 == .bell, "not a path outside /send and /get")
    }

    @Test("a name holding a terminal control is never offered, so never echoed into the line")
    func controlsStayOut() {
        #expect(tab("/send ~/ev").0 == .bell)
        #expect(tab("/send ~/be").0 == .bell)
    }

    @Test("at most PathCompletion.maximumEntries names are read from one folder; at most Completer.maximumChoicesShown listed")
    func limits() {
        let many = Completer(paths: PathCompletion(home: nil) { _ in (0..<(PathCompletion.maximumEntries + 50)).map { (String(format: "f%05d", $0), false) } })
        var e = LineEditor()
        e.set("/send /big/f")
        guard case let .choices(shown) = e.apply(.tab, completer: many) else { Issue.record("no choices"); return }
        #expect(shown.count == Completer.maximumChoicesShown + 1)
        #expect(shown.last == "… \(PathCompletion.maximumEntries - Completer.maximumChoicesShown) more")
        #expect(shown.first == "f00000")
        e.set("/send /big/f04095")
        #expect(e.apply(.tab, completer: many) == .redraw, "the last name read is offered")
        e.set("/send /big/f04096")
        #expect(e.apply(.tab, completer: many) == .bell, "one past the limit is not read")
    }

    @Test("the disk itself: folders (and links to them) end with a slash, files with a space")
    func disk() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pathcompletion-\(getpid())").path
        try FileManager.default.createDirectory(atPath: root + "/sub folder", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: root + "/photo.png", contents: Data([1])))
        // A name that is not UTF-8 (bytes 0xFF 0xFE): not offered, since it could not be typed back.
        let bytes = Array((root + "/p").utf8) + [0xFF, 0xFE, 0]
        let raw = bytes.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer { p in p.baseAddress.map { open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) } ?? -1 }
        #expect(raw >= 0)
        if raw >= 0 { close(raw) }
        try FileManager.default.createSymbolicLink(atPath: root + "/linked", withDestinationPath: root + "/sub folder")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let real = Completer(paths: PathCompletion())
        var e = LineEditor()
        e.set("/send \(root)/")
        #expect(e.apply(.tab, completer: real) == .choices(["linked/", "photo.png", "sub folder/"]))
        e.set("/send \(root)/su")
        _ = e.apply(.tab, completer: real)
        #expect(e.text == "/send \(root)/sub\\ folder/")
        e.set("/send \(root)/ph")
        _ = e.apply(.tab, completer: real)
        #expect(e.text == "/send \(root)/photo.png ")
    }
}
