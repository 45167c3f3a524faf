import Foundation
import Reactor

/// Lines for stdout (the `--json` events, or plain lines when stdout is not
/// a terminal), or for a sink (the terminal session, which prints them above
/// the prompt).
///
/// The node's loop does not wait on stdout's reader: lines go into a buffer
/// that a thread of its own writes. A reader that falls behind by more than
/// `maximumUnwrittenBytes` and does not make room within `maximumWait`
/// loses lines, not the node: they are dropped and counted until what is
/// unwritten has drained to half, and then one line says how many were lost
/// (`droppedLine`; docs/DECISIONS.md, "A slow reader of stdout"). A reader that closes stdout stops the node (`onClosed`), as
/// the end of standard input does.
final class Output: @unchecked Sendable {
    /// Bytes given to stdout and not yet taken by its reader, at most.
    static let maximumUnwrittenBytes = 8 << 20
    /// How long a caller waits for the reader to make room before lines are
    /// dropped: a reader that keeps up with bursts loses nothing, one that is
    /// stuck costs the node this much once per episode.
    static let maximumWait = 0.1
    /// At the end, how long `finish()` waits for a reader that takes nothing.
    static let finishPatience = 10.0
    /// The writer's largest single write.
    static let writeChunk = 64 << 10
    /// Lines up to this many bytes, with nothing waiting before them and
    /// room in stdout, are written by the caller at once: waking the writer
    /// thread cost a live message a thread hand-off (about 50-90 µs here).
    /// A pipe takes this much in one write without blocking when poll(2)
    /// says it has room (PIPE_BUF).
    static let directWriteLimit = 4_096

    private let condition = NSCondition()
    private let descriptor: Int32
    /// Lines not yet taken by the writer.
    private var queued: [UInt8] = []
    /// Bytes the writer has taken and not yet written.
    private var inFlight = 0
    /// Bytes written so far (progress, for `finish`).
    private var written = 0
    private var dropping = false
    private var dropped = 0
    private var closed = false
    private(set) var writerStarted = false
    /// Times the writer thread was woken with nothing to write (for tests:
    /// a live line written by its caller must not wake it).
    private var idleWakes = 0
    var writerIdleWakes: Int { condition.withLock { idleWakes } }

    /// Where lines go instead of stdout. Set once, before any output.
    var sink: (@Sendable ([String]) -> Void)?
    /// The line that says how many lines a slow reader lost.
    var droppedLine: @Sendable (Int) -> String = { "-- \($0) lines were not shown: stdout's reader fell behind" }
    /// Called once, on the writer's thread, when stdout's reader has gone.
    var onClosed: (@Sendable (SystemError) -> Void)?

    init(descriptor: Int32 = 1) {
        self.descriptor = descriptor
    }

    /// Several lines, in order. Past the limit, the caller waits for the
    /// reader at most `maximumWait`; a reader that did not make room by then
    /// loses lines (counted) until it has taken what is unwritten down to half.
    func lines(_ texts: [String]) {
        guard !texts.isEmpty else { return }
        if let sink { return sink(texts) }
        condition.lock()
        defer { condition.unlock() }
        // Each line's bytes and its newline straight into what is queued: a
        // catch-up writes tens of thousands of lines a second.
        var accepted: [UInt8] = []
        accepted.reserveCapacity(texts.reduce(0) { $0 + $1.utf8.count + 1 })
        for text in texts where !closed {
            let size = text.utf8.count + 1
            if dropping, unwritten + accepted.count <= Self.maximumUnwrittenBytes / 2 { reportDropped() }
            if !dropping, unwritten + accepted.count + size > Self.maximumUnwrittenBytes {
                queue(accepted)
                accepted = []
                let deadline = Date(timeIntervalSinceNow: Self.maximumWait)
                while !closed, unwritten + size > Self.maximumUnwrittenBytes, condition.wait(until: deadline) {}
                if unwritten + size > Self.maximumUnwrittenBytes { dropping = true }
            }
            if dropping || closed {
                dropped += 1
            } else {
                accepted.append(contentsOf: text.utf8)
                accepted.append(0x0A)
            }
        }
        if !closed { queue(accepted) }
    }

    /// Lines dropped and not yet reported.
    var droppedSoFar: Int { condition.withLock { dropped } }

    /// Waits until everything is written, the reader has gone, or it took
    /// nothing for `finishPatience` seconds; lines given later are dropped.
    func finish() {
        condition.lock()
        defer { condition.unlock() }
        if dropping { reportDropped() }
        waitForWriter(untilUnwrittenAtMost: 0)
        closed = true
        condition.broadcast()
    }

    /// Waits until at most `bytes` are unwritten, the reader has gone, or it
    /// took nothing for `finishPatience` seconds. Returns whether it got there.
    @discardableResult
    func waitUntilUnwritten(atMost bytes: Int) -> Bool {
        condition.withLock { waitForWriter(untilUnwrittenAtMost: bytes) }
    }

    /// Under the lock: woken by each chunk the writer writes.
    @discardableResult
    private func waitForWriter(untilUnwrittenAtMost bytes: Int) -> Bool {
        while !closed, unwritten > bytes {
            let before = written
            if !condition.wait(until: Date(timeIntervalSinceNow: Self.finishPatience)), written == before { break }
        }
        return unwritten <= bytes
    }

    /// Under the lock.
    private var unwritten: Int { queued.count + inFlight }

    /// Under the lock.
    private func reportDropped() {
        dropping = false
        if dropped > 0 { queue(Array((droppedLine(dropped) + "\n").utf8)) }
        dropped = 0
    }

    /// Under the lock.
    private func queue(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if queued.isEmpty, inFlight == 0, bytes.count <= Self.directWriteLimit {
            let done = writeNowIfRoom(bytes)
            written += done
            // Nothing to tell anyone: with nothing unwritten before this write, no caller waits on it,
            // and a broadcast would wake the writer thread for nothing (a futex wake and a thread run
            // on the other core at each live line, just when stdout's reader is to run there).
            if done == bytes.count { return }
            queued += bytes[done...]
        } else {
            queued += bytes
        }
        if !writerStarted {
            writerStarted = true
            let thread = Thread { [self] in writeUntilClosed() }
            thread.name = "peernode-stdout"
            thread.start()
        }
        condition.broadcast()
    }

    /// Under the lock, with nothing queued or in flight: one write(2) when
    /// poll(2) says stdout has room. Returns the bytes written (0 when
    /// there is no room or the write failed: the writer thread then writes
    /// them, and meets any failure where it is handled).
    private func writeNowIfRoom(_ bytes: [UInt8]) -> Int {
        var wanted = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        guard poll(&wanted, 1, 0) == 1, wanted.revents & Int16(POLLOUT) != 0,
              wanted.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0 else { return 0 }
        let n = bytes.withUnsafeBytes { buffer in buffer.baseAddress.map { Glibc.write(descriptor, $0, buffer.count) } ?? 0 }
        return max(0, n)
    }

    private func writeUntilClosed() {
        condition.lock()
        while true {
            while queued.isEmpty, !closed {
                condition.wait()
                if queued.isEmpty, !closed { idleWakes += 1 }
            }
            if closed { break }
            let bytes = queued
            queued = []
            inFlight = bytes.count
            condition.unlock()
            var offset = 0
            var failure: SystemError?
            while offset < bytes.count, failure == nil {
                let end = min(bytes.count, offset + Self.writeChunk)
                do { try Syscall.writeAll(descriptor, bytes[offset..<end]) } catch { failure = error }
                condition.lock()
                written += end - offset
                offset = end
                inFlight = bytes.count - offset
                condition.broadcast()
                condition.unlock()
            }
            condition.lock()
            if let failure {
                closed = true
                queued = []
                inFlight = 0
                condition.broadcast()
                condition.unlock()
                onClosed?(failure)
                return
            }
        }
        condition.unlock()
    }
}
