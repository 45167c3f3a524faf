import Foundation

// Waiting for something to happen, for every test target.
//
// Tests run four at a time on two cores (docs/DECISIONS.md, "Tests in
// parallel"), so a waiting test can be kept off the cooperative pool for
// seconds by the others. Every wait therefore asks once more after its
// deadline: what happened while it was not running still counts.

/// Asks `probe` every `interval` until it gives a value or `timeout`
/// seconds pass, then once more; nil if it never did.
public func eventuallyValue<T>(_ timeout: Double = 20, interval: Duration = .milliseconds(20),
                               _ probe: () throws -> T?) async rethrows -> T? {
    let deadline = Deadline(timeout)
    while !deadline.passed {
        if let value = try probe() { return value }
        try? await Task.sleep(for: interval)
    }
    return try probe()
}

/// Whether `condition` holds within `timeout` seconds (polled, and asked
/// once more at the deadline).
public func eventually(_ timeout: Double = 30, interval: Duration = .milliseconds(20), _ condition: () -> Bool) async -> Bool {
    await eventuallyValue(timeout, interval: interval) { condition() ? true : nil } != nil
}

/// A point `seconds` from now on the monotonic clock. Test deadlines are
/// never wall-clock times: this machine's wall clock has jumped forward by
/// minutes (a paused virtual machine catching up), which expired every
/// `Date()` deadline at once while the nodes, timing on the monotonic
/// clock, had seen no time pass.
public struct Deadline: Sendable {
    private let end: Double

    public init(_ seconds: Double) { end = Self.now() + seconds }

    public var passed: Bool { Self.now() >= end }

    /// Seconds on the monotonic clock.
    public static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
