import Foundation
import Glibc
@testable import PeerNode
import Reactor
import Synchronization
import TestSupport
import Testing

/// `Output` on a real pipe whose reader has stopped: the caller never
/// waits, lines past `maximumUnwrittenBytes` are dropped and counted, the
/// count is said when the reader is back, and a closed pipe is reported.
@Suite("Output: a slow or gone reader of stdout")
struct OutputTests {
    /// A pipe whose buffer is already full, so the writer's first write waits.
    /// Close-on-exec from the start (`Child.closeOnExecPipe`): a child another test spawns
    /// meanwhile would hold the write end open, and the reader here would
    /// wait for an end of file that never came (this test failed so under
    /// the full parallel suite).
    static func fullPipe() throws -> (read: Int32, write: Int32) {
        let (readEnd, writeEnd) = try Child.closeOnExecPipe()
        let fds = [readEnd, writeEnd]
        let flags = fcntl(fds[1], F_GETFL)
        _ = fcntl(fds[1], F_SETFL, flags | O_NONBLOCK)
        let chunk = [UInt8](repeating: 0x2e, count: 4096)
        while chunk.withUnsafeBytes({ write(fds[1], $0.baseAddress, $0.count) }) > 0 {}
        _ = fcntl(fds[1], F_SETFL, flags)
        return (fds[0], fds[1])
    }

    /// Reads `fd` to its end on a thread of its own (a test's blocking
    /// waits would hold up a pooled task); the function returned waits until
    /// then, at most until `deadline`, and gives what was read (nil: not done).
    static func readInBackground(_ fd: Int32) -> (DispatchTime) -> [UInt8]? {
        let read = Mutex<[UInt8]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let bytes = Self.readAll(fd)
            read.withLock { $0 = bytes }
            done.signal()
        }
        return { deadline in done.wait(timeout: deadline) == .success ? read.withLock { $0 } : nil }
    }

    /// Everything readable until the writer closes (end of file).
    static func readAll(_ fd: Int32) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return all }
            all += buffer[..<n]
        }
    }

    @Test("with room in the pipe, lines up to directWriteLimit bytes are written by the caller (readable as it returns, no writer thread); one byte past, or a full pipe, goes through the writer, in order")
    func directWrite() throws {
        let made = try Child.closeOnExecPipe()
        let fds = [made.read, made.write]
        let readFlags = fcntl(fds[0], F_GETFL)
        _ = fcntl(fds[0], F_SETFL, readFlags | O_NONBLOCK)
        let out = Output(descriptor: fds[1])
        // Exactly the limit with its newline.
        let atLimit = String(repeating: "x", count: Output.directWriteLimit - 1)
        out.lines([atLimit])
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        #expect(n == Output.directWriteLimit, "written before lines() returned")
        #expect(!out.writerStarted)
        // One byte past the limit: the writer thread takes it.
        out.lines([atLimit + "y"])
        #expect(out.writerStarted)
        #expect(out.waitUntilUnwritten(atMost: 0))
        let m = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        #expect(m == Output.directWriteLimit + 1 && buffer[m - 2] == UInt8(ascii: "y"))
        out.finish()
        close(fds[0]); close(fds[1])

        // A full pipe: nothing goes directly, and what is queued comes out first, in order.
        let (readEnd, writeEnd) = try Self.fullPipe()
        let full = Output(descriptor: writeEnd)
        full.lines(["first"])
        #expect(full.writerStarted)
        let reader = Self.readInBackground(readEnd)
        full.lines(["second"])
        full.finish()
        close(writeEnd)
        let text = String(decoding: (reader(.distantFuture) ?? []).filter { $0 != 0x2e }, as: UTF8.self)
        #expect(text == "first\nsecond\n")
        close(readEnd)
    }

    @Test("a line written by its caller wakes no thread: once the writer has started and drained, 200 live lines leave it asleep (each woke it for nothing before)")
    func directWriteWakesNoThread() throws {
        let made = try Child.closeOnExecPipe()
        let out = Output(descriptor: made.write)
        let reader = Self.readInBackground(made.read)
        // Past the direct limit: the writer thread starts and writes it.
        out.lines([String(repeating: "x", count: Output.directWriteLimit)])
        #expect(out.writerStarted)
        #expect(out.waitUntilUnwritten(atMost: 0))
        let before = out.writerIdleWakes
        for i in 0..<200 { out.lines(["{\"type\":\"message\",\"n\":\(i)}"]) }
        #expect(out.writerIdleWakes == before, "woken \(out.writerIdleWakes - before) times with nothing to write")
        out.finish()
        close(made.write)
        let text = String(decoding: reader(.distantFuture) ?? [], as: UTF8.self)
        #expect(text.split(separator: "\n").count == 201)
        close(made.read)
    }

    @Test("a reader that stopped: exactly maximumUnwrittenBytes is kept, one line past it dropped and counted; the count comes once it drained to half, then the lines after it")
    func droppedAtTheLimit() throws {
        let (readEnd, writeEnd) = try Self.fullPipe()
        let out = Output(descriptor: writeEnd)
        out.droppedLine = { "dropped \($0)" }
        // Lines of 1,024 bytes with their newline, up to the limit exactly.
        let line = String(repeating: "a", count: 1023)
        let count = Output.maximumUnwrittenBytes / 1024
        let started = monotonicNow()
        for _ in 0..<count { out.lines([line]) }
        #expect(out.droppedSoFar == 0)
        out.lines(["b"])
        out.lines(["c", "d"])
        #expect(out.droppedSoFar == 3)
        #expect(monotonicNow() - started < 5, "the caller waited for the reader")
        // The reader comes back and takes everything; a line after that brings the count first.
        // On a thread of its own: the waits below block theirs (a pooled task could wait behind them).
        let reader = Self.readInBackground(readEnd)
        #expect(out.waitUntilUnwritten(atMost: Output.maximumUnwrittenBytes / 2))
        out.lines(["after"])
        out.finish()
        close(writeEnd)
        let bytes = reader(.now() + 30)
        #expect(bytes != nil, "the reader did not reach the end")
        let text = String(decoding: bytes ?? [], as: UTF8.self).drop(while: { $0 == "." })
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == count + 3)
        #expect(lines.prefix(count).allSatisfy { $0 == line })
        #expect(Array(lines.suffix(3)) == ["dropped 3", "after", ""])
        close(readEnd)
    }

    @Test("a reader that closed the pipe: reported once, later lines dropped without waiting, finish returns")
    func closed() throws {
        signal(SIGPIPE, SIG_IGN)  // as the node does: EPIPE instead of death
        let made = try Child.closeOnExecPipe()
        let fds = [made.read, made.write]
        close(fds[0])
        let out = Output(descriptor: fds[1])
        let reports = Mutex(0)
        let reported = DispatchSemaphore(value: 0)
        out.onClosed = { error in
            #expect(error.errno == EPIPE)
            reports.withLock { $0 += 1 }
            reported.signal()
        }
        out.lines(["one"])
        #expect(reported.wait(timeout: .now() + 10) == .success, "the closed pipe was not reported")
        out.lines(["two"])
        out.finish()
        #expect(reports.withLock { $0 } == 1)
        close(fds[1])
    }
}
