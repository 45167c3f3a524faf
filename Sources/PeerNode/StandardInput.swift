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
            case let .line(text): handle([text])
            case .quit: quit()
            case let .paste(lines):
                network.pasted(lines)
                terminal?.setPrompt(network.prompt())
            }
        }
    }

    private func handle(_ lines: [String]) {
        for line in lines where !quitting {
            if !network.handleLine(line) { return quit() }
        }
        terminal?.setPrompt(network.prompt())
        terminal?.setCompleter(network.completer())
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
/// a last line without either counts at the end of input.
struct InputLines {
    private var pending: [UInt8] = []

    mutating func add(_ bytes: [UInt8]) -> [String] {
        pending += bytes
        var out: [String] = []
        var start = 0
        while let newline = pending[start...].firstIndex(of: 0x0A) {
            out.append(Self.text(pending[start..<newline]))
            start = newline + 1
        }
        pending.removeFirst(start)
        return out
    }

    mutating func end() -> [String] {
        defer { pending = [] }
        return pending.isEmpty ? [] : [Self.text(pending[...])]
    }

    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.last == 0x0D ? bytes.dropLast() : bytes, as: UTF8.self)
    }
}
