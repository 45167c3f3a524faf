/// Nicks made to look like another's (issue 7's attack table): `аlice` with a
/// Cyrillic а beside `alice`. Every label already carries the key's
/// fingerprint; a nick that is confusable with another identity's nick, or
/// mixes Latin, Cyrillic and Greek letters, also gets a ⚠ after it.
public enum Confusables {
    /// Letters that look like a Latin letter or digit, mapped to it (from
    /// Unicode's confusables.txt, the common lowercase cases; input is
    /// lowercased first). Digits and look-alike Latin letters fold together.
    static let table: [Unicode.Scalar: Character] = [
        // Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "l", "ї": "l", "ј": "j", "к": "k", "м": "m", "н": "h",
        "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ь": "b",
        // Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "l", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
        "χ": "x", "γ": "y", "ω": "w",
        // Latin look-alikes and digits
        "ı": "l", "i": "l", "1": "l", "|": "l", "0": "o", "5": "s", "ɡ": "g", "ⅼ": "l", "ℓ": "l",
    ]

    /// What a nick looks like: lowercased, look-alikes folded, invisible and
    /// combining marks dropped.
    public static func skeleton(_ nick: String) -> String {
        var out = ""
        for scalar in nick.lowercased().unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format: continue
            default: break
            }
            if let folded = table[scalar] { out.append(folded) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// A warning when joining `room`: it looks like a known room with other
    /// letters (`#generаl` beside `#general`), or mixes scripts. A public
    /// room's id is the hash of its exact name, so a look-alike is another room.
    public static func roomWarning(_ room: String, known: [String]) -> String? {
        let shape = skeleton(room)
        if let twin = known.first(where: { $0 != room && skeleton($0) == shape }) {
            return "\(TerminalText.sanitize(room)) looks like \(TerminalText.sanitize(twin)) but is another room (its letters differ)"
        }
        if mixesScripts(room) { return "\(TerminalText.sanitize(room)) mixes Latin, Cyrillic or Greek letters" }
        return nil
    }

    /// Letters from more than one of Latin, Cyrillic and Greek.
    public static func mixesScripts(_ nick: String) -> Bool {
        var latin = false, cyrillic = false, greek = false
        for scalar in nick.unicodeScalars where scalar.properties.isAlphabetic {
            switch scalar.value {
            case 0x41...0x5A, 0x61...0x7A, 0xC0...0x24F: latin = true
            case 0x400...0x52F: cyrillic = true
            case 0x370...0x3FF: greek = true
            default: break
            }
        }
        return [latin, cyrillic, greek].filter { $0 }.count > 1
    }

}

/// Which identities' nicks are confusable, kept up to date one nick at a time
/// (a catch-up brings thousands of nicks; recomputing all each time would be
/// quadratic). Of the identities whose nicks share a skeleton (the same nick,
/// or one that looks like it), the one that took it first keeps a clean
/// label and every later one is marked (issue 44: a second `alice` got no
/// mark at all, and a look-alike put the mark on the real alice too, on
/// every screen). "First" is the order of `set` calls: a node feeds the
/// nicks it holds at start in the order it first saw their authors.
public struct ConfusableIndex<Key: Hashable> {
    private var nicks: [Key: String] = [:]
    /// Per skeleton, who uses it and when they took it (the order of `set` calls).
    private var groups: [String: [Key: Int]] = [:]
    private var mixed: Set<Key> = []
    private var clock = 0
    /// Identities whose nick mixes scripts, or shares its skeleton with a
    /// nick another identity took before.
    public private(set) var suspicious: Set<Key> = []

    public init() {}

    public mutating func set(_ key: Key, nick: String) {
        guard nicks[key] != nick else { return }
        var touched: [String] = []
        let skeleton = Confusables.skeleton(nick)
        if let old = nicks[key] {
            let oldSkeleton = Confusables.skeleton(old)
            // A new spelling of the same skeleton keeps its place in the group.
            if oldSkeleton != skeleton {
                groups[oldSkeleton]?[key] = nil
                touched.append(oldSkeleton)
            }
        }
        nicks[key] = nick
        if groups[skeleton]?[key] == nil {
            groups[skeleton, default: [:]][key] = clock
            clock += 1
        }
        touched.append(skeleton)
        if Confusables.mixesScripts(nick) { mixed.insert(key) } else { mixed.remove(key) }
        for skeleton in touched {
            let group = groups[skeleton] ?? [:]
            let first = group.min { $0.value < $1.value }?.key
            for member in group.keys {
                if member != first || mixed.contains(member) { suspicious.insert(member) } else { suspicious.remove(member) }
            }
        }
        if let old = touched.first, old != skeleton, groups[old]?.isEmpty == true { groups[old] = nil }
    }
}
