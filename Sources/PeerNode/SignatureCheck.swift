import Dispatch
import Foundation
import Gossip

/// The signatures of a batch of envelopes checked, on every core where
/// there are many: what the node's verifier and its loop's turn ends run
/// before anything is stored (`NetworkNode.verifyAndStore`).
enum SignatureCheck {
    /// Whether each envelope is proved, in order: by its own signature, or,
    /// in a run of an author's version-4 envelopes, by the signature at the
    /// run's top (`ChainVerification`). Many signatures to check are split
    /// across the machine's cores in slices of `slice`, each taken by
    /// whichever core is free: in two halves, the half whose core the loop
    /// shared finished late while the other core waited (catch-up used
    /// 1.70–1.73 of 2 cores; in slices 1.82–1.85, and 8 % more envelopes/s).
    static func verified(_ batch: [CarriedEnvelope]) -> [Bool] {
        let envelopes = batch.map(\.envelope)
        return ChainVerification.verified(envelopes) { indices in verifying(indices.map { envelopes[$0] }) }
    }

    /// Whether each of `envelopes` verifies on its own signature, in order.
    static func verifying(_ envelopes: [Envelope]) -> [Bool] {
        guard envelopes.count >= 32, cores > 1 else {
            return envelopes.map(verifies)
        }
        let flags = UnsafeMutableBufferPointer<Bool>.allocate(capacity: envelopes.count)
        flags.initialize(repeating: false)
        defer { flags.deallocate() }
        nonisolated(unsafe) let shared = flags
        DispatchQueue.concurrentPerform(iterations: (envelopes.count + slice - 1) / slice) { part in
            let start = part * slice
            for i in start..<min(envelopes.count, start + slice) {
                // Each index is written by one iteration only.
                shared[i] = verifies(envelopes[i])
            }
        }
        return Array(flags)
    }

    /// Whether `e`'s signature verifies. One that does not is refused and
    /// counted (`invalid_envelope`); which check failed is not needed.
    static func verifies(_ e: Envelope) -> Bool { (try? e.verifySignature()) != nil }

    /// The machine's cores, which verification (and a fan-out's seals,
    /// `LinkCore.inParallel`) is split across. Read once: Foundation reads
    /// it from the cgroup files each time (six system calls), which was
    /// a fifth of a received message's time in the node.
    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Envelopes a core verifies before it takes the next slice of a batch.
    static let slice = 8
}
