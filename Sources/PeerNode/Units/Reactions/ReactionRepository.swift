import Crypto
import Gossip
import Store

/// The store as reactions use it: what stands on a message, and recording
/// a delivered reaction. Every call throws a `RepositoryError` naming what it was doing.
struct ReactionRepository {
    let store: Store

    func record(_ reaction: Reaction, by reactor: PublicKey, sequence: UInt64) throws(RepositoryError) -> Store.ReactionOutcome {
        try storeCall("recording a reaction") {
            try store.recordReaction(target: reaction.target, reactor: reactor, reaction: reaction.reaction, sequence: sequence)
        }
    }

    func standing(on e: Envelope) throws(RepositoryError) -> [(reaction: String, by: [PublicKey])] {
        try storeCall("reading a message's reactions") { try store.reactions(to: e.author, sequence: e.sequence) }
    }
}
