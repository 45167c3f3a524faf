import Crypto

/// Claims by linked peers to hold more of our own messages than we do. One
/// patience window for the whole node, not one per claimant: identities
/// are free, so a window per identity let a peer with many of them hold
/// our posts for ever. While claims go unproven (none of our messages
/// arrives) for the node's patience (`OwnHistoryGate.patience`), no claim is believed; our
/// chain growing is the proof that restarts the window. The window is
/// forgotten only after as long again with no claim at all, so leaving and
/// coming back does not buy a new one.
public struct OwnHistoryClaims: Sendable {
    /// When the current unproven period began (nil: no claim outstanding).
    public private(set) var since: Double?
    /// Our own clock entry at the last update (nil before the first: where we start is no progress).
    private var ours: UInt64?
    private var progressAt = -Double.infinity
    /// The highest sequence we signed ourselves: our chain growing up to it proves nothing.
    private var signedUpTo: UInt64 = 0
    /// When a claim above ours was last seen.
    private var lastClaimAt = 0.0
    /// Peers told they are not believed, each reported once (at most `limit`).
    public private(set) var disbelieved: Set<PublicKey> = []
    public static let limit = 4_096

    public init() {}

    /// Called on every tick with each linked peer's claim and our own clock.
    public mutating func update(claims: [PublicKey: UInt64], ours: UInt64, now: Double, patience: Double) {
        if let before = self.ours, ours != before, ours > signedUpTo { progressAt = now }
        self.ours = ours
        if claims.values.contains(where: { $0 > ours }) {
            lastClaimAt = now
            if since == nil { since = now }
        } else if let since, progressAt >= since || now - max(lastClaimAt, since) >= patience {
            // Claims came true, or none for a whole window: a later one gets a fresh window.
            self.since = nil
            disbelieved = []
        }
    }

    /// We are about to sign our envelope `sequence`.
    public mutating func signing(_ sequence: UInt64) { signedUpTo = max(signedUpTo, sequence) }

    /// Whether claims still stand: none unproven for `patience` seconds.
    public func believes(now: Double, patience: Double) -> Bool {
        guard let since else { return true }
        return now - max(since, progressAt) < patience
    }

    public mutating func disbelieve(_ peer: PublicKey) -> Bool {
        guard disbelieved.count < Self.limit else { return false }
        return disbelieved.insert(peer).inserted
    }
}
