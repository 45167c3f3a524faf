/// How much `--auto-get` fetches by itself: each offer up to its size
/// (`limit`), and in any hour at most `factor` times that in all, so a
/// member who offers file after file (or a long backlog of offers caught up
/// at once) cannot fill the disk of everyone who set it. Past the budget an
/// offer waits for `/get`, and that is said once an hour.
struct AutoGetBudget {
    /// Seconds over which fetches by itself are counted.
    static let window = 3600.0
    /// Offers of the largest size fetched by itself in a window.
    static let factor: UInt64 = 64

    /// The largest offer fetched by itself (`--auto-get SIZE`).
    let limit: UInt64
    /// What was fetched by itself in the last window, oldest first.
    private(set) var taken: [(at: Double, bytes: UInt64)] = []
    private var toldAt: Double?

    init(limit: UInt64) { self.limit = limit }

    /// Bytes fetched by itself in a window at most.
    var budget: UInt64 { limit.multipliedReportingOverflow(by: Self.factor).overflow ? .max : limit * Self.factor }

    /// Whether an offer of `bytes` is fetched by itself at `now` (it then counts).
    mutating func take(_ bytes: UInt64, now: Double) -> Bool {
        guard bytes <= limit else { return false }
        taken.removeAll { now - $0.at >= Self.window }
        let used = taken.reduce(UInt64(0)) { $0 + $1.bytes }
        guard used + bytes <= budget else { return false }
        taken.append((now, bytes))
        return true
    }

    /// Whether a refusal for the budget is said now: once a window.
    mutating func tells(now: Double) -> Bool {
        if let toldAt, now - toldAt < Self.window { return false }
        toldAt = now
        return true
    }
}
