/// A key press, decoded from the bytes a terminal in raw mode sends.
public enum Key: Equatable, Sendable {
    /// Text to insert (one Unicode scalar at a time).
    case character(Unicode.Scalar)
    case enter, tab, backspace, delete
    case left, right, up, down, home, end
    /// Ctrl plus a letter, as the lowercase letter (Ctrl-A is `.control("a")`).
    case control(Character)
    /// Alt (Esc) plus a printable character, e.g. Alt-1.
    case alt(Character)
    /// The Escape key alone.
    case escape
    /// A sequence we read whole and do not act on (F-keys, mouse, …).
    case unknown
    /// Bracketed paste (xterm's mode 2004): what comes between these two was pasted, not typed.
    case pasteStart, pasteEnd
}

/// Bytes in, keys out; pure. Incomplete sequences wait for more bytes; a
/// lone Esc is only a key once the caller says no more bytes came
/// (`flushEscape`, after a few milliseconds of silence). UTF-8 that does not
/// decode becomes U+FFFD, never a crash.
public struct KeyDecoder {
    private var pending: [UInt8] = []
    /// An escape sequence longer than this is dropped (nothing real is).
    public static let maximumSequence = 32

    public init() {}

    public var hasPendingEscape: Bool { pending.first == 0x1B }

    public mutating func feed(_ bytes: [UInt8]) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        while let (key, used) = Self.decodeOne(pending) {
            pending.removeFirst(used)
            if let key { keys.append(key) }
        }
        if pending.count > Self.maximumSequence {
            pending.removeAll()
            keys.append(.unknown)
        }
        return keys
    }

    /// Called when input went quiet: a waiting Esc (or Esc-prefix) is the Esc key.
    public mutating func flushEscape() -> [Key] {
        guard !pending.isEmpty else { return [] }
        let wasEscape = pending == [0x1B]
        pending.removeAll()
        return [wasEscape ? .escape : .unknown]
    }

    /// One key from the front of `bytes` and how many bytes it used; nil
    /// when more bytes are needed. A nil key with a count skips bytes.
    static func decodeOne(_ bytes: [UInt8]) -> (Key?, Int)? {
        guard let first = bytes.first else { return nil }
        switch first {
        case 0x0D, 0x0A: return (.enter, 1)
        case 0x09: return (.tab, 1)
        case 0x7F, 0x08: return (.backspace, 1)
        case 0x1B: return escape(bytes)
        case 0x01...0x1A: return (.control(Character(Unicode.Scalar(first + 0x60))), 1)
        case 0x00, 0x1C...0x1F: return (.unknown, 1)
        case 0x20...0x7E: return (.character(Unicode.Scalar(first)), 1)
        default: return utf8(bytes)
        }
    }

    private static func escape(_ bytes: [UInt8]) -> (Key?, Int)? {
        guard bytes.count >= 2 else { return nil }
        let second = bytes[1]
        if second == UInt8(ascii: "[") {
            // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, final 0x40–0x7E.
            var i = 2
            while i < bytes.count, (0x20...0x3F).contains(bytes[i]) { i += 1 }
            guard i < bytes.count else { return nil }
            let final = bytes[i]
            guard (0x40...0x7E).contains(final) else { return (.unknown, i) }
            let parameters = String(decoding: bytes[2..<i], as: UTF8.self)
            return (csi(parameters, final), i + 1)
        }
        if second == UInt8(ascii: "O") {
            guard bytes.count >= 3 else { return nil }
            switch bytes[2] {
            case UInt8(ascii: "A"): return (.up, 3)
            case UInt8(ascii: "B"): return (.down, 3)
            case UInt8(ascii: "C"): return (.right, 3)
            case UInt8(ascii: "D"): return (.left, 3)
            case UInt8(ascii: "H"): return (.home, 3)
            case UInt8(ascii: "F"): return (.end, 3)
            default: return (.unknown, 3)
            }
        }
        if second == 0x1B { return (.escape, 1) }
        if (0x20...0x7E).contains(second) { return (.alt(Character(Unicode.Scalar(second))), 2) }
        return (.escape, 1)
    }

    private static func csi(_ parameters: String, _ final: UInt8) -> Key {
        switch (parameters, final) {
        case ("", UInt8(ascii: "A")): return .up
        case ("", UInt8(ascii: "B")): return .down
        case ("", UInt8(ascii: "C")): return .right
        case ("", UInt8(ascii: "D")): return .left
        case ("", UInt8(ascii: "H")): return .home
        case ("", UInt8(ascii: "F")): return .end
        case ("1", UInt8(ascii: "~")), ("7", UInt8(ascii: "~")): return .home
        case ("4", UInt8(ascii: "~")), ("8", UInt8(ascii: "~")): return .end
        case ("3", UInt8(ascii: "~")): return .delete
        case ("200", UInt8(ascii: "~")): return .pasteStart
        case ("201", UInt8(ascii: "~")): return .pasteEnd
        default: return .unknown
        }
    }

    private static func utf8(_ bytes: [UInt8]) -> (Key?, Int)? {
        let first = bytes[0]
        let length: Int
        switch first {
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return (.character("\u{FFFD}"), 1)
        }
        // Wait for the rest, unless what came already cannot continue it.
        for i in 1..<min(length, bytes.count) where bytes[i] & 0xC0 != 0x80 { return (.character("\u{FFFD}"), i) }
        guard bytes.count >= length else { return nil }
        var decoder = UTF8()
        var iterator = bytes[0..<length].makeIterator()
        if case let .scalarValue(scalar) = decoder.decode(&iterator) { return (.character(scalar), length) }
        return (.character("\u{FFFD}"), length)
    }
}
