import Glibc

/// The terminal in raw mode, and getting it back. The settings found at start
/// are put back on every exit path: normal exit, Ctrl-C/Ctrl-D, SIGTERM,
/// SIGHUP, and a crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
/// SIGTRAP, where the handler restores and re-raises with the default action).
public enum Terminal {
    nonisolated(unsafe) private static var original = termios()
    nonisolated(unsafe) private static var saved = false

    public static var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// Columns of the terminal on stdout (80 if it cannot say).
    public static var columns: Int {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Raw input (no echo, no line buffering, Ctrl-C as a byte), output
    /// processing kept (so "\n" still starts a line).
    public static func enterRawMode() -> Bool {
        guard tcgetattr(0, &original) == 0 else { return false }
        saved = true
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
        raw.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(0, TCSAFLUSH, &raw) == 0 else { return false }
        for signal in [SIGTERM, SIGHUP, SIGINT, SIGQUIT] { installRestoring(signal, reraise: true) }
        for signal in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP] { installRestoring(signal, reraise: true) }
        return true
    }

    /// Puts the saved settings back (safe to call more than once, and from a signal handler).
    public static func restore() {
        guard saved else { return }
        _ = tcsetattr(0, TCSAFLUSH, &original)
        _ = Array(bracketedPasteOff.utf8).withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }

    /// xterm's bracketed paste mode (2004): pastes come between `ESC [200~` and `ESC [201~`.
    public static let bracketedPasteOn = "\u{1B}[?2004h"
    public static let bracketedPasteOff = "\u{1B}[?2004l"

    /// The actions that were installed before ours, by signal number (a
    /// fixed table: a signal handler may not allocate or take locks).
    nonisolated(unsafe) private static let previous: UnsafeMutablePointer<sigaction> = {
        let table = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
        table.initialize(repeating: sigaction(), count: 65)
        return table
    }()

    private static func installRestoring(_ number: Int32, reraise: Bool) {
        guard number > 0, number < 65 else { return }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            Terminal.restoreFromSignal()
            // Hand the signal to whoever had it before (the default action, or
            // the Swift runtime's crash report): put that back and raise again;
            // it is delivered as soon as this handler returns.
            if signal > 0, signal < 65 { sigaction(signal, Terminal.previous + Int(signal), nil) }
            raise(signal)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(number, &action, previous + Int(number))
    }

    /// Only async-signal-safe calls: tcsetattr and write.
    static func restoreFromSignal() {
        if saved { _ = tcsetattr(0, TCSANOW, &original) }
        let reset: [UInt8] = Array("\u{1B}[?2004l\r\u{1B}[K\u{1B}[0m\n".utf8)
        _ = reset.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }

}
