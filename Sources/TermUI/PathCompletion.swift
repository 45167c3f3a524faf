import Foundation

/// Tab on a path, as a shell completes one: the file of `/send PATH` (a
/// file or a folder) and the folder of `/get N DIR` (folders only). The
/// word being completed is read as `ChatInput` reads a bare path (a
/// backslash keeps the character after it: `my\ docs`), `~/` is the home
/// folder, and a name put in is escaped the same way; a folder's name ends
/// with `/` and a file's with a space, as bash does. Names starting with a
/// dot are offered only when the typed part starts with one. A name that
/// holds a terminal control is never offered (it would be echoed into the
/// line and printed as a choice).
public struct PathCompletion: Sendable {
    /// Entries read from one folder at most: a folder of millions must not
    /// hold the keyboard while it is listed. Past it, the rest are not offered.
    public static let maximumEntries = 4_096

    /// One folder's entries: name, and whether it is a folder (nil: not a
    /// readable folder). The real one lists the disk; a test gives its own.
    public typealias Lister = @Sendable (String) -> [(name: String, isFolder: Bool)]?

    let list: Lister
    let home: String?

    public init(home: String? = ProcessInfo.processInfo.environment["HOME"], list: @escaping Lister = PathCompletion.disk) {
        self.home = home
        self.list = list
    }

    /// What replaces `word` (the typed path as it stands in the line, up to
    /// the cursor), each whole and escaped, with the names to show when
    /// there are several; sorted.
    func matches(for word: String, foldersOnly: Bool) -> [(replacement: String, shown: String)] {
        guard !word.hasPrefix("\""), !word.hasPrefix("'") else { return [] }
        let typed = Self.unescaped(word)
        let slash = typed.lastIndex(of: "/")
        let folderPart = slash.map { String(typed[...$0]) } ?? ""
        let namePart = slash.map { String(typed[typed.index(after: $0)...]) } ?? typed
        var folder = folderPart.isEmpty ? "." : folderPart
        if folder == "~/" || folder.hasPrefix("~/") {
            guard let home else { return [] }
            folder = home + folder.dropFirst()
        }
        guard let entries = list(folder) else { return [] }
        // What was typed before the name stays as typed (`~/`, escapes and
        // all): each `/` of the word is one of the path it reads as.
        let typedFolder = word.lastIndex(of: "/").map { String(word[...$0]) } ?? ""
        return entries.prefix(Self.maximumEntries)
            .filter { entry in
                entry.name.hasPrefix(namePart) && (namePart.hasPrefix(".") || !entry.name.hasPrefix("."))
                    && (!foldersOnly || entry.isFolder) && entry.name != "." && entry.name != ".."
                    && !entry.name.unicodeScalars.contains(where: \.isTerminalControl)
            }
            .map { entry in (replacement: typedFolder + Self.escaped(entry.name) + (entry.isFolder ? "/" : ""), shown: entry.name + (entry.isFolder ? "/" : "")) }
            .sorted { $0.replacement < $1.replacement }
    }

    /// The disk's entries in `folder` (symbolic links followed, so a link
    /// to a folder completes as one), at most `maximumEntries`.
    public static let disk: Lister = { folder in
        guard let dir = opendir(folder) else { return nil }
        defer { closedir(dir) }
        var out: [(name: String, isFolder: Bool)] = []
        while out.count < maximumEntries, let entry = readdir(dir) {
            // A name that is not UTF-8 could not be typed back as itself: not offered.
            guard let name = withUnsafeBytes(of: entry.pointee.d_name, { raw in
                String(validating: raw.prefix { $0 != 0 }, as: UTF8.self)
            }) else { continue }
            var info = stat()
            let isFolder = stat(folder + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            out.append((name, isFolder))
        }
        return out
    }

    /// A name as a bare path word takes it: a backslash before each space,
    /// backslash and quote.
    static func escaped(_ name: String) -> String {
        var out = ""
        for c in name {
            if c == " " || c == "\\" || c == "\"" || c == "'" { out.append("\\") }
            out.append(c)
        }
        return out
    }

    /// A bare path word read back: a backslash keeps the character after it.
    static func unescaped(_ word: String) -> String {
        var out = "", escaped = false
        for c in word {
            if !escaped, c == "\\" { escaped = true; continue }
            out.append(c)
            escaped = false
        }
        return out
    }
}
