import Foundation
import Glibc

/// The interactive session: raw keys from stdin through the `LineEditor`,
/// the prompt on the bottom row, and lines from other threads printed above
/// it with the half-typed line drawn again. One lock guards the editor and
/// every write, so output never interleaves.
public final class TerminalSession: @unchecked Sendable {
    private let lock = NSLock()
    private var editor = LineEditor()
    private var line: PromptLine
    private var completer = Completer()
    private var resize: DispatchSourceSignal?
    /// Milliseconds of silence after an Esc before it counts as the Esc key.
    static let escapeTimeout: Int32 = 50

    public init(prompt: String) {
        line = PromptLine(prompt: prompt, columns: Terminal.columns, width: DisplayWidth.of)
    }

    /// Raw mode on and the prompt drawn; false if stdin is not a terminal.
    public func start() -> Bool {
        guard Terminal.enterRawMode() else { return false }
        resize = Terminal.onResize(queue: DispatchQueue(label: "peernode.resize")) { [weak self] in
            guard let self else { return }
            self.lock.withLock {
                self.line.columns = max(8, Terminal.columns)
                self.write(self.line.render(self.editor))
            }
        }
        lock.withLock { write(line.render(editor)) }
        return true
    }

    /// Prints lines above the prompt (any thread).
    public func print(_ lines: [String]) {
        lock.withLock { write(line.printAbove(lines, editor: editor)) }
    }

    public func setPrompt(_ prompt: String) {
        lock.withLock {
            line.prompt = prompt
            write(line.render(editor))
        }
    }

    public func setCompleter(_ new: Completer) {
        lock.withLock { completer = new }
    }

    public func bell() { lock.withLock { write("\u{07}") } }

    /// Reads keys until a line is submitted (returned) or the user quits (nil).
    public func readLine() -> String? {
        var decoder = KeyDecoder()
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, decoder.hasPendingEscape ? Self.escapeTimeout : -1)
            var keys: [Key]
            if ready == 0 {
                keys = decoder.flushEscape()
            } else {
                let n = Glibc.read(0, &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return nil }
                keys = decoder.feed(Array(buffer[0..<n]))
            }
            for key in keys {
                // Alt-1…9: go to that room, as /1…/9 would.
                if case let .alt(c) = key, let digit = c.wholeNumberValue, (1...9).contains(digit) { return "/\(digit)" }
                let outcome = lock.withLock { editor.apply(key, completer: completer) }
                switch outcome {
                case .none: break
                case .redraw: lock.withLock { write(line.render(editor)) }
                case .bell: bell()
                case let .choices(options): print(["   " + options.joined(separator: "  ")])
                case .quit: return nil
                case let .submit(text):
                    lock.withLock { write(line.render(editor)) }
                    return text
                }
            }
        }
    }

    /// Clears the prompt row and gives the terminal back as it was.
    public func finish() {
        lock.withLock { write(line.clear()) }
        resize?.cancel()
        Terminal.restore()
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(1, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }
}
