import Testing
import TermUI

@Suite("Keys from terminal bytes")
struct KeyDecoderTests {
    func keys(_ bytes: [UInt8]) -> [Key] {
        var d = KeyDecoder()
        return d.feed(bytes)
    }

    @Test("printable text, UTF-8, Enter, Tab, Backspace and Ctrl letters")
    func basics() {
        #expect(keys(Array("hé€😀".utf8)) == ["h", "é", "€", "😀"].map { .character(Unicode.Scalar($0)!) })
        #expect(keys([0x0D, 0x0A, 0x09, 0x7F, 0x08]) == [.enter, .enter, .tab, .backspace, .backspace])
        #expect(keys([0x01, 0x05, 0x15, 0x17, 0x0B, 0x03, 0x04]) == ["a", "e", "u", "w", "k", "c", "d"].map { .control($0) })
    }

    @Test("arrows, Home/End and Delete in CSI and SS3 forms; Alt-digits; unknown sequences read whole")
    func sequences() {
        #expect(keys(Array("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D".utf8)) == [.up, .down, .right, .left])
        #expect(keys(Array("\u{1B}OA\u{1B}OH\u{1B}OF".utf8)) == [.up, .home, .end])
        #expect(keys(Array("\u{1B}[H\u{1B}[F\u{1B}[1~\u{1B}[4~\u{1B}[7~\u{1B}[8~\u{1B}[3~".utf8)) == [.home, .end, .home, .end, .home, .end, .delete])
        #expect(keys(Array("\u{1B}1\u{1B}9".utf8)) == [.alt("1"), .alt("9")])
        #expect(keys(Array("\u{1B}[15~x\u{1B}[1;5Cy".utf8)) == [.unknown, .character("x"), .unknown, .character("y")])
    }

    @Test("a bracketed paste is marked at both ends; what it holds decodes as keys, a newline and a tab too")
    func bracketedPaste() {
        #expect(keys(Array("\u{1B}[200~a\tb\rc\u{1B}[201~".utf8)) == [.pasteStart, .character("a"), .tab, .character("b"), .enter, .character("c"), .pasteEnd])
    }

    @Test("a sequence split across reads waits for the rest; a lone Esc is a key only once input goes quiet")
    func split() {
        var d = KeyDecoder()
        #expect(d.feed([0x1B]) == [])
        #expect(d.hasPendingEscape)
        #expect(d.feed([UInt8(ascii: "[")]) == [])
        #expect(d.feed([UInt8(ascii: "D")]) == [.left])
        #expect(d.feed([0xE2, 0x82]) == [])
        #expect(d.feed([0xAC]) == [.character("€")])
        #expect(d.feed([0x1B]) == [])
        #expect(d.flushEscape() == [.escape])
        #expect(d.flushEscape() == [])
    }

    @Test("bad UTF-8 becomes U+FFFD; an endless escape sequence is dropped at maximumSequence; nothing traps")
    func hostile() {
        #expect(keys([0xFF, 0x41]) == [.character("\u{FFFD}"), .character("A")])
        #expect(keys([0xE2, 0x41]) == [.character("\u{FFFD}"), .character("A")])
        var d = KeyDecoder()
        let endless = [0x1B, UInt8(ascii: "[")] + [UInt8](repeating: UInt8(ascii: "1"), count: KeyDecoder.maximumSequence)
        #expect(d.feed(endless) == [.unknown])
        #expect(d.feed([UInt8(ascii: "x")]) == [.character("x")])
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var fuzz = KeyDecoder()
            _ = fuzz.feed((0..<Int.random(in: 0..<64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            _ = fuzz.flushEscape()
        }
    }
}
