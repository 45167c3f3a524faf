import Crypto

/// What happened to one envelope offered to storage.
public enum InsertOutcome: Equatable, Sendable {
    /// New: stored.
    case inserted
    /// New, and stored without its body: a tombstone held here had already
    /// erased it (an original that came after its tombstone). What is passed
    /// on is the stored form, never the body as it came.
    case insertedErased
    /// The same bytes were already held: nothing changed.
    case duplicate
    /// Same author and sequence, other bytes: the first stays, this one is
    /// recorded as a fork (see `forks`), never stored over it.
    case fork(kept: MessageID)
    /// Does not link to the author's neighbouring envelope that is held
    /// (previous hash mismatch): refused and recorded as a fork.
    case brokenChain(kept: MessageID)

    /// Whether the envelope is new here (stored, with or without its body).
    public var isNew: Bool { self == .inserted || self == .insertedErased }
}
