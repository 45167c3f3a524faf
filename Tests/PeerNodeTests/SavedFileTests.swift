@testable import PeerNode
import Testing

/// The name a fetched file is saved under (docs/PROTOCOL.md §16, "Saving under a safe name").
@Suite("Saving a fetched file under a safe name")
struct SavedFileTests {
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
