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

/// A time budget of `seconds`, spent as the monotonic clock moves but at
/// most `longestStep` between two looks. This machine's clocks (wall and
/// monotonic) jump forward by minutes when its virtual machine is paused
/// and resumed; a plain deadline then expired at once, and a wait failed
/// though the node it waited for had had no time at all. A test starved
/// of the pool for longer than a step only waits longer, never less.
/// Used by one waiting task at a time.
public final class Deadline: @unchecked Sendable {
    /// The most one look at the clock spends of the budget (a wait looks
    /// every few milliseconds, so a real second is never cut short).
    public static let longestStep = 1.0
    private var left: Double
    private var last: Double

    public init(_ seconds: Double) {
        left = seconds
        last = Self.now()
    }

    /// Whether the budget is spent (each call spends what passed since the last).
    public var passed: Bool {
        let now = Self.now()
        left -= min(max(0, now - last), Self.longestStep)
        last = now
        return left <= 0
    }

    /// Seconds on the monotonic clock.
    public static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
