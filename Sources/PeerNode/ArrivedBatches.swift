import Crypto
import Gossip
import NodeCore
import Store

/// What `NetworkNode.storeNow` took and showed of the verified batches, for
/// the store's transaction and the answers after it.
struct ArrivedBatches {
    let all: [CarriedEnvelope]
    let source: [LinkID]
    let valid: [Bool]
    let kept: [Int]
    let forwardedAhead: Bool
    let shownAhead: [StoredEnvelope]
    let promptStale: Bool
    let shownAheadTook: Double
    /// Stored after the loop's wait, not in the turn that took it.
    let waited: Bool
}

/// What a store transaction came to, for the answers to the links after it
/// (on a relay, after its COMMIT: `RelayCommitGroup.committing`).
struct StoreOutcome {
    var inserted: [LinkID: [CarriedEnvelope]] = [:]
    var brokenAuthors: Set<PublicKey> = []
    var clock: [Dependency] = []
}
