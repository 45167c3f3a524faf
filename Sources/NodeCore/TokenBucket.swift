/// A token bucket: `capacity` tokens at once, then `rate` a second. The
/// rate and capacity are given at each look, so a share that changes (a
/// link's part of a budget) refills at its current size.
struct TokenBucket: Sendable {
    private(set) var tokens: Double
    private var at: Double

    /// Full at `now`.
    init(capacity: Double, now: Double) {
        tokens = capacity
        at = now
    }

    /// Adds what the time since the last look brought, up to `capacity`.
    mutating func refill(now: Double, rate: Double, capacity: Double) {
        tokens = min(capacity, tokens + max(0, now - at) * rate)
        at = now
    }

    var hasToken: Bool { tokens >= 1 }

    /// Takes a token; check `hasToken` first.
    mutating func take() { tokens -= 1 }

    /// Refills, then takes a token if there is one.
    mutating func take(now: Double, rate: Double, capacity: Double) -> Bool {
        refill(now: now, rate: rate, capacity: capacity)
        guard hasToken else { return false }
        take()
        return true
    }
}
