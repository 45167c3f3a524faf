import ChatText
import Foundation
import NetworkText

/// What a line a terminal pasted for files dropped on it holds (most
/// terminals paste each dropped file's path, quoted or with its spaces
/// escaped, one after another: `'/home/ann/q3 report.pdf' '/home/ann/notes.txt' `),
/// and the question the person is asked before anything goes: a path typed
/// alone is not always a file meant to go. Pure: the disk is looked at
/// through `Disk`, and only for a line that starts as such a path.
enum DroppedFiles: Equatable {
    /// Files there, each with its size: offered each, if the person says y.
    case files([File])
    /// More files than `maximumFiles`: nothing goes, and that is said.
    case tooMany(Int)
    /// A folder among them (named): not sent; its path is posted only if the person says t.
    case folder(String)

    struct File: Equatable {
        let path: String
        let size: UInt64
    }

    /// What is looked up on the disk: a regular file's size, whether a path is a folder, `~/` made whole.
    struct Disk: Sendable {
        var size: @Sendable (String) -> UInt64?
        var isFolder: @Sendable (String) -> Bool
        var expandingHome: @Sendable (String) -> String
    }

    /// Files dropped on the terminal at once, at most: each is an offer of its own.
    static let maximumFiles = 32

    /// The drop `line` is, or nil for a line that is not only paths of files or folders there.
    static func read(_ line: String, disk: Disk) -> DroppedFiles? {
        guard let first = line.first(where: { $0 != " " }), "'\"/~".contains(first) else { return nil }
        // One path alone, as /send reads it (a bare path with spaces too).
        if case let .send(typed, caption) = ChatInput.parse("/send " + line), caption.isEmpty {
            let path = disk.expandingHome(typed)
            if path.hasPrefix("/"), let size = disk.size(path) { return .files([File(path: path, size: size)]) }
        }
        guard let paths = ChatInput.droppedPaths(line)?.map(disk.expandingHome), paths.allSatisfy({ $0.hasPrefix("/") }) else { return nil }
        let sizes = paths.map(disk.size)
        if paths.count > 1, sizes.allSatisfy({ $0 != nil }) {
            guard paths.count <= maximumFiles else { return .tooMany(paths.count) }
            return .files(zip(paths, sizes).map { File(path: $0, size: $1 ?? 0) })
        }
        guard zip(paths, sizes).allSatisfy({ $1 != nil || disk.isFolder($0) }), let folder = paths.first(where: disk.isFolder) else { return nil }
        return .folder(Self.name(folder))
    }

    /// What the person reads: the question, or why nothing goes.
    var question: String {
        switch self {
        case let .files(files) where files.count == 1:
            return "-- send \(Self.name(files[0].path)) (\(FileSize.text(files[0].size))) here as a file? y sends it; t posts the line as text; anything else drops it"
        case let .files(files):
            let named = files.map { Self.name($0.path) + " (\(FileSize.text($0.size)))" }.joined(separator: ", ")
            return "-- send these \(files.count) files here, each as a file? \(named): y sends them; t posts the line as text; anything else drops it"
        case let .tooMany(count):
            return "-- \(count) files dropped at once: at most \(Self.maximumFiles) go together; nothing was sent (drop fewer, or /send each)"
        case let .folder(name):
            return "-- \(name) is a folder, and a folder is not sent (send the files in it, or an archive of it): t posts the line as text; anything else drops it"
        }
    }

    /// The paths the person's y sends (none for a folder or too many).
    var paths: [String] {
        if case let .files(files) = self { return files.map(\.path) }
        return []
    }

    /// A path's last part, inert.
    private static func name(_ path: String) -> String {
        TerminalText.sanitize(String(path.split(separator: "/").last ?? "/"))
    }

    /// The disk as it is.
    static let realDisk = Disk(size: { Files.regularFileSize($0) }, isFolder: { Files.isFolder($0) }, expandingHome: { Files.expandingHome($0) })
}
