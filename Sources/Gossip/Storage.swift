import Crypto

/// What happened to one envelope offered to storage.
public enum InsertOutcome: Equatable, Sendable {
    /// New: stored.
    case inserted
    /// The same bytes were already held: nothing changed.
    case duplicate
    /// Same author and sequence, other bytes: the first stays, this one is
    /// recorded as a fork (see `forks`), never stored over it.
    case fork(kept: MessageID)
    /// Does not link to the author's neighbouring envelope that is held
    /// (previous hash mismatch): refused and recorded as a fork.
    case brokenChain(kept: MessageID)
}

/// The storage the gossip layer needs. `Store` implements it with SQLite;
/// the replicator's tests can use an in-memory one.
public protocol EnvelopeStorage: AnyObject {
    /// Stores a batch (one transaction). Envelopes must already be verified.
    func insert(_ envelopes: [Envelope], receivedAt: UInt64) throws -> [InsertOutcome]
    /// Author → highest contiguous sequence held.
    func vectorClock() throws -> VectorClock
    /// An author's envelopes with sequence ≥ `sequence`, ascending, at most `limit`.
    func envelopes(from author: PublicKey, startingAt sequence: UInt64, limit: Int) throws -> [Envelope]
}
