import Crypto

/// Which envelopes of a batch must have their own signature checked, and
/// which the author's next envelope vouches for (docs/PROTOCOL.md §4,
/// "Chains vouch"). A version-4 id hashes the signature with the signed
/// bytes, so an envelope whose `previous` names it signs over that
/// signature: one verified signature at the top of a run of an author's
/// envelopes proves every envelope of the run, at a hash each (already
/// computed: the id) instead of an Ed25519 verify each. Pure: the verify
/// is passed in, so a test counts what it was asked.
public enum ChainVerification {
    /// For each envelope, the index of the one whose signature proves it:
    /// itself, or the top of the run it continues. An envelope is vouched
    /// for by the one at its author's next sequence in the same batch when
    /// its id covers its signature (`Envelope.idCoversSignature`), it is
    /// not pruned (the erasure's proof is a signature of its own), and the
    /// next one names its id as `previous`. Of two envelopes at one author
    /// and sequence (a fork), the first in the batch is the one looked for.
    public static func provers(_ batch: [Envelope]) -> [Int] {
        var at: [Position: Int] = [:]
        at.reserveCapacity(batch.count)
        for (i, e) in batch.enumerated() where at[Position(author: e.author, sequence: e.sequence)] == nil {
            at[Position(author: e.author, sequence: e.sequence)] = i
        }
        var next = [Int?](repeating: nil, count: batch.count)
        for (i, e) in batch.enumerated() where e.idCoversSignature && !e.isPruned {
            guard e.sequence < Envelope.maximumSequence,
                  let j = at[Position(author: e.author, sequence: e.sequence + 1)], batch[j].previous == e.id else { continue }
            next[i] = j
        }
        var prover = [Int](repeating: -1, count: batch.count)
        for i in batch.indices where prover[i] < 0 {
            var run = [i]
            var top = i
            // Sequences rise along `next`, so this ends; a known top ends it early.
            while let j = next[top], prover[j] < 0 {
                run.append(j)
                top = j
            }
            let found = next[top].map { prover[$0] } ?? top
            for k in run { prover[k] = found }
        }
        return prover
    }

    /// Whether each envelope of `batch` is proved, in order. `verify` checks
    /// the signatures of the envelopes at the indices it is given (each
    /// index once, ascending) and answers a flag for each: first the tops
    /// of runs; then, for the runs whose top did not verify, each envelope
    /// of the run on its own signature, so a bad top costs the batch no
    /// more than verifying each did.
    public static func verified(_ batch: [Envelope], verify: ([Int]) -> [Bool]) -> [Bool] {
        let prover = provers(batch)
        let tops = batch.indices.filter { prover[$0] == $0 }
        var valid = [Bool](repeating: false, count: batch.count)
        for (i, ok) in zip(tops, verify(tops)) { valid[i] = ok }
        let orphans = batch.indices.filter { prover[$0] != $0 && !valid[prover[$0]] }
        for (i, ok) in zip(orphans, orphans.isEmpty ? [] : verify(orphans)) { valid[i] = ok }
        for i in batch.indices where prover[i] != i && valid[prover[i]] { valid[i] = true }
        return valid
    }

    struct Position: Hashable {
        let author: PublicKey
        let sequence: UInt64
    }
}
