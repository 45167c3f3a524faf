import Crypto

extension Replicator {
    /// What the replicator knows of one link: the clocks each side
    /// declared and we believe, the budgets, what was asked and announced,
    /// and the tree push's view of it.
    struct Link {
        var known: VectorClock
        var lastSent: VectorClock
        /// The last clock the peer declared (nil until we can rebuild it).
        var declared: VectorClock?
        var nextExchange: Double
        var invalid = 0
        var exchanges = 0
        /// Live pushes this link may still send now, and when that was worked out.
        var pushTokens: Double
        var refilledAt: Double
        /// The peer asks for its catch-up (version 2): we do not send it unasked.
        let peerAsks: Bool
        /// The newest envelope version the peer reads: nothing newer is pushed to it.
        let envelopeVersion: UInt8
        /// What we asked this link for and it has not sent yet, per author.
        var asked: [PublicKey: AskedRange] = [:]
        /// The highest sequence ever asked of this link, per author: kept
        /// after `asked` forgets a range, since an answer may still be on
        /// its way behind a push of the same envelope (`pushedDuplicates`).
        var askedThrough: [PublicKey: UInt64] = [:]
        /// Authors this link was asked for and did not send within
        /// `pullTimeout`, and when that was found (`Replicator+Pull.swift`).
        var stalled: [PublicKey: Double] = [:]
        /// Envelopes we may still ask for now (the pull budget), and when that was worked out.
        var pullTokens: Double
        var pullRefilledAt: Double
        /// `known.stamp` when the link was last found to hold nothing we
        /// lack: our clock only grows, so until its clock moves the tick's
        /// pull need not look through every author again.
        var nothingWantedAt: UInt64?
        /// Tree push (`Replicator+Tree.swift`): the link speaks it (version 4 on)…
        let tree: Bool
        /// …and the authors whose new envelopes go on it as ids (lazy); the
        /// rest go in full (eager). One tree per author.
        var lazy: Set<PublicKey> = []
        /// What the peer announced it holds (`ihave`), not yet asked for.
        var announced = VectorClock()
        /// Ids to announce at the next tick (lazy link): author → newest sequence.
        var lazyQueue: [PublicKey: UInt64] = [:]
        /// What the peer asked for that was on its way into our store
        /// (verified or forwarded ahead, not yet stored), per author: the
        /// sequences still to send once it is (`requestReceived`, `stored`).
        var waitingAsks: [PublicKey: ClosedRange<UInt64>] = [:]
    }
}
