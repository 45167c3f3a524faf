/// Where a node's time goes on the path of a message (issue 15, "the
/// forwarding path"): each stage keeps how often it ran, its total, its
/// longest, and its last `window` durations, from which `/stats`, `--json`,
/// `/metrics` and `make bench` give the median and the 99th percentile.
///
/// Pure and bounded: the shell (and `LinkCore`, when given a stopwatch)
/// records durations measured with the monotonic clock; nothing here reads
/// a clock. docs/SCALE.md, "The forwarding path", says what each stage spans.
public struct StageTimes: Sendable {
    public enum Stage: String, CaseIterable, Sendable {
        /// From the loop waking (or the previous message of the same wake
        /// being done) to a link's WebSocket message handed over: the socket
        /// read and the frame.
        case receive
        /// Opening one Noise transport message (ChaChaPoly).
        case noise
        /// Chunks put together and the gossip message decoded, and what
        /// replication decides about it (which envelopes are new).
        case decode
        /// Ed25519 signatures of the envelopes a turn brought, from every
        /// link (on both cores when there are many).
        case verify
        /// What the links are sent of them: deciding, encoding, sealing, and
        /// writing to the sockets (before they are stored).
        case forward
        /// One store transaction of the turn's envelopes (no fsync).
        case store
        /// New deliveries handed to the presenter (the terminal, `--json`,
        /// a page): those shown before the store's transaction and those
        /// after it, together.
        case deliver
        /// A whole loop turn that stored envelopes: from the wake to every
        /// socket written.
        case turn
        /// Our own post: sealed, signed and committed (its fsync follows the send).
        case post
        /// Of a post: its body sealed, its dependencies found, the envelope signed.
        case sign
        /// Of a post: its row committed (no fsync).
        case row
        /// Of a post: its link messages encoded, sealed and written to the sockets.
        case send
        /// Of a post: the fsync that makes it durable, after the send.
        case sync
        /// A relay's COMMIT, on the store's committer thread (its `store`
        /// is the inserts on the loop; the loop forwards meanwhile).
        case commit

        var index: Int {
            switch self {
            case .receive: 0
            case .noise: 1
            case .decode: 2
            case .verify: 3
            case .forward: 4
            case .store: 5
            case .deliver: 6
            case .turn: 7
            case .post: 8
            case .sign: 9
            case .row: 10
            case .send: 11
            case .sync: 12
            case .commit: 13
            }
        }
    }

    /// Durations kept per stage for the percentiles.
    public static let window = 4_096

    public struct Summary: Equatable, Sendable {
        public var count: UInt64
        /// Seconds, over every run (not only the window).
        public var total: Double
        public var maximum: Double
        /// Seconds, over the last `window` runs.
        public var median: Double
        public var p99: Double
    }

    struct Series: Sendable {
        var recent: [Double] = []
        var next = 0
        var count: UInt64 = 0
        var total = 0.0
        var maximum = 0.0

        mutating func add(_ seconds: Double) {
            if recent.count < StageTimes.window {
                recent.append(seconds)
            } else {
                recent[next] = seconds
                next = (next + 1) % StageTimes.window
            }
            count &+= 1
            total += seconds
            maximum = max(maximum, seconds)
        }
    }

    /// One per stage, in `Stage.allCases` order (an array: recording is on
    /// every message's path, and a dictionary's hashing showed in profiles).
    private var series = [Series](repeating: Series(), count: Stage.allCases.count)

    public init() {}

    /// A duration in seconds (a negative one, from a clock that stepped, counts as 0).
    public mutating func record(_ stage: Stage, _ seconds: Double) {
        series[stage.index].add(max(0, seconds.isFinite ? seconds : 0))
    }

    /// The figures of `stage`, or nil if it never ran.
    public func summary(_ stage: Stage) -> Summary? {
        let s = series[stage.index]
        guard s.count > 0 else { return nil }
        let sorted = s.recent.sorted()
        func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Summary(count: s.count, total: s.total, maximum: s.maximum, median: at(0.5), p99: at(0.99))
    }

    /// Every stage that ran, in the order of a message's path.
    public var summaries: [(stage: Stage, summary: Summary)] {
        Stage.allCases.compactMap { stage in summary(stage).map { (stage, $0) } }
    }
}
