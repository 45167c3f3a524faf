import Foundation
import Glibc
import Synchronization

/// A child process for tests, started with `posix_spawn`: the one process
/// harness every test uses.
///
/// Foundation's `Process` is not used: under a parallel test run its `run()`
/// crashed (a bad read inside it while other threads spawned), and its
/// `FileHandle.availableData` stops the whole test process with a fatal error
/// when a read is interrupted by a signal (EINTR). Here:
/// - every pipe is opened close-on-exec, so a child never inherits another
///   test's pipe (which would keep that test's child from seeing end of input);
/// - output is read on a thread of its own, EINTR retried, and kept
///   (`output`, `errors`), with an optional callback per line;
/// - input is written on a thread of its own, so `send` never blocks a test
///   (tests run on a pool of one thread per core);
/// - waiting for the exit polls `waitpid(WNOHANG)`, so no thread blocks in it.
public final class Child: @unchecked Sendable {
    public enum Input: Sendable {
        /// `send` and `closeInput` write to it.
        case pipe
        case null
        case file(String)
    }

    public enum Output: Sendable {
        /// Collected (`output` or `errors`).
        case pipe
        case null
        /// stderr only: into stdout's pipe (or /dev/null when stdout is null).
        case stdout
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let call: String
        public let code: Int32
        public var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    public let pid: pid_t
    private let collectedOutput: Locked<[UInt8]>
    private let collectedErrors: Locked<[UInt8]>
    private let readersLeft: Locked<Int>
    private let writer: InputWriter?
    private let status = Mutex<Int32?>(nil)

    /// `onLine`: called on a reading thread for each line of every output
    /// that is a pipe, without its newline.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                stdin: Input = .null, stdout: Output = .pipe, stderr: Output = .pipe,
                onLine: (@Sendable (String) -> Void)? = nil) throws {
        _ = Self.ignoreBrokenPipes
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }

        var inputEnd: Int32 = -1
        switch stdin {
        case .pipe:
            let (r, w) = try Self.pipe()
            childEnds.append(r)
            inputEnd = w
            posix_spawn_file_actions_adddup2(&actions, r, 0)
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case let .file(path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        }
        let out = Locked<[UInt8]>([]), err = Locked<[UInt8]>([])
        var readEnds: [(fd: Int32, into: Locked<[UInt8]>)] = []
        func route(_ output: Output, to target: Int32, into: Locked<[UInt8]>) throws {
            switch output {
            case .pipe:
                let (r, w) = try Self.pipe()
                childEnds.append(w)
                readEnds.append((r, into))
                posix_spawn_file_actions_adddup2(&actions, w, target)
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .stdout: posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        do {
            try route(stdout, to: 1, into: out)
            try route(stderr, to: 2, into: err)
        } catch {
            if inputEnd >= 0 { close(inputEnd) }
            for end in readEnds { close(end.fd) }
            throw error
        }

        // The child starts with no signal blocked and SIGPIPE at its default,
        // whatever the test process did with them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in env { free(e) } }
        var child: pid_t = 0
        let result = spawnLock.withLock { _ in posix_spawnp(&child, executable, &actions, &attributes, argv, env) }
        guard result == 0 else {
            if inputEnd >= 0 { close(inputEnd) }
            for end in readEnds { close(end.fd) }
            throw SpawnError(call: "posix_spawn \(executable)", code: result)
        }
        pid = child
        collectedOutput = out
        collectedErrors = err
        writer = inputEnd >= 0 ? InputWriter(fd: inputEnd) : nil
        readersLeft = Locked(readEnds.count)
        for end in readEnds {
            let left = readersLeft
            Thread.detachNewThread {
                Self.drain(end.fd, into: end.into, onLine: onLine)
                left.withLock { $0 -= 1 }
            }
        }
    }

    deinit {
        if isRunning { Glibc.kill(pid, SIGKILL) }
        writer?.close()
        // Reaped, so no zombie is left behind; a killed child goes at once.
        let deadline = Deadline(5)
        while reap() == nil, !deadline.passed { usleep(1_000) }
    }

    // MARK: input

    /// Queued for the child's stdin; written in order on the writer's thread.
    public func send(_ text: String) { writer?.write(Array(text.utf8)) }

    /// Closes stdin once everything sent so far is written.
    public func closeInput() { writer?.close() }

    // MARK: output

    public var output: String { String(decoding: collectedOutput.value, as: UTF8.self) }
    public var errors: String { String(decoding: collectedErrors.value, as: UTF8.self) }
    /// Every output pipe has reached its end (the child, and anything it
    /// started that holds them, has closed them).
    public var outputEnded: Bool { readersLeft.value == 0 }

    // MARK: exit

    /// Exit status once it has ended: the exit code, or for a child killed
    /// by a signal the signal's number (as Foundation's `terminationStatus`).
    public var exitStatus: Int32? { reap() }
    public var isRunning: Bool { reap() == nil }

    public func signal(_ number: Int32) { if isRunning { Glibc.kill(pid, number) } }

    /// Seconds `exited()` waits before it takes the child for hung: no test
    /// waits longer for a process it ended or that ends by itself, so a
    /// hang costs a run this much, not the CI's whole limit.
    public static let hangDeadline = 300.0

    /// Waits for the exit, then for the output to end (at most `outputGrace`
    /// seconds more: a grandchild may hold the pipe); returns the status.
    /// A child still running after `hangDeadline` is said on stderr (its
    /// threads' stacks, its last output), killed, and its status returned.
    @discardableResult
    public func exited(outputGrace: Double = 5) async -> Int32 {
        if let status = await exited(within: Self.hangDeadline, outputGrace: outputGrace) { return status }
        let report = await hangReport("did not end within \(Int(Self.hangDeadline)) s")
        FileHandle.standardError.write(Data(report.utf8))
        Glibc.kill(pid, SIGKILL)
        return await exited(within: 30, outputGrace: outputGrace) ?? SIGKILL
    }

    /// The status once the child has ended (and its output, within
    /// `outputGrace` more), or nil if it is still running after `seconds`.
    public func exited(within seconds: Double, outputGrace: Double = 5) async -> Int32? {
        let limit = Deadline(seconds)
        while true {
            if let status = reap() {
                let deadline = Deadline(outputGrace)
                while !outputEnded, !deadline.passed { try? await Task.sleep(for: .milliseconds(5)) }
                return status
            }
            if limit.passed { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// What a hung child was doing: `what`, its command line, every thread's
    /// stack (from gdb, which `make test` installs; said if it is missing)
    /// and the end of its output.
    public func hangReport(_ what: String) async -> String {
        let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?
            .replacingOccurrences(of: "\0", with: " ") ?? "?"
        return """
            ==== child \(pid) \(what): \(command)
            \(await Self.stacks(of: pid))
            ---- its last output:
            \(String(output.suffix(4_000)))\(String(errors.suffix(2_000)))
            ====

            """
    }

    /// Every thread's stack of a running process, by gdb (found on PATH by
    /// `posix_spawnp`) attached for at most a minute. The toolchain's lldb
    /// does not start here (it wants a libpython the machine lacks).
    public static func stacks(of pid: pid_t) async -> String {
        guard let gdb = try? Child("gdb", ["-batch", "-p", "\(pid)", "-ex", "thread apply all bt 40"], stderr: .stdout) else {
            return "---- no stacks: gdb is not on PATH"
        }
        if await gdb.exited(within: 60) == nil {
            gdb.signal(SIGKILL)
            _ = await gdb.exited(within: 5)
        }
        return "---- stacks (gdb):\n" + gdb.output
    }

    /// `exited` for a thread that may block (off the test pool, or a deinit).
    @discardableResult
    public func exitedBlocking(outputGrace: Double = 5) -> Int32 {
        while true {
            if let status = reap() {
                let deadline = Deadline(outputGrace)
                while !outputEnded, !deadline.passed { usleep(2_000) }
                return status
            }
            usleep(2_000)
        }
    }

    private func reap() -> Int32? {
        status.withLock { known in
            if let known { return known }
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            guard r == pid else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Glibc's macros do not bring to Swift.
            let signal = raw & 0x7F
            known = signal == 0 ? (raw >> 8) & 0xFF : signal
            return known
        }
    }

    // MARK: plumbing

    private static let ignoreBrokenPipes: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// A pipe both of whose ends are close-on-exec from the start, so no
    /// child any test spawns holds one open (a reader would then never see
    /// the end of file).
    public static func closeOnExecPipe() throws -> (read: Int32, write: Int32) { try pipe() }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        // pipe2 is not in Swift's Glibc module; the spawn lock keeps another
        // thread from spawning between pipe and the close-on-exec flags.
        let made = spawnLock.withLock { _ -> Bool in
            guard Glibc.pipe(&fds) == 0 else { return false }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            return true
        }
        guard made else { throw SpawnError(call: "pipe", code: errno) }
        return (fds[0], fds[1])
    }

    /// Reads `fd` to its end (EINTR retried), keeping everything and calling
    /// `onLine` per line; closes it.
    private static func drain(_ fd: Int32, into kept: Locked<[UInt8]>, onLine: (@Sendable (String) -> Void)?) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var partial: [UInt8] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            let chunk = buffer[0..<n]
            kept.withLock { $0.append(contentsOf: chunk) }
            guard let onLine else { continue }
            partial.append(contentsOf: chunk)
            while let nl = partial.firstIndex(of: 0x0A) {
                onLine(String(decoding: partial[..<nl], as: UTF8.self))
                partial.removeSubrange(...nl)
            }
        }
        if let onLine, !partial.isEmpty { onLine(String(decoding: partial, as: UTF8.self)) }
        close(fd)
    }
}

/// Held while a pipe is made and while a child is spawned, so no child
/// inherits a pipe before it is marked close-on-exec.
private let spawnLock = Mutex(())

/// Writes a child's stdin on a thread of its own, in the order sent.
private final class InputWriter: @unchecked Sendable {
    private struct State {
        var pending: [[UInt8]] = []
        var closing = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// The thread holds the writer until `close` has been called and done.
    init(fd: Int32) {
        Thread.detachNewThread { [self] in run(fd) }
    }

    func write(_ bytes: [UInt8]) {
        state.withLock { $0.pending.append(bytes) }
        wake.signal()
    }

    func close() {
        state.withLock { $0.closing = true }
        wake.signal()
    }

    private func run(_ fd: Int32) {
        var broken = false
        while true {
            wake.wait()
            let (chunks, closing) = state.withLock { s -> ([[UInt8]], Bool) in
                defer { s.pending.removeAll() }
                return (s.pending, s.closing)
            }
            for chunk in chunks where !broken {
                var offset = 0
                while offset < chunk.count {
                    let n = chunk[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    // The child has gone (EPIPE): what is left is dropped.
                    guard n > 0 else { broken = true; break }
                    offset += n
                }
            }
            if closing {
                Glibc.close(fd)
                return
            }
        }
    }
}
