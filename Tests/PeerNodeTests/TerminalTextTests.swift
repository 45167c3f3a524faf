import ChatText
@testable import PeerNode
import Testing

@Suite("Untrusted text is inert on a terminal")
struct TerminalTextTests {
    /// Hostile strings and what must be printed for each.
    static let corpus: [(String, String)] = [
        ("\u{1b}[31mred\u{1b}[0m", "^[[31mred^[[0m"),                // CSI colour
        ("\u{1b}]0;pwned\u{07}", "^[]0;pwned^G"),                     // OSC title + BEL
        ("\u{1b}P+q\u{1b}\\", "^[P+q^[\\"),                           // DCS
        ("\u{9b}2J", "<U+009B>2J"),                                    // C1 CSI
        ("\u{90}x\u{9c}", "<U+0090>x<U+009C>"),                        // C1 DCS / ST
        ("line1\nline2\rback", "line1^Jline2^Mback"),
        ("tab\there", "tab^Ihere"),
        ("del\u{7f}", "del^?"),
        ("nul\u{0}", "nul^@"),
        ("abc\u{202e}fed", "abc<U+202E>fed"),                          // RLO bidi override
        ("\u{2066}iso\u{2069}", "<U+2066>iso<U+2069>"),                // bidi isolates
        ("zero\u{200b}width\u{200d}", "zero<U+200B>width<U+200D>"),
        ("bom\u{feff}", "bom<U+FEFF>"),
        ("sep\u{2028}para\u{2029}", "sep<U+2028>para<U+2029>"),
        ("private\u{e000}", "private<U+E000>"),
        ("plain café ünïcode 😀", "plain café ünïcode 😀"),
    ]

    @Test("each hostile string renders visibly and without control characters")
    func corpus() {
        for (input, expected) in Self.corpus {
            let out = TerminalText.sanitize(input)
            #expect(out == expected, "\(input.debugDescription)")
            #expect(!out.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) })
        }
    }

    @Test("isInert says whether sanitizing would change the text (what Tab completion offers)")
    func inert() {
        for (input, _) in Self.corpus {
            #expect(TerminalText.isInert(input) == (TerminalText.sanitize(input) == input), "\(input.debugDescription)")
        }
        #expect(TerminalText.isInert("alice") && TerminalText.isInert("#général") && TerminalText.isInert("你好"))
        #expect(!TerminalText.isInert("mal\u{202E}lory") && !TerminalText.isInert("x\u{1B}[2J") && !TerminalText.isInert("a\u{9B}b"))
    }

    @Test("nicks and room names go through the same filter when rendered")
    func renderer() throws {
        let r = Renderer(nicks: [:])
        #expect(!r.label(try .init(bytes: [UInt8](repeating: 0x5a, count: 32))).contains("\u{1b}"))
    }
}
