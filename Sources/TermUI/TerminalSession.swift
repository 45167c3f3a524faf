import Foundation
import Glibc

/// The interactive session: raw keys (fed from stdin by its watcher)
/// through the `LineEditor`, the prompt on the bottom row, and lines
/// printed above it with the half-typed line drawn again. One lock guards
/// the editor and every write, so output from any thread never interleaves.
/// What the person did at the prompt.
public enum TerminalInput: Equatable, Sendable {
    /// A line submitted (a command or a message).
    case line(String)
    /// Ctrl-D on an empty line (or Ctrl-C): leave.
    case quit
    /// A paste of several lines (bracketed paste): none is sent until the
    /// person says so; the line being typed is empty again.
    case paste([String])
    /// A paste of more than `TerminalSession.maximumPastedLines` lines: none
    /// was kept, and none is sent; the count says how many it held.
    case pasteTooLong(lines: Int)
}

public final class TerminalSession: @unchecked Sendable {
    private let lock = NSLock()
    private var editor = LineEditor()
    private var line: PromptLine
    private var completer = Completer()
    private var decoder = KeyDecoder()
    /// Inside a bracketed paste: Enter ends a pasted line, Tab is a tab.
    private var pasting = false
    private var pastedLines: [String] = []
    /// Lines of the paste under way, kept or not.
    private var pastedCount = 0
    /// Lines one paste may hold (irssi asks about any paste; chat services
    /// make a long one a file). A longer paste is refused whole and its lines
    /// past the limit are not kept: a file pasted by mistake was held line
    /// by line, then offered as that many messages.
    public static let maximumPastedLines = 1_000
    /// Home, then erase the whole screen (Ctrl-L).
    static let clearScreen = "\u{1B}[H\u{1B}[2J"
    /// Milliseconds of silence after an Esc before it counts as the Esc key.
    public static let escapeTimeout = 0.05

    public init(prompt: String) {
        line = PromptLine(prompt: prompt, columns: Terminal.columns, width: DisplayWidth.of)
    }

    /// Raw mode on and the prompt drawn; false if stdin is not a terminal.
    /// Keys come in through `feed`, resizes through `resized`.
    public func start() -> Bool {
        guard Terminal.enterRawMode() else { return false }
        // Bracketed paste on: a paste arrives marked, so its lines are not sent one by one as typed.
        lock.withLock { write(Terminal.bracketedPasteOn + line.render(editor)) }
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

    /// What is typed at the prompt and not yet submitted.
    public var draft: String { lock.withLock { editor.text } }

    public func bell() { lock.withLock { write("\u{07}") } }

    /// `/clear`, as Ctrl-L: the screen cleared, the prompt and the line drawn again at the top.
    public func clear() { lock.withLock { write(Self.clearScreen + line.render(editor)) } }

    /// A line of the paste under way, kept while the paste is within its limit.
    private func keepPasted(_ text: String) {
        pastedCount += 1
        if pastedCount <= Self.maximumPastedLines { pastedLines.append(text) } else { pastedLines = [] }
    }

    /// Bytes read from stdin (by whoever watches it): what the person
    /// submitted or asked for, in order.
    public func feed(_ bytes: [UInt8]) -> [TerminalInput] {
        keys(lock.withLock { decoder.feed(bytes) })
    }

    /// True while a lone Esc waits: call `escapeTimedOut` after
    /// `escapeTimeout` with no more bytes, and it is the Esc key.
    public var waitsForEscape: Bool { lock.withLock { decoder.hasPendingEscape } }

    public func escapeTimedOut() -> [TerminalInput] {
        keys(lock.withLock { decoder.flushEscape() })
    }

    /// The keys of one read, applied in order. The line is drawn once for
    /// the whole read, not once per key: a pasted line of thousands of
    /// characters redrew itself that many times (quadratic, seconds for 10 KB).
    private func keys(_ keys: [Key]) -> [TerminalInput] {
        var out: [TerminalInput] = []
        var dirty = false
        func draw() {
            guard dirty else { return }
            dirty = false
            lock.withLock { write(line.render(editor)) }
        }
        for key in keys {
            // Alt-1…9: go to that room, as /1…/9 would.
            if case let .alt(c) = key, let digit = c.wholeNumberValue, (1...9).contains(digit) {
                out.append(.line("/\(digit)"))
                continue
            }
            switch key {
            case .pasteStart:
                pasting = true
                pastedLines = []
                pastedCount = 0
                continue
            case .pasteEnd:
                guard pasting else { continue }
                pasting = false
                guard !pastedLines.isEmpty else { continue }
                // Several lines: the last, unended one goes with them; nothing is sent before the person agrees.
                let last = lock.withLock { editor.text }
                if !last.isEmpty { keepPasted(last) }
                lock.withLock { editor.set("") }
                dirty = true
                draw()
                if pastedCount > Self.maximumPastedLines {
                    out.append(.pasteTooLong(lines: pastedCount))
                } else {
                    out.append(pastedLines.count == 1 ? .line(pastedLines[0]) : .paste(pastedLines))
                }
                pastedLines = []
                pastedCount = 0
                continue
            case .enter where pasting:
                keepPasted(lock.withLock { editor.text })
                lock.withLock { editor.set("") }
                dirty = true
                continue
            case .control("l") where !pasting:
                // Ctrl-L, as in a shell: the screen cleared, the prompt and the line drawn again at the top.
                lock.withLock { write(Self.clearScreen) }
                dirty = true
                continue
            case .tab where pasting:
                if lock.withLock({ editor.insertTab() }) { dirty = true } else { bell() }
                continue
            default:
                break
            }
            let outcome = lock.withLock { editor.apply(key, completer: completer) }
            switch outcome {
            case .none: break
            case .redraw: dirty = true
            case .bell:
                draw()
                bell()
            case let .choices(options):
                draw()
                print(["   " + options.joined(separator: "  ")])
            case .quit:
                draw()
                out.append(.quit)
            case let .submit(text):
                dirty = true
                draw()
                out.append(.line(text))
            }
        }
        draw()
        return out
    }

    /// The terminal was resized: the prompt is drawn again for its width.
    public func resized() {
        lock.withLock {
            line.columns = max(8, Terminal.columns)
            write(line.render(editor))
        }
    }

    /// Clears the prompt row and gives the terminal back as it was.
    public func finish() {
        lock.withLock { write(line.clear()) }
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
