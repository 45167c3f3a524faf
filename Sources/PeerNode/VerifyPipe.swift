import Foundation
import Gossip
import NodeCore
import Reactor

/// Batches handed from the loop to the verifier, in the order they came.
/// One drain runs at a time and takes every batch waiting at once, so
/// batches that came while it verified are verified together (spread over
/// the cores as one) and go back to the loop together: fewer wake-ups of a
/// sleeping thread, which this machine's scheduler places on the loop's
/// core, behind the loop (docs/SCALE.md).
final class VerifyPipe: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [(LinkID, [CarriedEnvelope])] = []
    private var draining = false

    /// Adds a batch; true when a drain must be started for it (none runs).
    func add(_ link: LinkID, _ batch: [CarriedEnvelope]) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        waiting.append((link, batch))
        if draining { return false }
        draining = true
        return true
    }

    /// Every batch waiting, taken out; empty when none waits, and the drain
    /// has ended (the next `add` starts another).
    func take() -> [(LinkID, [CarriedEnvelope])] {
        lock.lock()
        defer { lock.unlock() }
        let taken = waiting
        waiting.removeAll(keepingCapacity: true)
        if taken.isEmpty { draining = false }
        return taken
    }

    /// Until none waits: every batch waiting taken at once, checked by
    /// `verify` (one flag an envelope, in order), and handed to `back` with
    /// their flags and the seconds the check took. `together`: all that was
    /// taken checked as one and handed back as one (fewer ends of a parallel
    /// section, fewer wake-ups, and runs of an author's envelopes across the
    /// batches proved by one signature); else each batch handed back as soon
    /// as it is checked (the first need not wait for the last).
    func drain(together: Bool, verify: ([CarriedEnvelope]) -> [Bool], back: ([NetworkNode.VerifiedBatch], Double) -> Void) {
        while true {
            let taken = take()
            if taken.isEmpty { return }
            for group in together ? [taken] : taken.map({ [$0] }) {
                let started = monotonicNow()
                let valid = verify(group.flatMap(\.1))
                let took = monotonicNow() - started
                var at = 0
                back(group.map { id, batch in
                    defer { at += batch.count }
                    return (id, batch, Array(valid[at..<(at + batch.count)]))
                }, took)
            }
        }
    }

    var isDraining: Bool {
        lock.lock()
        defer { lock.unlock() }
        return draining
    }
}
