import ChatText
import Foundation
import Glibc
import Reactor

/// Log lines on stderr, or in a file that SIGHUP reopens (for logrotate).
/// The chat node writes `peernode: message`; the relay writes a timestamp
/// and level first (`plain`) or one JSON object per line (`json`). Text
/// from the network in a message is escaped either way, never raw.
final class Logger: @unchecked Sendable {
    enum Format { case chat, plain, json }

    private let lock = NSLock()
    private let format: Format
    private let path: String?
    private var descriptor: Int32 = 2
    /// The log file's last write failed: said once on stderr, and its lines
    /// go there too, until a write to the file works again.
    private var fileFailing = false
    /// Where lines go instead (the terminal session prints them above the prompt).
    var sink: (@Sendable (String) -> Void)?

    init(format: Format, path: String? = nil) throws {
        self.format = format
        self.path = path
        if path != nil { try reopen() }
    }

    /// Opens the log file again (after it was rotated away).
    func reopen() throws {
        guard let path else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw NodeError.cannotOpenLog(path: path, reason: String(cString: strerror(errno))) }
        lock.withLock {
            if descriptor > 2 { close(descriptor) }
            descriptor = fd
        }
    }

    func info(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) { write("info", message, fields) }
    func warning(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) { write("warn", message, fields) }

    private func write(_ level: String, _ message: String, _ fields: KeyValuePairs<String, String>) {
        let line: String
        switch format {
        case .chat:
            line = "peernode: " + TerminalText.sanitize(message) + fields.map { " \($0.key)=\(TerminalText.sanitize($0.value))" }.joined()
        case .plain:
            line = Self.timestamp() + " " + level + " " + TerminalText.sanitize(message)
                + fields.map { " \($0.key)=\(TerminalText.sanitize($0.value))" }.joined()
        case .json:
            var pairs: [(String, JSONEvents.Value)] = [("ts", .string(Self.timestamp())), ("level", .string(level)), ("msg", .string(message))]
            pairs += fields.map { ($0.key, .string($0.value)) }
            line = JSONEvents.line(pairs: pairs)
        }
        if let sink {
            sink(line)
            return
        }
        let bytes = Array((line + "\n").utf8)
        lock.withLock {
            do {
                try Syscall.writeAll(descriptor, bytes)
                fileFailing = false
            } catch {
                // Standard error that cannot be written has nowhere to say so; a log file has standard error
                // (a service's journal): said there once, and its lines kept there meanwhile.
                guard descriptor != 2, let path else { return }
                if !fileFailing {
                    let said = "peernode: writing the log file \(TerminalText.sanitize(path)) failed (\(error)): its lines go to standard error until it works again\n"
                    try? Syscall.writeAll(2, Array(said.utf8))
                }
                fileFailing = true
                try? Syscall.writeAll(2, bytes)
            }
        }
    }

    /// UTC, milliseconds: 2026-11-29T18:00:00.123Z.
    static func timestamp() -> String {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        var seconds = t.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, Int(t.tv_nsec / 1_000_000))
    }
}
