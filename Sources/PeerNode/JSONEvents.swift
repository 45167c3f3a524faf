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
        // Written as bytes into one buffer, then made a string once: a catch-up
        // prints a line per message, and appending to a String was a sixth of
        // its loop's time (perf, 2026-12-05).
        var out: [UInt8] = []
        out.reserveCapacity(48 * fields.count)
        out.append(UInt8(ascii: "{"))
        for (i, (key, value)) in fields.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            appendQuoted(key, to: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case let .string(s): appendQuoted(s, to: &out)
            case let .text(t): appendQuoted(t.unsanitized, to: &out)
            case let .number(n): appendDecimal(n, to: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 8259 §7: quote, backslash and control characters escaped; so are
    /// C1 controls, line separators and invisible formatting characters
    /// (bidi overrides…), so the output is inert even if printed raw.
    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `quoted(s)`, appended to `out` as UTF-8.
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Fast path: printable ASCII without quote or backslash needs nothing.
        let plain = { (b: UInt8) in b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C }
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard bytes.allSatisfy(plain) else { return false }
            out.append(contentsOf: bytes)
            return true
        } ?? false
        if !copied {
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out.append(contentsOf: #"\""#.utf8)
                case "\\": out.append(contentsOf: #"\\"#.utf8)
                case "\n": out.append(contentsOf: #"\n"#.utf8)
                case "\r": out.append(contentsOf: #"\r"#.utf8)
                case "\t": out.append(contentsOf: #"\t"#.utf8)
                default:
                    if scalar.value < 0x20 || scalar.value == 0x7F || (scalar.value >= 0x80 && TerminalText.isInvisibleOrControl(scalar)) {
                        out.append(contentsOf: escaped(scalar.value).utf8)
                    } else {
                        UTF8.encode(scalar) { out.append($0) }
                    }
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `n` in decimal, appended without a string in between: the digits
    /// lowest first, then turned around in place.
    static func appendDecimal(_ n: UInt64, to out: inout [UInt8]) {
        let start = out.count
        var rest = n
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        out[start...].reverse()
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
