import Crypto
import Gossip
import Reactor
import Store

/// What a relay has verified and forwarded but not yet stored: one
/// transaction every `RelayCommitGroup.delay` seconds (or once
/// `NetworkNode.maximumVerifiedPerStore` envelopes wait) instead of one a
/// batch, its COMMIT on the store's committer thread, one at a time. A relay forwards what continues a chain before storing it, so
/// the wait is not on the forwarding path; the `stored` answers, and with
/// them its authors' ✓, go after the commit, so they still mean on disk.
/// A relay killed in the window loses only what no link was told is
/// stored: its senders still hold it and offer it again.
struct RelayCommitGroup {
    /// Seconds a verified batch waits for others before the transaction
    /// that stores them all. Paced at 4,000 messages/s to 50 links, a
    /// commit a batch (one or two messages) was a sixth of the relay's CPU
    /// (docs/SCALE.md); a few milliseconds gather a dozen or more.
    static let delay = 0.004

    /// The batches in the order they came, each with its link and one
    /// flag per envelope (whether it verified).
    private(set) var batches: [(LinkID, [CarriedEnvelope])] = []
    private(set) var valid: [Bool] = []
    /// The chain ends forwarded ahead and not yet stored: the store's own
    /// `chainEnd` lags behind them until the commit.
    var ends: [PublicKey: (sequence: UInt64, id: MessageID)] = [:]
    /// Whether any of them went ahead of the store (`NetworkNode.forwardAhead`).
    var forwardedAhead = false
    /// The commit's timer, while one is due.
    var timer: TimerID?
    /// The transaction whose COMMIT is on the store's committer thread
    /// (`Store.insertCommittingElsewhere`), with what its answers need.
    /// One at a time: what comes meanwhile is held for the next.
    var committing: (PendingCommit, ArrivedBatches, StoreOutcome)?
    /// Envelopes held while a COMMIT is on the disk, past which the loop
    /// waits for that COMMIT and stores them (a disk slower than the links
    /// would otherwise let the held batches grow without bound).
    static let heldWhileCommitting = 4 * NetworkNode.maximumVerifiedPerStore

    /// Whether `held` envelopes may go on waiting for a COMMIT on the disk.
    static func waitsForCommit(held: Int) -> Bool { held < heldWhileCommitting }

    var isEmpty: Bool { batches.isEmpty }

    /// Holds `arrived`; true once `NetworkNode.maximumVerifiedPerStore`
    /// envelopes or more wait (commit now, not at the timer).
    mutating func hold(_ arrived: [(LinkID, [CarriedEnvelope])], valid flags: [Bool]) -> Bool {
        batches += arrived
        valid += flags
        return valid.count >= NetworkNode.maximumVerifiedPerStore
    }

    /// Everything held, taken out; the ends forgotten (the store has them once this is committed).
    mutating func take() -> (batches: [(LinkID, [CarriedEnvelope])], valid: [Bool], forwardedAhead: Bool) {
        defer {
            batches = []
            valid = []
            ends = [:]
            forwardedAhead = false
            timer = nil
        }
        return (batches, valid, forwardedAhead)
    }
}
