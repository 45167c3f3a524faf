/// The line being typed, as a pure value: keys in, what to do out. Knows
/// nothing of terminals; `PromptLine` draws it.
///
/// Keys: Left/Right, Home/End (Ctrl-A/E), Backspace, Delete, Ctrl-U (to the
/// start), Ctrl-K (to the end), Ctrl-W (the word before the cursor),
/// Up/Down (history, and first `/edit` with our last message), Tab
/// (completion), Enter, Ctrl-C (clears the line; quits on an empty one)
/// and Ctrl-D (delete, or quit on an empty line). Ctrl-L (clear the
/// screen) is the session's (`TerminalSession`).
public struct LineEditor {
    public enum Outcome: Equatable, Sendable {
        /// Nothing to redraw.
        case none
        case redraw
        case submit(String)
        case quit
        /// The key did nothing here (end of history, no completion): ring the bell.
        case bell
        /// Several completions: show them (the line was extended to their common prefix).
        case choices([String])
    }

    /// Characters in one line at most; more are refused with the bell. A
    /// line longer than one message is posted as several (`MessageParts`).
    public static let maximumLength = 32_768
    /// Lines kept for Up/Down.
    public static let maximumHistory = 500

    public private(set) var scalars: [Unicode.Scalar] = []
    public private(set) var cursor = 0
    public private(set) var history: [String] = []
    private var historyIndex: Int?
    private var draft: [Unicode.Scalar] = []

    public init() {}

    public var text: String { String(String.UnicodeScalarView(scalars)) }

    public mutating func apply(_ key: Key, completer: Completer = Completer()) -> Outcome {
        switch key {
        case let .character(s):
            guard scalars.count < Self.maximumLength, !s.isTerminalControl else { return .bell }
            scalars.insert(s, at: cursor)
            cursor += 1
        case .left:
            guard cursor > 0 else { return .none }
            cursor -= 1
        case .right:
            guard cursor < scalars.count else { return .none }
            cursor += 1
        case .home, .control("a"):
            cursor = 0
        case .end, .control("e"):
            cursor = scalars.count
        case .backspace, .control("h"):
            guard cursor > 0 else { return .bell }
            cursor -= 1
            scalars.remove(at: cursor)
        case .delete:
            guard cursor < scalars.count else { return .bell }
            scalars.remove(at: cursor)
        case .control("d"):
            if scalars.isEmpty { return .quit }
            guard cursor < scalars.count else { return .bell }
            scalars.remove(at: cursor)
        case .control("u"):
            scalars.removeSubrange(0..<cursor)
            cursor = 0
        case .control("k"):
            scalars.removeSubrange(cursor...)
        case .control("w"):
            var start = cursor
            while start > 0, scalars[start - 1] == " " { start -= 1 }
            while start > 0, scalars[start - 1] != " " { start -= 1 }
            scalars.removeSubrange(start..<cursor)
            cursor = start
        case .control("c"):
            // A half-typed line is cleared, not lost with the node: quitting takes an empty line.
            guard !scalars.isEmpty else { return .quit }
            scalars = []
            cursor = 0
            historyIndex = nil
        case .up:
            return recall(older: true, offer: completer.lastMessage)
        case .down:
            return recall(older: false, offer: completer.lastMessage)
        case .tab:
            return complete(completer)
        case .enter:
            let line = text
            if !line.trimmingSpaces.isEmpty, history.last != line {
                history.append(line)
                if history.count > Self.maximumHistory { history.removeFirst() }
            }
            scalars = []
            cursor = 0
            historyIndex = nil
            return .submit(line)
        case .control, .alt, .escape, .unknown, .pasteStart, .pasteEnd:
            return .none
        }
        return .redraw
    }

    /// A tab that was pasted, not typed: kept in the line as a tab (a typed
    /// Tab completes). False (the bell) when the line is full.
    public mutating func insertTab() -> Bool {
        guard scalars.count < Self.maximumLength else { return false }
        scalars.insert("\t", at: cursor)
        cursor += 1
        return true
    }

    /// Replaces the line (used when the caller acts on Alt-1…9 and the like).
    public mutating func set(_ line: String) {
        scalars = Array(line.unicodeScalars.filter { !$0.isTerminalControl }.prefix(Self.maximumLength))
        cursor = scalars.count
    }

    /// Up and Down through the lines typed before, newest first; `offer`
    /// (`/edit` and our last message) comes before them all.
    private mutating func recall(older: Bool, offer: String?) -> Outcome {
        let entries = history + (offer.map { [String(String.UnicodeScalarView($0.unicodeScalars.filter { !$0.isTerminalControl }))] } ?? [])
        guard !entries.isEmpty else { return .bell }
        if older {
            let next = (historyIndex ?? entries.count) - 1
            guard next >= 0 else { return .bell }
            if historyIndex == nil { draft = scalars }
            historyIndex = next
            scalars = Array(entries[next].unicodeScalars)
        } else {
            guard let index = historyIndex else { return .bell }
            if index + 1 < entries.count {
                historyIndex = index + 1
                scalars = Array(entries[index + 1].unicodeScalars)
            } else {
                historyIndex = nil
                scalars = draft
            }
        }
        cursor = scalars.count
        return .redraw
    }

    private mutating func complete(_ completer: Completer) -> Outcome {
        var start = cursor
        // A space after a backslash is part of a path word (`my\ docs`).
        while start > 0, scalars[start - 1] != " " || (start > 1 && scalars[start - 2] == "\\") { start -= 1 }
        let word = String(String.UnicodeScalarView(scalars[start..<cursor]))
        let before = String(String.UnicodeScalarView(scalars[0..<start])).split(separator: " ")
        if let paths = completer.paths, let foldersOnly = Self.pathArgument(before) {
            let found = paths.matches(for: word, foldersOnly: foldersOnly)
            guard !found.isEmpty else { return .bell }
            // A folder goes on being typed: no space after it.
            let replacements = found.map(\.replacement)
            let single = found.count == 1 ? replacements[0] + (replacements[0].hasSuffix("/") ? "" : " ") : nil
            return put(single ?? Completer.commonPrefix(replacements), over: word, from: start, choices: single == nil ? found.map(\.shown) : nil)
        }
        let isFirstWord = before.isEmpty
        let matches = completer.matches(for: word, firstWord: isFirstWord)
        guard !matches.isEmpty else { return .bell }
        return put(matches.count == 1 ? matches[0] + " " : Completer.commonPrefix(matches), over: word, from: start, choices: matches.count == 1 ? nil : matches)
    }

    /// Whether the word after `before` is a path Tab completes: a file or
    /// folder after `/send` (false), a folder after `/get N` (true).
    static func pathArgument(_ before: [Substring]) -> Bool? {
        if before == ["/send"] { return false }
        if before.count == 2, before[0] == "/get", before[1].allSatisfy(\.isNumber) { return true }
        return nil
    }

    /// `replacement` in place of `word`, then the choices shown when there
    /// are several. Candidates that differ in case may share less than what
    /// was typed: what was typed is kept then.
    private mutating func put(_ replacement: String, over word: String, from start: Int, choices: [String]?) -> Outcome {
        let text = replacement.unicodeScalars.count >= word.unicodeScalars.count ? replacement : word
        guard text.unicodeScalars.count + scalars.count - word.unicodeScalars.count <= Self.maximumLength else { return .bell }
        scalars.replaceSubrange(start..<cursor, with: text.unicodeScalars)
        cursor = start + text.unicodeScalars.count
        guard let choices else { return .redraw }
        let shown = choices.prefix(Completer.maximumChoicesShown)
        return .choices(Array(shown) + (choices.count > shown.count ? ["… \(choices.count - shown.count) more"] : []))
    }
}

/// What Tab completes: commands (a first word starting with `/`), rooms (a
/// word starting with `#`), the path of `/send` and `/get N` (`PathCompletion`)
/// and nicks (anything else); and what Up offers
/// first: our last message, as the line that edits it.
public struct Completer: Sendable {
    public var commands: [String]
    public var rooms: [String]
    public var nicks: [String]
    /// `/edit TEXT` for our last message in the open room (nil: none).
    public var lastMessage: String?
    /// The paths of `/send PATH` and `/get N DIR` (nil: not completed).
    public var paths: PathCompletion?
    /// Choices shown at most after a Tab; past it, how many more.
    public static let maximumChoicesShown = 100

    public init(commands: [String] = [], rooms: [String] = [], nicks: [String] = [], lastMessage: String? = nil, paths: PathCompletion? = nil) {
        self.commands = commands
        self.rooms = rooms
        self.nicks = nicks
        self.lastMessage = lastMessage
        self.paths = paths
    }

    public func matches(for word: String, firstWord: Bool) -> [String] {
        let pool: [String]
        if word.hasPrefix("/") {
            guard firstWord else { return [] }
            pool = commands
        } else if word.hasPrefix("#") {
            pool = rooms
        } else {
            guard !word.isEmpty else { return [] }
            pool = nicks
        }
        let lowered = word.lowercased()
        // A candidate the terminal would act on (a nick or room from the
        // network carrying ESC or a C1 control) is never offered: it would be
        // echoed into the line and printed as a choice.
        return Array(Set(pool.filter { $0.lowercased().hasPrefix(lowered) && !$0.unicodeScalars.contains(where: \.isTerminalControl) })).sorted()
    }

    static func commonPrefix(_ words: [String]) -> String {
        guard var prefix = words.first.map({ Array($0) }) else { return "" }
        for w in words.dropFirst() {
            let chars = Array(w)
            var n = 0
            while n < prefix.count, n < chars.count, prefix[n] == chars[n] { n += 1 }
            prefix = Array(prefix[0..<n])
        }
        return String(prefix)
    }
}

extension Unicode.Scalar {
    /// C0 and C1 controls and DEL (category Cc): what a terminal acts on
    /// instead of showing. The line being typed never holds one.
    public var isTerminalControl: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }
}

extension String {
    var trimmingSpaces: Substring {
        let s = drop { $0 == " " }
        return s.dropLast(s.reversed().prefix { $0 == " " }.count)
    }
}
