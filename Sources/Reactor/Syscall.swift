import CEpoll
import Glibc

/// A failed system call: which one and errno (STYLE.md §4).
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
    public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
}

/// Every system call of the shells goes through here: EINTR is retried, EAGAIN
/// becomes `.wouldBlock`, anything else a `SystemError` naming the call.
public enum Syscall {
    public enum Result<T> {
        case done(T)
        case wouldBlock
    }

    public static func call<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> Result<T> {
        while true {
            let rc = body()
            if rc >= 0 { return .done(rc) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: name, errno: e)
        }
    }

    public static func check<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let rc = body()
            if rc >= 0 { return rc }
            let e = errno
            if e == EINTR { continue }
            throw SystemError(call: name, errno: e)
        }
    }

    /// Writes all of `bytes`: EINTR is retried, a short write continues
    /// where it stopped (a log line is never cut), and a descriptor that
    /// another process made non-blocking (stdout shared with a parent) is
    /// waited for with poll(2) instead of failing with EAGAIN.
    public static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            switch try call("write", { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } }) {
            case let .done(n): offset += n
            case .wouldBlock:
                var wanted = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&wanted, 1, -1)
            }
        }
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        try writeAll(fd, bytes[...])
    }

    /// Writes all of `bytes` at `offset` of a file (pwrite(2)): EINTR is
    /// retried, a short write continues where it stopped.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: off_t) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, offset + off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError(call: "pwrite", errno: errno)
            }
            done += n
        }
    }

    /// Starts writing `length` bytes of a file from `offset` to the disk
    /// and returns without waiting (sync_file_range(2) with
    /// SYNC_FILE_RANGE_WRITE): a later fsync(2) finds them written or on
    /// their way. Durability still comes from that fsync, never from this;
    /// a failure here only means the fsync does all the work, so none is said.
    public static func writeBehind(_ fd: Int32, offset: off_t, length: off_t) {
        _ = peernode_write_behind(fd, Int64(offset), Int64(length))
    }

    public static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try check("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try check("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    public static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }
}

/// Seconds on the monotonic clock.
public func monotonicNow() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// A NUL-terminated C string buffer as a Swift string.
public func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
