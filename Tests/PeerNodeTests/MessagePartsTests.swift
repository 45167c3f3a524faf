import ChatText
import Foundation
import Testing

/// A line longer than one message, posted as several on word boundaries (issue 44).
@Suite("Long lines become several messages")
struct MessagePartsTests {
    let limit = MessageParts.maximumBytes

    @Test("at the limit one message, one byte past two; cut at the last blank, which goes; every word kept, in order")
    func wordBoundaries() {
        let exact = String(repeating: "a", count: limit)
        #expect(MessageParts.split(exact) == [exact])
        #expect(MessageParts.split("") == [""])
        let words = (0..<1_500).map { "w\($0)" }.joined(separator: " ")
        let parts = MessageParts.split(words)
        #expect(parts.count > 1)
        #expect(parts.allSatisfy { $0.utf8.count <= limit && !$0.hasPrefix(" ") && !$0.hasSuffix(" ") })
        #expect(parts.joined(separator: " ") == words, "no word lost or split")
        let onePast = String(repeating: "b", count: limit - 2) + " cc"
        #expect(MessageParts.split(onePast) == [String(repeating: "b", count: limit - 2), "cc"])
        #expect(MessageParts.split("one\ttwo three", limit: 6) == ["one", "two", "three"])
        #expect(MessageParts.split("one\ttwo three", limit: 7) == ["one\ttwo", "three"], "a part may end right before a blank")
    }

    @Test("a word longer than a message is cut between whole characters (a 3-byte one is never split)")
    func longWord() {
        let word = String(repeating: "€", count: 3_000)  // 9,000 bytes
        let parts = MessageParts.split(word)
        #expect(parts.count == 3 && parts.joined() == word)
        #expect(parts.allSatisfy { $0.utf8.count <= limit && $0.utf8.count % 3 == 0 })
    }
}

/// A script's line stays one message (the terminal's and the page's are split: terminal_session.py, WebAPITests).
@Suite("A long line from a script")
struct LongLineTests {
    @Test("in --json a 10,000-byte line is one message, as the protocol allows and scripts expect; so is its edit; /msg to yourself says what to do instead")
    func scriptLine() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let line = (0..<1_200).map { "word\($0)" }.joined(separator: " ")
        #expect(line.utf8.count > 9_000)
        a.send(line)
        #expect(await b.wait { $0["type"] == "message" && $0["text"] == line } != nil, "\(b.recent(3))")
        a.send("/edit " + line + " again")
        #expect(await b.wait { $0["type"] == "edit" || ($0["text"] ?? "") == line + " again" } != nil, "\(b.recent(3))")
        // A direct message to yourself says what to do instead of naming a key (issue 44).
        a.send("/msg \(a.id) a note")
        #expect(await a.wait { $0["type"] == "error" && ($0["error"] ?? "").hasPrefix("that is you: for notes to yourself") } != nil, "\(a.recent(3))")
        await a.quit(); await b.quit()
        withExtendedLifetime(dirs) {}
    }
}
