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

    /// Seconds at least between writes of one peer's clocks: a peer sending
    /// clock messages as fast as it can costs one write per interval, not
    /// one per message. One peer is written a tick (`savePeerClocks`), so
    /// with many peers changing each waits its turn.
    static let peerClockSaveInterval = 5.0
    /// Seconds a peer's last write is remembered for choosing whom to write next.
    static let peerClockSaveMemory = 600.0

    /// What we remember of `remote`: the unsaved clocks, else the saved ones.
    func peerClocks(of remote: PublicKey) -> PeerClocks? {
        unsavedPeerClocks[remote] ?? (readLogged("the saved clocks of a peer") { try node.store.peerClocks(of: remote) } ?? nil)
    }

    /// Writes the per-peer clocks that changed: at a tick, one peer at most,
    /// the one written longest ago, once `peerClockSaveInterval` has passed
    /// since its last write; at exit (`force`), all of them. A write reads
    /// and writes that peer's clocks of every author (20 ms a peer at 10,000
    /// authors, `peernode-bench peer-clocks`): all of a relay's peers at once
    /// stalled its loop for a second. With many peers changing, each is
    /// written every that many seconds: a crash loses a newer hint, which
    /// the next link's clock exchange makes up.
    func savePeerClocks(now: Double, force: Bool = false) {
        guard !unsavedPeerClocks.isEmpty else { return }
        // Forgotten after a while: a peer never written comes first, which is harmless.
        peerClockSavedAt = peerClockSavedAt.filter { now - $0.value < Self.peerClockSaveMemory }
        let due: [PublicKey]
        if force {
            due = Array(unsavedPeerClocks.keys)
        } else {
            let written = { (peer: PublicKey) in self.peerClockSavedAt[peer] ?? -Double.infinity }
            let oldest = unsavedPeerClocks.keys.min { (written($0), $0) < (written($1), $1) }
            due = oldest.flatMap { now - written($0) >= Self.peerClockSaveInterval ? [$0] : nil } ?? []
        }
        for remote in due {
            guard let clocks = unsavedPeerClocks.removeValue(forKey: remote) else { continue }
            peerClockSavedAt[remote] = now
            do { try node.store.savePeerClocks(clocks, of: remote, at: Node.now()) } catch {
                node.storeFailures.failed("saving the clock of \(remote.shortFingerprint)", error)
            }
        }
    }

    /// Verifies and stores a batch a link brought. A batch that comes while
    /// nothing is being verified off the loop waits for the end of the
    /// loop's turn (`TurnEnd`), with every other batch of the turn from any
    /// link: their signatures are checked together (on both cores when there
    /// are many), stored in one transaction, and forwarded in one message per
    /// link. A large batch, or any batch while one is being verified, goes to
    /// the verifier thread (in order) and is stored when it comes back, with
    /// any others back by then (`storeVerified`). A relay sends every batch
    /// there: its loop's turn is forwarding to many links, and the verify on
    /// the other core lets batches gather while it forwards, so one write per
    /// link carries several (paced at 8,000 messages/s to 50 links, p99
    /// 42–54 ms where it was 69–570; docs/SCALE.md).
    func verifyAndStore(_ batch: [CarriedEnvelope], from id: LinkID) {
        if storeFull {
            // Refused, not lost: the clock exchange offers them again once there is room.
            count(.storeFull, by: batch.count)
            feed(.stored(from: id, checked: batch, inserted: [], invalid: 0, newClock: []))
            return
        }
        if !relay, batchesVerifying == 0, batch.count <= Self.inlineVerifyLimit {
            arrivals.append((id, batch))
            if !turnEnd.scheduled {
                turnEnd.scheduled = true
                loop.scheduleFlush(turnEnd)
            }
            return
        }
        batchesVerifying += 1
        guard verifyPipe.add(id, batch) else { return }
        verifier.async { [self] in drainVerifyPipe() }
    }

    /// On the verifier: what waits, verified together, sent back to the loop
    /// in order (`VerifyPipe.drain`). A relay too: its live traffic comes a
    /// batch an envelope, and batches verified one by one cost a verify each
    /// (a core's worth at 5,000 messages/s to 50 links); together, an
    /// author's run among them is proved at its top (`ChainVerification`),
    /// and the more that waits the fewer verifies each costs (docs/SCALE.md).
    private func drainVerifyPipe() {
        verifyPipe.drain(together: true, verify: SignatureCheck.verified) { [self] back, took in
            loop.execute { [self] in
                core.stages.record(.verify, took)
                let first = verifiedWaiting.isEmpty
                verifiedWaiting += back
                // The first to wait stores it and whatever comes back before its turn.
                if first { loop.execute { [self] in storeVerified() } }
            }
        }
    }

    /// Stores the batches back from the verifier, in the order they came,
    /// together in one transaction: when the loop is behind (a catch-up),
    /// several have come back by then, and one commit, one delivery read and
    /// one answer per link serve them all. At most `maximumVerifiedPerStore`
    /// envelopes at once (whole batches); the rest wait for the next turn.
    func storeVerified() {
        let (taken, valid) = Self.nextStore(from: &verifiedWaiting)
        if !verifiedWaiting.isEmpty { loop.execute { [self] in storeVerified() } }
        batchesVerifying -= taken.count
        store(taken, valid: valid)
    }

    /// The first of `waiting`, in order, as whole batches of at most
    /// `maximumVerifiedPerStore` envelopes together (one larger batch alone),
    /// with their flags joined; taken out of `waiting`.
    static func nextStore(from waiting: inout [VerifiedBatch]) -> (batches: [(LinkID, [CarriedEnvelope])], valid: [Bool]) {
        var envelopes = 0
        var end = 0
        while end < waiting.count, envelopes == 0 || envelopes + waiting[end].envelopes.count <= maximumVerifiedPerStore {
            envelopes += waiting[end].envelopes.count
            end += 1
        }
        let taken = waiting[..<end]
        waiting.removeFirst(end)
        return (taken.map { ($0.link, $0.envelopes) }, taken.flatMap(\.valid))
    }

    /// The end of the loop's turn: every batch that arrived in it, verified
    /// together and stored.
    func storeArrivals() {
        turnEnd.scheduled = false
        let taken = arrivals
        arrivals = []
        guard !taken.isEmpty else { return }
        let started = monotonicNow()
        let valid = SignatureCheck.verified(taken.flatMap(\.1))
        core.stages.record(.verify, monotonicNow() - started)
        store(taken, valid: valid)
    }

    /// Stores what verified (`valid`, one flag per envelope of `arrived`, in
    /// order) in one transaction, tells each link what it brought that is
    /// now stored, and shows what was delivered. A relay forwards what it
    /// can at once and stores it with what comes in the next few
    /// milliseconds (`RelayCommitGroup`).
    func store(_ arrived: [(LinkID, [CarriedEnvelope])], valid: [Bool]) {
        guard relay else { return storeNow(arrived, valid: valid) }
        let all = arrived.flatMap(\.1)
        if forwardAhead(all.indices.filter { valid[$0] }.map { all[$0] }) { commitGroup.forwardedAhead = true }
        if commitGroup.hold(arrived, valid: valid) {
            commitHeld()
        } else if commitGroup.timer == nil {
            commitGroup.timer = loop.after(RelayCommitGroup.delay) { [weak self] in
                self?.commitGroup.timer = nil
                self?.commitHeld()
            }
        }
    }

    /// A relay's held batches stored in one transaction (`RelayCommitGroup`).
    func commitHeld() {
        if let timer = commitGroup.timer { loop.cancel(timer) }
        commitGroup.timer = nil
        guard !commitGroup.isEmpty else { return }
        // One COMMIT at a time: the next waits for the one on the disk, unless too much has gathered.
        if let (pending, _, _) = commitGroup.committing {
            guard !RelayCommitGroup.waitsForCommit(held: commitGroup.valid.count) else { return }
            return relayCommitted(pending)
        }
        let (batches, valid, ahead) = commitGroup.take()
        storeNow(batches, valid: valid, forwardedAhead: ahead)
    }

    /// Everything a relay holds stored and its links answered, the loop
    /// waiting for the disk: at stop, before the links close.
    func storeAllHeld() {
        while true {
            if let (pending, _, _) = commitGroup.committing {
                relayCommitted(pending)
            } else if commitGroup.isEmpty {
                return
            } else {
                commitHeld()
            }
        }
    }

    /// `store` now: forwarded ahead here unless that was done (`forwardedAhead`).
    private func storeNow(_ arrived: [(LinkID, [CarriedEnvelope])], valid: [Bool], forwardedAhead ahead: Bool? = nil) {
        var all: [CarriedEnvelope] = []
        var source: [LinkID] = []
        for (id, batch) in arrived {
            all += batch
            source += repeatElement(id, count: batch.count)
        }
        let kept = all.indices.filter { valid[$0] }
        if kept.count < all.count { count(.invalidEnvelope, by: all.count - kept.count) }
        let forwardedAhead = ahead ?? forwardAhead(kept.map { all[$0] })
        let showing = monotonicNow()
        let (shownAhead, promptStale) = showAhead(kept.map { all[$0].envelope })
        let shownAheadTook = monotonicNow() - showing
        let waits = !shownAhead.isEmpty && !relay
        let stored = ArrivedBatches(all: all, source: source, valid: valid, kept: kept, forwardedAhead: forwardedAhead,
                             shownAhead: shownAhead, promptStale: promptStale, shownAheadTook: shownAheadTook, waited: waits)
        // Shown: the core goes to the line's reader first, the store follows at the loop's next wake
        // (`EventLoop.afterWaiting`). This turn is the one that stored, for its time.
        guard !waits else {
            storedThisTurn = true
            return loop.afterWaiting { [self] in finishStoring(stored) }
        }
        finishStoring(stored)
    }

    /// The store's transaction for what `storeNow` took, the answers to the
    /// links, and what it delivered shown. A relay's COMMIT runs on the
    /// store's committer thread (`Store.insertCommittingElsewhere`): its loop
    /// goes on forwarding while the disk takes the commit, and the answers
    /// follow once it is done, so `stored` still means stored.
    private func finishStoring(_ arrived: ArrivedBatches) {
        let (all, source, kept) = (arrived.all, arrived.source, arrived.kept)
        var result = StoreOutcome()
        let storing = monotonicNow()
        var pending: PendingCommit?
        do {
            let envelopes = kept.map { all[$0].envelope }
            let outcomes: [InsertOutcome]
            if relay {
                (outcomes, pending) = try node.store.insertCommittingElsewhere(envelopes, receivedAt: Node.now()) { [weak self] done in
                    self?.loop.execute { [weak self] in self?.relayCommitted(done) }
                }
            } else {
                outcomes = try node.store.insert(envelopes, receivedAt: Node.now())
            }
            for (k, o) in zip(kept, outcomes) {
                switch o {
                case .inserted: result.inserted[source[k], default: []].append(all[k])
                case .insertedErased:
                    // Passed on as stored: its author erased it before it came here.
                    let e = all[k].envelope
                    if let stored = try node.store.envelope(by: e.author, sequence: e.sequence) {
                        result.inserted[source[k], default: []].append(CarriedEnvelope(hops: all[k].hops, envelope: stored))
                    }
                case let .fork(kept), let .brokenChain(kept):
                    count(.fork)
                    forkFound(all[k].envelope, kept: kept)
                    result.brokenAuthors.insert(all[k].envelope.author)
                case .duplicate: break
                }
            }
            // Only the authors of these batches can have moved.
            result.clock = Set(kept.map { all[$0].envelope.author }).map { Dependency(author: $0, sequence: node.store.contiguous(of: $0)) }
            // Our own history coming back from peers was sent before: `flushOwn` is for what we sign.
            if let own = result.clock.first(where: { $0.author == node.me }) { sentOwnUpTo = max(sentOwnUpTo, own.sequence) }
        } catch {
            // Said with the next output, once a minute at most (a full disk fails every batch).
            node.storeFailures.failed("storing what came", error)
            result = StoreOutcome()
        }
        core.stages.record(.store, monotonicNow() - storing)
        if let pending {
            commitGroup.committing = (pending, arrived, result)
            return
        }
        answerStored(arrived, result)
    }

    /// A relay's COMMIT `done` is done, or is waited for here: the answers
    /// it held, then the next group if one gathered meanwhile.
    func relayCommitted(_ done: PendingCommit) {
        guard let (pending, arrived, result) = commitGroup.committing, done === pending else { return }
        commitGroup.committing = nil
        let failed = node.store.settle(pending)
        core.stages.record(.commit, pending.took)
        if let failure = failed {
            node.storeFailures.failed("storing what came", failure)
            answerStored(arrived, StoreOutcome())
        } else {
            answerStored(arrived, result)
        }
        if !commitGroup.isEmpty, commitGroup.timer == nil { commitHeld() }
    }

    /// The answers to the links for what a transaction stored, and what it delivered shown.
    private func answerStored(_ arrived: ArrivedBatches, _ result: StoreOutcome) {
        let (all, source, valid) = (arrived.all, arrived.source, arrived.valid)
        let inserted = result.inserted
        let forwarding = monotonicNow()
        // One answer per link, with everything it brought this turn.
        var seen: Set<LinkID> = []
        for id in source where seen.insert(id).inserted {
            let checked = all.indices.filter { source[$0] == id }
            feed(.stored(from: id, checked: checked.map { all[$0] }, inserted: inserted[id] ?? [],
                         invalid: checked.count { !valid[$0] }, newClock: result.clock))
        }
        let delivering = monotonicNow()
        if !inserted.isEmpty {
            if !arrived.waited { storedThisTurn = true }
            if !arrived.forwardedAhead { core.stages.record(.forward, delivering - forwarding) }
        }
        let stored = inserted.values.flatMap { $0.map(\.envelope) }
        takeRevocationsStored(stored)
        // A tombstone's erase list is in clear: the files it takes back go here too where the offer cannot be read.
        let ended = node.files.erase(takenBackBy: stored)
        // A revoked device's genuine envelope refused as not linking (a fork of the thief's held below it) may be proven now.
        for author in result.brokenAuthors where node.devices.revokedHeads[author] != nil { node.devices.promoteNamedChain(author) }
        showDeliveries(shownAhead: arrived.shownAhead, promptStale: arrived.promptStale)
        // A /get of a file its author just deleted ends, said after the delete itself.
        tell(ended)
        node.openedAhead.clear()
        if !inserted.isEmpty, !relay { core.stages.record(.deliver, arrived.shownAheadTook + monotonicNow() - delivering) }
    }

    /// Revocations are taken when stored, not only when delivered: one
    /// depends on the revoked device's chain up to its limit, and a chain
    /// that a fork broke here (the genuine envelope after the thief's fork
    /// refused as not linking) never fills, so the revocation would never
    /// be delivered. Limits do not depend on order, so taking one early
    /// changes nothing but when. Only those whose device's claim is known
    /// (the others are taken at delivery, or refused there). A relay, which
    /// delivers nothing to show, takes claims here too: it reads the
    /// accounts room like everyone, and with the revocations it honours no
    /// revoked device's tombstone past its limit, so a thief cannot erase
    /// its owner's words through it.
    private func takeRevocationsStored(_ stored: [Envelope]) {
        var events: [NodeEvent] = []
        var kept = false
        for e in stored where e.room == node.accountsRoom {
            guard let opened = node.open(e) else { continue }
            if relay, opened.kind == .device { _ = node.acceptDeviceClaim(e, opened) }
            guard let row = node.devices.takeRevocationEarly(e, opened) else { continue }
            kept = true
            if let event = node.devices.revokedEvent(row, book: node.people) { events.append(event) }
        }
        guard kept, !relay else { return }
        conversationKeysChanged()
        emit(events)
    }

    /// Forwards, before they are stored, the verified envelopes that continue
    /// their authors' chains here (`Store.chainEnd`): certain to be inserted
    /// as they are, so the links need not wait for the store's write, nor for
    /// what the presenter shows. One message per link, whichever links they
    /// came on (a link is not sent what it brought: replication counts it as
    /// known there). Their bytes are written at once. Runs only where no
    /// sealed message waits to be written (the end of a turn, or a batch back
    /// from the verifier), so the Noise order holds. Returns whether any went.
    private func forwardAhead(_ valid: [CarriedEnvelope]) -> Bool {
        var ends: [PublicKey: (sequence: UInt64, id: MessageID)?] = [:]
        var ahead: [CarriedEnvelope] = []
        for c in valid {
            let e = c.envelope
            // A relay's ends forwarded and not yet committed come before the store's.
            let end = ends.index(forKey: e.author) == nil ? commitGroup.ends[e.author] ?? node.store.chainEnd(of: e.author) : ends[e.author] ?? nil
            guard let end, e.sequence == end.sequence + 1, e.sequence == 1 || e.previous == end.id else {
                // Past a gap or off the chain: this author's rest waits for the store.
                ends[e.author] = .some(nil)
                continue
            }
            ends[e.author] = (e.sequence, e.id)
            ahead.append(c)
        }
        guard !ahead.isEmpty else { return false }
        if relay { for c in ahead { commitGroup.ends[c.envelope.author] = (c.envelope.sequence, c.envelope.id) } }
        let forwarding = monotonicNow()
        // In slices, each written before the next is sealed: a batch that gathered while the loop
        // was behind is not copied to every link at once (docs/DECISIONS.md, "A fan-out in slices").
        for slice in GossipMessage.batches(ahead, maxBytes: Self.forwardSliceBytes) {
            perform(core.handle(.verified(slice), now: monotonic()))
            loop.flushNow()
        }
        core.stages.record(.forward, monotonicNow() - forwarding)
        return true
    }

    /// Bytes of envelopes (as a message of envelopes counts them,
    /// `GossipMessage.batches`) a forward seals for its links and writes
    /// before the next. A live turn's envelopes fit in one (at
    /// 13,000 messages/s to 50 links a relay forwards some 30 KB at a time);
    /// a backlog of half a second was 5 MB a link, sealed for all 50 links
    /// before any was written: 153 MB of the relay's memory at its peak,
    /// new pages every time, where slices keep it to 70 MB. Local, not on
    /// the wire: a slice is a message of envelopes as any other.
    static let forwardSliceBytes = 64 << 10

    /// An author signed two different envelopes at one sequence (or broke its
    /// own chain): shown once per author, and marked on its label from then on.
    func forkFound(_ e: Envelope, kept: MessageID) {
        guard node.noteFork(e.author) else { return }
        emit(.fork(node.people[e.author], sequence: e.sequence, kept: kept, fork: e.id))
    }

    func count(_ counter: Counter, by n: Int = 1) {
        core.count(counter, by: n)
    }
}

/// Catch-up goes out as the link drains (`CatchUpQueue`, pure, decides
/// what and when); here the store is read and the batches sent.
extension NetworkNode {
    /// Queues `from...through` of `author` for the link and starts sending.
    func queueCatchUp(_ id: LinkID, author: PublicKey, from: UInt64, through: UInt64) {
        guard links[id] != nil else { return }
        // A revoker's chain first: the revocation is held before the revoked device's posts come.
        links[id]?.catchUp.add(author: author, from: from, through: through, first: node.devices.revocationRows.contains { $0.by == author })
        pumpCatchUp(id)
    }

    /// Sends batches while the link has room in its window; then waits for
    /// the socket to take half of it.
    func pumpCatchUp(_ id: LinkID) {
        // While effects are being done a batch sent here would wait in
        // `feed`'s queue, unseen by the window, and the loop would read the
        // whole range into it: a socket that drains then (a forward written
        // at once, `forwardAhead`) pumps once they are done.
        if feeding {
            catchUpDue.insert(id)
            return
        }
        while let link = links[id] {
            switch link.catchUp.next(unsent: link.connection.unsentBytes) {
            case .idle:
                return
            case let .wait(below):
                link.connection.whenUnsent(below: below) { [self] in pumpCatchUp(id) }
                return
            case let .read(author, from, count):
                let read: [Envelope]
                do { read = try node.store.envelopes(from: author, startingAt: from, limit: count, bytes: GossipMessage.batchBytes) } catch {
                    // The range ends here; the peer's next clock exchange asks again.
                    log.warning("reading \(author.shortFingerprint)'s envelopes for a catch-up failed: \(error)")
                    read = []
                }
                // One batch message (at most `GossipMessage.batchBytes`) per turn, so the window holds.
                var batch = GossipMessage.batches(read.map { CarriedEnvelope(hops: 0, envelope: $0) }).first ?? []
                // A peer on an older link reads no newer envelope: the author's
                // chain ends for it at the first one (the rest could never be
                // delivered there).
                let cut = batch.firstIndex { $0.envelope.version > (core.version(of: id) ?? .newest).envelopeVersion }
                if let cut { batch.removeSubrange(cut...) }
                links[id]?.catchUp.took(read: read.count, sent: batch.count, last: batch.last?.envelope.sequence, chainEnds: cut != nil)
                if !batch.isEmpty { feed(.send(id, .envelopes(batch))) }
            }
        }
    }
}
