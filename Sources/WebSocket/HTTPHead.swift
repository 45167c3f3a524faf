/// The head of an HTTP/1.1 request or response (RFC 9112 §2–5): start line
/// and header fields. Parsed from bytes with a size limit; nothing after the
/// blank line is touched (a client may send its first frame right behind it).
public struct HTTPHead: Sendable, Equatable {
    /// Request: method, target, version. Response: version, status, reason.
    public let startLine: [String]
    public let fields: [(name: String, value: String)]

    public static func == (a: HTTPHead, b: HTTPHead) -> Bool {
        a.startLine == b.startLine && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// Every value of a field, names compared case-insensitively (§5.1).
    public func values(_ name: String) -> [String] {
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    public func value(_ name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// A comma-separated token list, lower-cased and trimmed (RFC 9110 §5.6.1),
    /// across every occurrence of the field.
    public func tokens(_ name: String) -> [String] {
        spelledTokens(name).map { $0.lowercased() }
    }

    /// The same list as the peer spelled it (a subprotocol is answered as it
    /// was offered: RFC 7936 has clients compare names exactly).
    public func spelledTokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: " \t") }
            .filter { !$0.isEmpty }
    }

    /// The parsed head and the bytes it used, nil when the blank line has not
    /// arrived yet. Throws `.tooLarge` as soon as `limit` bytes pass without it.
    static func parse(_ bytes: UnsafeRawBufferPointer, limit: Int) throws(HandshakeError) -> (HTTPHead, Int)? {
        var end: Int?
        if bytes.count >= 4 {
            for i in 3..<bytes.count where bytes[i] == 0x0A && bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D {
                end = i + 1
                break
            }
        }
        guard let end else {
            if bytes.count >= limit { throw .tooLarge(limit: limit) }
            return nil
        }
        guard end <= limit else { throw .tooLarge(limit: limit) }
        // Field values are ISO-8859-1/ASCII in practice; anything else, and any
        // control character other than tab, makes the head malformed.
        for b in bytes[0..<end] where (b < 0x20 && b != 0x09 && b != 0x0D && b != 0x0A) || b == 0x7F || b >= 0x80 {
            throw .malformed("non-ASCII or control byte in the HTTP head")
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<(end - 4)]), as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        guard !lines.isEmpty else { throw .malformed("empty head") }
        let start = lines.removeFirst().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard start.count >= 2, !start[0].isEmpty else { throw .malformed("bad start line") }
        var fields: [(String, String)] = []
        for line in lines {
            // §5.2: obsolete line folding is refused.
            guard let colon = line.firstIndex(of: ":"), !line.hasPrefix(" "), !line.hasPrefix("\t") else {
                throw .malformed("bad header line")
            }
            let name = String(line[..<colon])
            guard !name.isEmpty, !name.contains(" "), !name.contains("\t") else { throw .malformed("bad header name") }
            fields.append((name, line[line.index(after: colon)...].trimmingCharacters(in: " \t")))
        }
        return (HTTPHead(startLine: start, fields: fields), end)
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String { String(self).trimmingCharacters(in: set) }
}
