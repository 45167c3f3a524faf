import ChatText
import Foundation
@testable import PeerNode
import Testing

@Suite("--json output")
struct JSONEventsTests {
    @Test("hostile text is escaped: the line stays one valid JSON object with no raw control characters")
    func escaping() throws {
        for (input, _) in TerminalTextTests.corpus {
            // Text from the network (`.text`, a PeerText) is escaped like any string, and comes back whole.
            for value in [JSONEvents.Value.string(input), .text(PeerText(input))] {
                let line = JSONEvents.line(["type": .string("message"), "text": value, "seq": .number(7)])
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || TerminalText.isInvisibleOrControl($0) })
                let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(parsed?["text"] as? String == input)
                #expect(parsed?["seq"] as? Int == 7)
            }
            // Printed, it is sanitized: no control or invisible character acts on a terminal.
            #expect(!"\(PeerText(input))".unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || TerminalText.isInvisibleOrControl($0) })
        }
        #expect(JSONEvents.line(["a": .string("\"\\")]) == #"{"a":"\"\\"}"#)
        // Numbers at their bounds; short and long, plain and escaped strings in one line.
        #expect(JSONEvents.line(["n": .number(0), "m": .number(UInt64.max), "k": .number(10)]) == #"{"n":0,"m":18446744073709551615,"k":10}"#)
        let long = String(repeating: "word ", count: 40)
        #expect(JSONEvents.line(["s": .string("é"), "l": .string(long), "t": .string("a\tb")]) == "{\"s\":\"é\",\"l\":\"\(long)\",\"t\":\"a\\tb\"}")
        #expect(JSONEvents.quoted("x\ny") == #""x\ny""#)
        // A format character above U+FFFF (a tag character) becomes a surrogate pair.
        let tag = JSONEvents.line(["t": .string("\u{E0041}")])
        #expect(tag == #"{"t":"\udb40\udc41"}"#)
        #expect((try JSONSerialization.jsonObject(with: Data(tag.utf8)) as? [String: String])?["t"] == "\u{E0041}")
    }
}
