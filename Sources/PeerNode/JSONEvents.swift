import ChatText
/// One JSON object per line on stdout (`--json`): the contract scripts and
/// bots rely on (README, "Scripting"). Written by hand: Foundation's
/// serializer with sorted keys spent most of a catch-up in ICU collation.
enum JSONEvents {
    enum Value {
        case string(String)
        case number(UInt64)
        /// Text from the network: escaped here like any string (RFC 8259 §7,
        /// and invisible characters too), the one place it is written out whole.
        case text(PeerText)

        /// Seconds as whole nanoseconds.
        static func nanoseconds(_ seconds: Double) -> Value {
            let ns = (max(0, seconds) * 1e9).rounded()
            return .number(ns.isFinite && ns < 1.8e19 ? UInt64(ns) : UInt64.max)
        }
    }

    /// `{"k":v,...}` with the keys in the order given.
    static func line(_ fields: KeyValuePairs<String, Value>) -> String {
        line(pairs: fields.map { ($0.key, $0.value) })
    }

    /// The same, for fields known only at run time.
    static func line(pairs fields: [(String, Value)]) -> String {
        // Written into one string: a catch-up prints a line per message.
        var out = "{"
        out.reserveCapacity(64 * fields.count)
        var first = true
        for (key, value) in fields {
            if !first { out += "," }
            first = false
            appendQuoted(key, to: &out)
            out += ":"
            switch value {
            case let .string(s): appendQuoted(s, to: &out)
            case let .text(t): appendQuoted(t.unsanitized, to: &out)
            case let .number(n): out += String(n)
            }
        }
        out += "}"
        return out
    }

    /// RFC 8259 §7: quote, backslash and control characters escaped; so are
    /// C1 controls, line separators and invisible formatting characters
    /// (bidi overrides…), so the output is inert even if printed raw.
    static func quoted(_ s: String) -> String {
        var out = ""
        appendQuoted(s, to: &out)
        return out
    }

    /// `quoted(s)`, appended to `out`.
    static func appendQuoted(_ s: String, to out: inout String) {
        out += "\""
        // Fast path: printable ASCII without quote or backslash needs nothing.
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (scalar.value >= 0x80 && TerminalText.isInvisibleOrControl(scalar)) {
                    out += escaped(scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// `\uXXXX`, as a surrogate pair above U+FFFF (RFC 8259 §7).
    private static func escaped(_ v: UInt32) -> String {
        guard v > 0xFFFF else { return "\\u" + hex4(v) }
        let u = v - 0x10000
        return "\\u" + hex4(0xD800 + (u >> 10)) + "\\u" + hex4(0xDC00 + (u & 0x3FF))
    }

    private static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }
}
