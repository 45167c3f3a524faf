/// Makes untrusted text (nicks, bodies, room names from the network) safe to
/// print on a terminal: nothing in it can move the cursor, change colours,
/// set the title, reorder text or hide characters. Each such character is
/// shown instead, visibly and inertly:
/// - C0 controls and DEL in caret notation (`^[` for ESC, `^J` for a newline, `^?`),
/// - C1 controls (U+0080–U+009F), bidirectional overrides and isolates,
///   zero-width and other invisible formatting characters (Unicode category
///   Cf), line/paragraph separators, private-use and unassigned code points
///   as `<U+202E>`.
/// An escape sequence thus loses its ESC and prints as plain text.
public enum TerminalText {
    public static func sanitize(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v < 0x20 {
                out.append("^")
                out.append(Unicode.Scalar(UInt8(v + 0x40)))
            } else if v == 0x7f {
                out.append(contentsOf: "^?".unicodeScalars)
            } else if isInvisibleOrControl(scalar) {
                out.append(contentsOf: "<U+\(hex4(v))>".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// True when the text prints as itself: `sanitize` would change nothing.
    public static func isInert(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || isInvisibleOrControl($0) }
    }

    public static func isInvisibleOrControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned:
            return true
        default:
            return false
        }
    }

    private static func hex4(_ v: UInt32) -> String {
        let digits = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
