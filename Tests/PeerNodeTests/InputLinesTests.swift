import Foundation
@testable import PeerNode
import TestSupport
import Testing

/// Standard input read as lines (`InputLines`): a line is bounded, one past
/// the bound is dropped and said, and what follows it is read.
@Suite("Lines from standard input")
struct InputLinesTests {
    /// Items as short words, so a failure prints no megabyte line: "overlong", a line of up to 16
    /// bytes as itself, a longer one as its first byte and length.
    static func shape(_ items: [InputLines.Item]) -> [String] {
        items.map {
            switch $0 {
            case .overlong: "overlong"
            case let .line(s): s.utf8.count <= 16 ? s : "\(s.prefix(1))×\(s.utf8.count)"
            }
        }
    }

    @Test("\\n and \\r\\n end lines wherever the reads cut them; a last line without an end counts at the end")
    func split() {
        var lines = InputLines()
        #expect(lines.add(Array("ab".utf8)) == [])
        #expect(lines.add(Array("c\r".utf8)) == [])
        #expect(lines.add(Array("\nd\n\ne".utf8)) == [.line("abc"), .line("d"), .line("")])
        #expect(lines.end() == [.line("e")])
        #expect(lines.end() == [])
    }

    @Test("a line of maximumLineBytes is taken, in reads of 64 KiB; one byte more is dropped, said once as soon as it passes the limit, and the next line is taken")
    func atTheLimit() {
        let limit = InputLines.maximumLineBytes
        var lines = InputLines()
        var got: [InputLines.Item] = []
        let whole = [UInt8](repeating: UInt8(ascii: "x"), count: limit) + [0x0A]
        for start in stride(from: 0, to: whole.count, by: 1 << 16) { got += lines.add(Array(whole[start..<min(whole.count, start + (1 << 16))])) }
        #expect(Self.shape(got) == ["x×\(limit)"])

        #expect(Self.shape(lines.add([UInt8](repeating: UInt8(ascii: "y"), count: limit))) == [])
        #expect(Self.shape(lines.add([UInt8(ascii: "y")])) == ["overlong"], "said when the limit is passed, before its end comes")
        #expect(lines.heldBytes == 0)
        #expect(Self.shape(lines.add(Array("yyy\nnext\n".utf8))) == ["next"])

        // A "\r\n" line: its "\r" is one of the bytes before the "\n".
        #expect(Self.shape(lines.add([UInt8](repeating: UInt8(ascii: "z"), count: limit - 1) + [0x0D, 0x0A])) == ["z×\(limit - 1)"])
        #expect(Self.shape(lines.add([UInt8](repeating: UInt8(ascii: "z"), count: limit) + [0x0D, 0x0A])) == ["overlong"])
    }

    @Test("input that never ends a line (a binary, /dev/zero) holds no more than the limit and is said once; the end of input adds nothing")
    func endless() {
        var lines = InputLines()
        var overlong = 0
        for _ in 0..<64 {
            overlong += lines.add([UInt8](repeating: 0, count: 1 << 17)).count { $0 == .overlong }
            #expect(lines.heldBytes <= InputLines.maximumLineBytes)
        }
        #expect(overlong == 1)
        #expect(lines.end() == [])
    }

    @Test("a node fed a line past the limit on standard input says so as an error, keeps no part of it, and posts the line after it")
    func nodeSaysIt() async throws {
        let dir = TemporaryDirectory()
        let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
        #expect(await started(a))
        a.child.send(String(repeating: "x", count: InputLines.maximumLineBytes + 1) + "\nafter it\n")
        let said = await a.wait { $0["type"] == "error" }?["error"] ?? ""
        #expect(said.contains("a line of more than \(InputLines.maximumLineBytes) bytes on standard input was dropped"), "\(a.recent(3))")
        let after = await a.wait { $0["type"] == "message" && $0["text"] == "after it" }
        #expect(after != nil, "\(a.recent(3))")
        #expect(!a.events.value.contains { $0["type"] == "message" && ($0["text"] ?? "").hasPrefix("xxx") })
        #expect(await a.quit() == 0)
    }
}
