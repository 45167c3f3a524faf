/// A typed line longer than one message holds, cut into messages on word
/// boundaries (issue 44: a long line was cut mid-word, the rest lost).
/// The terminal and the page post what a line becomes here, in order; no
/// word is split unless it alone is longer than a message, and then only
/// between characters.
public enum MessageParts {
    /// Bytes of UTF-8 one posted message holds at most (a line longer is
    /// posted as several). The protocol allows far more (64 KiB a body);
    /// this is what a screen shows as one message.
    public static let maximumBytes = 4_000

    /// `text` as messages of at most `limit` bytes each: cut at the last
    /// space or tab that leaves the part within the limit (that one space is
    /// dropped), or, in a word longer than the limit, after the last whole
    /// character that fits. A text within the limit is itself; an empty one
    /// is one empty part.
    public static func split(_ text: String, limit: Int = maximumBytes) -> [String] {
        guard text.utf8.count > limit, limit > 0 else { return [text] }
        var parts: [String] = []
        var rest = Substring(text)
        while rest.utf8.count > limit {
            // The longest prefix of whole characters within the limit.
            var end = rest.startIndex
            var bytes = 0
            for index in rest.indices {
                let size = rest[index].utf8.count
                guard bytes + size <= limit else { break }
                bytes += size
                end = rest.index(after: index)
            }
            // A character longer than the limit alone (it cannot be): take it whole rather than loop.
            if end == rest.startIndex { end = rest.index(after: rest.startIndex) }
            // Back to the last blank within it, where there is one past the start.
            var cut = end
            if !isBlank(rest[end]) {
                if let blank = rest[rest.startIndex..<end].lastIndex(where: isBlank), blank > rest.startIndex { cut = blank }
            }
            parts.append(String(rest[rest.startIndex..<cut]))
            rest = rest[cut...]
            // The one blank at the cut goes with it.
            if let first = rest.first, isBlank(first) { rest = rest.dropFirst() }
        }
        if !rest.isEmpty { parts.append(String(rest)) }
        return parts
    }

    private static func isBlank(_ c: Character) -> Bool { c == " " || c == "\t" }
}
