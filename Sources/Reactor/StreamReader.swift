import CEpoll
import Glibc

/// Reads a descriptor someone else opened (standard input) on the loop:
/// bytes go to `onBytes` as they arrive, then `onEnd` once, at end of
/// input or on a read error. The descriptor is not made non-blocking (that
/// flag would be shared with the shell that gave it to us): it is read once
/// per readiness event, which does not block. A descriptor epoll cannot
/// watch (a regular file, `/dev/null`) is always ready: it is read a chunk
/// per loop turn instead.
public final class StreamReader: LoopHandler {
    /// Bytes read at a time.
    public static let chunk = 64 << 10

    private let fd: Int32
    private let loop: EventLoop
    private let onBytes: ([UInt8]) -> Void
    private let onEnd: (SystemError?) -> Void
    private var token: UInt64?
    private var ended = false

    public init(fd: Int32, loop: EventLoop, onBytes: @escaping ([UInt8]) -> Void, onEnd: @escaping (SystemError?) -> Void) {
        self.fd = fd
        self.loop = loop
        self.onBytes = onBytes
        self.onEnd = onEnd
    }

    /// On the loop: starts reading.
    public func start() {
        do {
            token = try loop.register(fd, events: peernode_EPOLLIN | peernode_EPOLLRDHUP, handler: self)
        } catch where error.errno == EPERM {
            readFileChunk()
        } catch {
            end(error)
        }
    }

    public func handle(events: UInt32) { readOnce() }
    public func tick(now: Double) -> Double? { nil }
    public func shutdown() { stop() }

    /// Stops reading (no `onEnd`).
    public func stop() {
        ended = true
        if let token { loop.deregister(fd, token: token) }
        token = nil
    }

    private func readFileChunk() {
        guard readOnce() else { return }
        // `execute` from the loop runs on its next turn: other work goes first.
        loop.execute { [self] in readFileChunk() }
    }

    /// One read; false once input has ended.
    @discardableResult
    private func readOnce() -> Bool {
        guard !ended else { return false }
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        do {
            guard case let .done(n) = try Syscall.call("read(stdin)", { read(fd, &buffer, buffer.count) }) else { return true }
            guard n > 0 else {
                end(nil)
                return false
            }
            onBytes(Array(buffer[0..<n]))
            return !ended
        } catch {
            end(error)
            return false
        }
    }

    private func end(_ error: SystemError?) {
        stop()
        onEnd(error)
    }
}

extension StreamReader: @unchecked Sendable {}
