import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a fetched file is saved: a name made safe from what the network
/// sent, inside the folder asked for, never over a file that is there.
enum SavedFile {
    /// Names Windows keeps for devices (a file of that name on a shared
    /// disk is a trap there): saved with an underscore before them.
    static let reservedNames: Set<String> = Set(["con", "prn", "aux", "nul"] + (1...9).flatMap { ["com\($0)", "lpt\($0)"] })
    /// Bytes of a saved name at most (file systems allow 255).
    static let maximumNameBytes = 200

    /// The rights a saved file is given: read and write as the umask the
    /// process started with allows (`0644` under the usual `022`), as any
    /// program the person runs would make it; never executable. Read once,
    /// first thing in `main`, before the node narrows its own umask to
    /// `077` for its data directory.
    static let fileMode: mode_t = {
        let started = umask(0o077)
        umask(started)
        return 0o666 & ~started
    }()

    /// `name` as a file name: the last path component only, control
    /// characters, slashes and backslashes made `_`, no leading dots, a
    /// reserved device name prefixed, at most `maximumNameBytes`; "file"
    /// when nothing is left.
    static func safeName(_ name: String) -> String {
        let lastComponent = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for s in lastComponent.unicodeScalars {
            switch s.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate, .privateUse:
                scalars.append("_")
            default:
                scalars.append(s == ":" || s == "*" || s == "?" || s == "\"" || s == "<" || s == ">" || s == "|" ? "_" : s)
            }
        }
        var out = String(scalars).trimmingCharacters(in: .whitespaces)
        while out.hasPrefix(".") { out.removeFirst() }
        while out.utf8.count > maximumNameBytes { out.removeLast() }
        if out.isEmpty { return "file" }
        let stem = out.split(separator: ".", maxSplits: 1).first.map { $0.lowercased() } ?? ""
        if reservedNames.contains(stem) { out = "_" + out }
        return out
    }

    /// `name`, then `name (1).ext`, `name (2).ext`… : the first that is not in `folder`.
    static func candidates(_ name: String) -> [String] {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { String(name[..<$0]) } ?? name
        let ext = dot.map { String(name[$0...]) } ?? ""
        return [name] + (1...999).map { "\(stem) (\($0))\(ext)" }
    }

    /// The folder files go to by default: the XDG download folder
    /// (`XDG_DOWNLOAD_DIR` in the environment, else in the user's
    /// `$XDG_CONFIG_HOME/user-dirs.dirs`, as xdg-user-dirs writes it), else `~/Downloads`.
    static func downloadFolder(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_DOWNLOAD_DIR"], xdg.hasPrefix("/") { return xdg }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home.map { $0 + "/.config" }
        if let config, let data = FileManager.default.contents(atPath: config + "/user-dirs.dirs") {
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("XDG_DOWNLOAD_DIR=") {
                var value = String(line.dropFirst("XDG_DOWNLOAD_DIR=".count)).trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                if value.hasPrefix("$HOME"), let home { value = home + value.dropFirst("$HOME".count) }
                if value.hasPrefix("/") { return value }
            }
        }
        return home.map { $0 + "/Downloads" }
    }

    /// Moves the finished `temporary` file into `folder` under `name` or the
    /// next free candidate, never replacing one (`link` fails where a file
    /// is). The path it took.
    static func place(_ temporary: String, in folder: String, as name: String) throws -> String {
        for candidate in candidates(safeName(name)) {
            let path = folder + "/" + candidate
            if link(temporary, path) == 0 {
                unlink(temporary)
                return path
            }
            guard errno == EEXIST else { throw NodeError.fileNotSaved(path: path, reason: String(cString: strerror(errno))) }
        }
        throw NodeError.fileNotSaved(path: folder, reason: "no free name like \(name) there")
    }
}
