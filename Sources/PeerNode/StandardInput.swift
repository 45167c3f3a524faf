import Gossip
import Reactor
import TermUI

/// Standard input on the node's loop: keys through the terminal's line
/// editor when a person types, else lines from a pipe or a file. Each line
/// is handled as a command; end of input, or `/quit`, stops the node and
/// then calls `finished`. Lives on the loop only (hence the unchecked
/// `Sendable`).
final class StandardInput: @unchecked Sendable {
    private let network: NetworkNode
    private let terminal: TerminalSession?
    private let finished: @Sendable () -> Void
    private var reader: StreamReader?
    private var lines = InputLines()
    private var escapeTimer: TimerID?
    private var quitting = false

    init(network: NetworkNode, terminal: TerminalSession?, finished: @escaping @Sendable () -> Void) {
        self.network = network
        self.terminal = terminal
        self.finished = finished
    }

    /// On the loop.
    func start() {
        let reader = StreamReader(fd: 0, loop: network.loop, onBytes: { [self] in received($0) }, onEnd: { [self] error in
            if let error { network.log.warning("reading standard input failed: \(error)") }
            if let terminal { take(terminal.escapeTimedOut()) } else { handle(lines.end()) }
            quit()
        })
        self.reader = reader
        reader.start()
    }

    private func received(_ bytes: [UInt8]) {
        guard let terminal else { return handle(lines.add(bytes)) }
        if let escapeTimer { network.loop.cancel(escapeTimer) }
        escapeTimer = nil
        take(terminal.feed(bytes))
        network.typed(draft: terminal.draft)
        // A lone Esc is the Esc key once nothing follows it for a moment.
        if terminal.waitsForEscape {
            escapeTimer = network.loop.after(TerminalSession.escapeTimeout) { [self] in
                escapeTimer = nil
                take(terminal.escapeTimedOut())
            }
        }
    }

    private func take(_ inputs: [TerminalInput]) {
        for input in inputs {
            switch input {
            case let .line(text): handle([.line(text)])
            case .quit: quit()
            case let .paste(lines):
                network.pasted(lines)
                terminal?.setPrompt(network.prompt())
            case let .pasteTooLong(count):
                network.emit(.chatLines(["-- a paste of \(count) lines is more than \(TerminalSession.maximumPastedLines): nothing was sent; to share that much, save it to a file and /send it"]))
            }
        }
    }

    /// Lines typed or read from a pipe or a file, each in turn; a line past the limit is said where it was.
    private func handle(_ items: [InputLines.Item]) {
        for item in items where !quitting {
            switch item {
            case let .line(line):
                if !network.handleLine(line) { return quit() }
            case .overlong:
                network.emit(.failed("a line of more than \(InputLines.maximumLineBytes) bytes on standard input was dropped (a message holds at most \(Envelope.maximumPlaintextBody))"))
            }
        }
        guard let terminal else { return }
        // Drawn from what the lines did: after a post's row where it waits for the loop's wait (Up offers it).
        let redraw = { [network] in
            terminal.setPrompt(network.prompt())
            terminal.setCompleter(network.completer())
        }
        if network.loop.hasWorkAfterWaiting { network.loop.afterWaiting(redraw) } else { redraw() }
    }

    /// Stops reading and stops the node (end of input, `/quit`, stdout closed). On the loop.
    func quit() {
        guard !quitting else { return }
        quitting = true
        reader?.stop()
        network.stop(then: finished)
    }
}

/// Bytes from a pipe or file split into lines: "\n" or "\r\n" ends one, and
/// a last line without either counts at the end of input. A line of more
/// than `maximumLineBytes` is dropped whole and said (`overlong`), and the
/// lines after it are read as usual. Each byte is looked at once.
struct InputLines {
    /// The most bytes a line from standard input holds before its "\n" (the
    /// "\r" of a "\r\n" among them): far past the longest message a line
    /// can post (`Envelope.maximumPlaintextBody`, 65,536 bytes, with a
    /// command and an id before it). A file with no line ends piped in by
    /// mistake (a binary, `/dev/zero`) was held whole in memory and searched
    /// again for a line end at every read: memory and a core without end.
    static let maximumLineBytes = 1 << 20

    enum Item: Equatable {
        case line(String)
        /// A line past `maximumLineBytes`, dropped: said as soon as it passes the limit, not at its end.
        case overlong
    }

    private var pending: [UInt8] = []
    /// Bytes held for a line not yet ended (at most `maximumLineBytes`).
    var heldBytes: Int { pending.count }
    /// Inside a line past the limit: its bytes are dropped up to its end.
    private var dropping = false

    mutating func add(_ bytes: [UInt8]) -> [Item] {
        var out: [Item] = []
        var start = 0
        while let newline = bytes[start...].firstIndex(of: 0x0A) {
            if dropping {
                dropping = false
            } else if pending.count + (newline - start) > Self.maximumLineBytes {
                out.append(.overlong)
            } else {
                pending += bytes[start..<newline]
                out.append(.line(Self.text(pending[...])))
            }
            pending = []
            start = newline + 1
        }
        guard !dropping else { return out }
        if pending.count + (bytes.count - start) > Self.maximumLineBytes {
            out.append(.overlong)
            pending = []
            dropping = true
        } else {
            pending += bytes[start...]
        }
        return out
    }

    mutating func end() -> [Item] {
        defer {
            pending = []
            dropping = false
        }
        return dropping || pending.isEmpty ? [] : [.line(Self.text(pending[...]))]
    }

    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.last == 0x0D ? bytes.dropLast() : bytes, as: UTF8.self)
    }
}
