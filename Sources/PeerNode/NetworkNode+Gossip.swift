import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Replication on the links: gossip messages in and out, and received
/// envelopes verified (off the loop when there are many) and stored.
extension NetworkNode {
    // MARK: gossip

    func gossip(_ message: GossipMessage, from id: LinkID) {
        switch message {
        case let .clock(entries, full): perform(replicator.clockReceived(id, entries: entries, full: full, now: monotonic()))
        case let .envelopes(batch): perform(replicator.envelopesReceived(id, batch, now: monotonic()))
        case let .request(ranges): perform(replicator.requestReceived(id, ranges: ranges))
        case let .clockSince(base, entries): perform(replicator.clockSinceReceived(id, base: base, entries: entries, now: monotonic()))
        case .fullClockWanted:
            count(.fullClockWantedReceived)
            perform(replicator.fullClockWanted(id))
        case let .stored(entries):
            perform(replicator.storedReceived(id, entries: entries, now: monotonic()))
            if let remote = table.links[id]?.remote, let mine = entries.first(where: { $0.author == node.me }) {
                emit(storedArrived(mine.sequence, by: remote))
            }
        }
    }

    func send(_ message: GossipMessage, to id: LinkID) {
        // A batch goes out in messages of at most `batchBytes` (large bodies add up).
        if case let .envelopes(batch) = message, batch.count > 1 {
            let parts = GossipMessage.batches(batch)
            if parts.count > 1 {
                for part in parts { send(.envelopes(part), to: id) }
                return
            }
        }
        let encoded = message.encoded
        switch message {
        case let .clock(_, full): countClock(full ? .clockFullSent : .clockDeltaSent, bytes: encoded.count)
        case .clockSince: countClock(.clockSinceSent, bytes: encoded.count)
        case .fullClockWanted: countClock(.fullClockWantedSent, bytes: encoded.count)
        case let .envelopes(batch): count(.envelopesSent, by: batch.count)
        case .request, .stored: break
        }
        for chunk in GossipChunker.chunks(encoded) {
            guard var link = links[id] else { return }
            let actions = link.session.send(chunk)
            links[id] = link
            apply(actions, on: id)
        }
    }

    func perform(_ actions: [Replicator.Action]) {
        for action in actions {
            switch action {
            case let .send(id, message):
                send(message, to: id)
            case let .sendStored(id, author, from, through):
                queueCatchUp(id, author: author, from: from, through: through)
            case let .verifyAndStore(id, batch):
                verifyAndStore(batch, from: id)
            case let .disconnect(id, reason):
                count(.disconnectedInvalid)
                links[id]?.connection.close(code: .policyViolation, reason: reason)
            case let .pushesLimited(id, count):
                self.count(.pushRateLimited, by: count)
                self.count(.disconnectedFlood)
                links[id]?.connection.close(code: .policyViolation, reason: "pushing faster than \(Int(replicator.pushBudget.perSecond)) envelopes/s")
            case let .clockEntriesIgnored(_, count):
                self.count(.clockEntriesIgnored, by: count)
            case let .heldBack(_, count):
                self.count(.envelopesTooNewForLink, by: count)
            case let .remember(id, clocks):
                // Saved with the others at most every `peerClockSaveInterval`.
                guard let remote = table.links[id]?.remote else { continue }
                unsavedPeerClocks[remote] = clocks
            }
        }
    }

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
            perform(replicator.stored(from: id, checked: batch, inserted: [], invalid: 0, newClock: [], now: monotonic()))
            return
        }
        if batchesVerifying == 0, batch.count <= Self.inlineVerifyLimit {
            store(Self.verified(batch), checked: batch, from: id)
            return
        }
        batchesVerifying += 1
        verifier.async { [self] in
            // The signature is checked here, on the bytes as they came, on every core.
            let valid = Self.verified(batch)
            loop.execute { [self] in
                batchesVerifying -= 1
                store(valid, checked: batch, from: id)
            }
        }
    }

    func store(_ valid: [CarriedEnvelope], checked batch: [CarriedEnvelope], from id: LinkID) {
        if valid.count < batch.count { count(.invalidEnvelope, by: batch.count - valid.count) }
        var inserted: [CarriedEnvelope] = []
        var clock: [Dependency] = []
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
        perform(replicator.stored(from: id, checked: batch, inserted: inserted, invalid: batch.count - valid.count, newClock: clock, now: monotonic()))
        showDeliveries()
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
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
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

    func count(_ counter: Counter, by n: Int = 1) {
        counters.add(counter, n)
    }

    func countClock(_ kind: Counter, bytes: Int) {
        count(kind)
        count(.clockBytesSent, by: bytes)
    }
}
