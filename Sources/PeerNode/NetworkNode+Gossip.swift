import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// Replication on the links: gossip messages in and out, and received
/// envelopes verified (off the loop when there are many) and stored.
extension NetworkNode {
    // MARK: gossip

    /// Seconds between writes of the per-peer clocks: a peer sending clock
    /// messages as fast as it can costs one write per peer per interval,
    /// not one per message. A crash loses at most this much of a hint.
    static let peerClockSaveInterval = 5.0

    /// What we remember of `remote`: the unsaved clocks, else the saved ones.
    func peerClocks(of remote: PublicKey) -> PeerClocks? {
        unsavedPeerClocks[remote] ?? (readLogged("the saved clocks of a peer") { try node.store.peerClocks(of: remote) } ?? nil)
    }

    /// Writes the per-peer clocks that changed (on a tick once the interval
    /// passed, and at exit).
    func savePeerClocks(now: Double, force: Bool = false) {
        guard !unsavedPeerClocks.isEmpty, force || now - lastPeerClockSave >= Self.peerClockSaveInterval else { return }
        lastPeerClockSave = now
        let saving = unsavedPeerClocks
        unsavedPeerClocks = [:]
        for (remote, clocks) in saving {
            do { try node.store.savePeerClocks(clocks, of: remote, at: Node.now()) } catch {
                log.warning("saving the clock of \(remote.shortFingerprint) failed: \(error)")
            }
        }
    }


    func verifyAndStore(_ batch: [CarriedEnvelope], from id: LinkID) {
        if storeFull {
            // Refused, not lost: the clock exchange offers them again once there is room.
            count(.storeFull, by: batch.count)
            feed(.stored(from: id, checked: batch, inserted: [], invalid: 0, newClock: []))
            return
        }
        if batchesVerifying == 0, batch.count <= Self.inlineVerifyLimit {
            let started = monotonicNow()
            let valid = Self.verified(batch)
            core.stages.record(.verify, monotonicNow() - started)
            store(valid, checked: batch, from: id)
            return
        }
        batchesVerifying += 1
        verifier.async { [self] in
            // The signature is checked here, on the bytes as they came, on every core.
            let started = monotonicNow()
            let valid = Self.verified(batch)
            let took = monotonicNow() - started
            loop.execute { [self] in
                batchesVerifying -= 1
                core.stages.record(.verify, took)
                store(valid, checked: batch, from: id)
            }
        }
    }

    func store(_ valid: [CarriedEnvelope], checked batch: [CarriedEnvelope], from id: LinkID) {
        if valid.count < batch.count { count(.invalidEnvelope, by: batch.count - valid.count) }
        let forwardedAhead = forwardAhead(valid, from: id)
        var inserted: [CarriedEnvelope] = []
        var clock: [Dependency] = []
        let storing = monotonicNow()
        do {
            let outcomes = try node.store.insert(valid.map(\.envelope), receivedAt: Node.now())
            for (c, o) in zip(valid, outcomes) {
                switch o {
                case .inserted: inserted.append(c)
                case let .fork(kept), let .brokenChain(kept):
                    count(.fork)
                    forkFound(c.envelope, kept: kept)
                case .duplicate: break
                }
            }
            // Only the authors of this batch can have moved.
            clock = Set(valid.map(\.envelope.author)).map { Dependency(author: $0, sequence: node.store.contiguous(of: $0)) }
        } catch {
            log.warning("storing failed: \(error)")
        }
        let forwarding = monotonicNow()
        core.stages.record(.store, forwarding - storing)
        feed(.stored(from: id, checked: batch, inserted: inserted, invalid: batch.count - valid.count, newClock: clock))
        let delivering = monotonicNow()
        if !inserted.isEmpty {
            storedThisTurn = true
            if !forwardedAhead { core.stages.record(.forward, delivering - forwarding) }
        }
        showDeliveries()
        if !inserted.isEmpty, !relay { core.stages.record(.deliver, monotonicNow() - delivering) }
    }

    /// Forwards, before they are stored, the verified envelopes that continue
    /// their authors' chains here (`Store.chainEnd`): certain to be inserted
    /// as they are, so the links need not wait for the store's write, nor for
    /// what the presenter shows. Their bytes are written at once. Runs only
    /// where no sealed message waits to be written (a stored batch, or the
    /// end of `perform`), so the Noise order holds. Returns whether any went.
    private func forwardAhead(_ valid: [CarriedEnvelope], from id: LinkID) -> Bool {
        var ends: [PublicKey: (sequence: UInt64, id: MessageID)?] = [:]
        var ahead: [CarriedEnvelope] = []
        for c in valid {
            let e = c.envelope
            let end = ends.index(forKey: e.author) == nil ? node.store.chainEnd(of: e.author) : ends[e.author] ?? nil
            guard let end, e.sequence == end.sequence + 1, e.sequence == 1 || e.previous == end.id else {
                // Past a gap or off the chain: this author's rest waits for the store.
                ends[e.author] = .some(nil)
                continue
            }
            ends[e.author] = (e.sequence, e.id)
            ahead.append(c)
        }
        guard !ahead.isEmpty else { return false }
        let forwarding = monotonicNow()
        perform(core.handle(.verified(from: id, ahead: ahead), now: monotonic()))
        loop.flushNow()
        core.stages.record(.forward, monotonicNow() - forwarding)
        return true
    }

    /// An author signed two different envelopes at one sequence (or broke its
    /// own chain): shown once per author, and marked on its label from then on.
    func forkFound(_ e: Envelope, kept: MessageID) {
        guard node.noteFork(e.author) else { return }
        emit(.fork(node.people[e.author], sequence: e.sequence, kept: kept, fork: e.id))
    }

    /// The envelopes whose signatures verify, in order. Large batches are
    /// split across the machine's cores.
    static func verified(_ batch: [CarriedEnvelope]) -> [CarriedEnvelope] {
        guard batch.count >= 32, cores > 1 else {
            return batch.filter { (try? $0.envelope.verifySignature()) != nil }
        }
        let flags = UnsafeMutableBufferPointer<Bool>.allocate(capacity: batch.count)
        flags.initialize(repeating: false)
        defer { flags.deallocate() }
        let slice = (batch.count + cores - 1) / cores
        nonisolated(unsafe) let shared = flags
        DispatchQueue.concurrentPerform(iterations: cores) { part in
            let start = part * slice
            guard start < batch.count else { return }
            for i in start..<min(batch.count, start + slice) {
                // Each index is written by one iteration only.
                shared[i] = (try? batch[i].envelope.verifySignature()) != nil
            }
        }
        return batch.indices.filter { flags[$0] }.map { batch[$0] }
    }

    /// The cores verification is split across. Read once: Foundation reads
    /// it from the cgroup files each time (six system calls), which was
    /// a fifth of a received message's time in the node.
    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    func count(_ counter: Counter, by n: Int = 1) {
        core.count(counter, by: n)
    }
}
