@_exported import Seeded
import Crypto
import Foundation

/// A fresh directory under the system temporary directory, removed when the
/// value is released (GRDB's habit: each test gets its own).
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(_ label: String = #function) {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        let template = NSTemporaryDirectory() + "peernode-test-\(safe.prefix(40))-XXXXXX"
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? template
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Hex literal for test vectors; a malformed literal is a bug in the test
/// itself, so it yields an empty array and the test's assertion fails.
public func hex(_ text: String) -> [UInt8] {
    (try? Hex.decode(text.filter { !$0.isWhitespace })) ?? []
}

/// Permission bits of a file (st_mode & 0o7777), or nil when it does not exist.
public func fileMode(_ path: String) -> UInt32? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return UInt32(info.st_mode & 0o7777)
}

public func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
    unlink(path)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { return }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    fchmod(fd, mode)
    close(fd)
}

public func readFile(_ path: String) -> [UInt8] {
    (FileManager.default.contents(atPath: path)).map { Array($0) } ?? []
}

import Synchronization

/// A lock around a value, shareable between threads and closures
/// (`Mutex` itself cannot be copied into a closure).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    public var value: Value { mutex.withLock { $0 } }
}

/// A child process spoken to in lines (stdin/stdout, stderr with stdout),
/// for peers written elsewhere. Killed on release.
public final class LineProcess: @unchecked Sendable {
    public let child: Child
    private let lines: Locked<[String]>
    private var taken = 0

    public init(_ executable: String, _ arguments: [String]) throws {
        let lines = Locked<[String]>([])
        self.lines = lines
        child = try Child(executable, arguments, stdin: .pipe, stdout: .pipe, stderr: .stdout,
                          onLine: { line in lines.withLock { $0.append(line) } })
    }

    public func send(_ line: String) { child.send(line + "\n") }

    /// The next line, or nil at end of output (or after `timeout` seconds).
    public func readLine(timeout: Double = 30) async -> String? {
        // The reader counts a pipe ended after its last line is in.
        let next = await eventuallyValue(timeout, interval: .milliseconds(2)) { () -> String?? in
            let (line, ended) = lines.withLock { ($0.count > taken ? $0[taken] : nil, child.outputEnded) }
            if let line { return .some(line) }
            return ended && lines.value.count <= taken ? .some(nil) : nil
        }
        guard let line = next ?? nil else { return nil }
        taken += 1
        return line
    }

    /// Everything left, after closing our side.
    public func rest() async -> String {
        child.closeInput()
        await child.exited()
        let left = lines.value.dropFirst(taken)
        taken += left.count
        return left.joined(separator: "\n")
    }
}

/// What a finished child process printed, and how it ended.
public struct Finished: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs a program to its end (a `Child`), collecting its output,
/// off the test pool. `input` is written to its stdin (then closed), or
/// `inputFile` is its stdin; `combined`: stderr goes into `stdout` too.
/// Every test that runs a program to its end comes through here.
public func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                     input: String = "", inputFile: String? = nil, combined: Bool = false) async throws -> Finished {
    try await offThePool {
        try runToEndBlocking(executable, arguments, environment: environment, input: input, inputFile: inputFile, combined: combined)
    }
}

/// `runToEnd` on the calling thread: only for a quick command where no
/// `await` can be (a `deinit`, a `defer` that tears a lab down).
public func runToEndBlocking(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             input: String = "", inputFile: String? = nil, combined: Bool = false) throws -> Finished {
    let child = try Child(executable, arguments, environment: environment, stdin: inputFile.map { .file($0) } ?? .pipe,
                          stdout: .pipe, stderr: combined ? .stdout : .pipe)
    if inputFile == nil {
        child.send(input)
        child.closeInput()
    }
    let status = child.exitedBlocking()
    return Finished(status: status, stdout: child.output, stderr: child.errors)
}

/// Runs blocking work (reading a child's output to its end, waiting for
/// it to exit) on a thread of its own. Tests run on Swift's cooperative pool,
/// one thread per core: a test that blocks one of those threads for the
/// seconds a child takes stops every other test running beside it, whose
/// timeouts then expire (a parallel run failed that way).
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// The seeded generator tests drive simulations with (`Seeded.SplitMix`).
public typealias SeededRandom = SplitMix

/// A line handler for `Child(onLine:)` that appends each line that is a JSON
/// object to `events`, every value as text (enough for tests, and Sendable).
/// `arrivals`, when given, gets each event's arrival time (monotonic
/// seconds) at the same index: for a failure message that must tell a
/// node that said nothing from one whose lines came late.
public func collectingJSON(into events: Locked<[[String: String]]>, arrivals: Locked<[Double]>? = nil) -> @Sendable (String) -> Void {
    { line in
        if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
            events.withLock {
                $0.append(object.mapValues { "\($0)" })
                arrivals?.withLock { $0.append(ProcessInfo.processInfo.systemUptime) }
            }
        }
    }
}
