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
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
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

/// A child process spoken to in lines (stdin/stdout), for peers written
/// elsewhere. Killed on release.
public final class LineProcess: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    public init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try launch(process)
    }

    public func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The next line, or nil at end of output.
    public func readLine() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return buffer.isEmpty ? nil : String(decoding: buffer, as: UTF8.self) }
            buffer.append(chunk)
        }
    }

    /// Everything left, after closing our side.
    public func rest() -> String {
        try? input.fileHandleForWriting.close()
        var lines: [String] = []
        while let l = readLine() { lines.append(l) }
        return lines.joined(separator: "\n")
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// Starts a child process. Every test starts its children through here:
/// Foundation's `Process.run()` on Linux is not safe to call from several
/// threads at once (a parallel test run crashed inside it), so starts are
/// serialised; the children themselves still run in parallel.
public func launch(_ process: Process) throws {
    processLaunchLock.lock()
    defer { processLaunchLock.unlock() }
    try process.run()
}

private let processLaunchLock = NSLock()

/// What a finished child process printed, and how it ended.
public struct Finished: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs a program to its end (through `launch`), collecting its output.
public func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Finished {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    if let environment { p.environment = environment }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try launch(p)
    // Both pipes are drained before waiting, so a chatty child cannot block on a full pipe.
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return Finished(status: p.terminationStatus, stdout: output, stderr: errors)
}

/// SplitMix64: small, seedable, good enough to drive a simulation.
public struct SeededRandom: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Reads `handle` on a thread of its own until it closes, appending each line
/// that is a JSON object to `events`, every value as text (enough for tests,
/// and Sendable).
public func collectJSONLines(from handle: FileHandle, into events: Locked<[[String: String]]>) {
    Thread.detachNewThread {
        var buffer = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let nl = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<nl]
                buffer.removeSubrange(buffer.startIndex...nl)
                if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
                    events.withLock { $0.append(object.mapValues { "\($0)" }) }
                }
            }
        }
    }
}
