import Crypto

/// A link as the replicator knows it: a small number the shell picks.
public typealias LinkID = Int

/// Vector-clock replication between linked nodes, as a pure state machine:
/// no sockets, timers or database inside (STYLE.md §1). The shell feeds it
/// events and performs the actions it returns; time and randomness come in.
///
/// - On link-up each side sends its full clock. Each then asks the other, in
///   paced windows, for what it lacks (`request`, `Replicator+Pull.swift`):
///   envelopes that were asked for are free, and everything else a link
///   sends is a live push and spends its budget, whatever the link declared.
///   A peer on a version-1 link does not ask: it is sent, per author in
///   sequence order, what its clock lacks (`.sendStored`).
/// - New envelopes (own or received) are pushed to every link whose known
///   clock lacks them: in full where the link is eager for their author,
///   as ids where it is lazy (tree push, `Replicator+Tree.swift`, link
///   version 4 on). Duplicates are dropped by (author, sequence) against
///   the local clock and what is already being verified, before any
///   signature or decryption work.
/// - A periodic clock delta per link repairs whatever was lost; a peer's
///   full clock replaces what we believed of it, so a peer that lost its
///   database gets everything back.
/// - What each side last declared to the other is remembered per peer
///   (`PeerClocks`, saved by the shell). A reconnect then sends only what
///   changed since, named by the digest of the clock it builds on; a peer
///   that cannot rebuild that clock (it lost it, or never got it) asks for
///   the whole clock, so the memory is only ever a hint.
/// - An envelope past a gap makes the replicator request the gap from the
///   link it came from.
/// - A link that keeps sending envelopes that fail verification is dropped.
public struct Replicator {
    public enum Action: Equatable, Sendable {
        case send(LinkID, GossipMessage)
        /// Send `link` the stored envelopes of `author` with sequences `from...through`, in order, in batches.
        case sendStored(LinkID, author: PublicKey, from: UInt64, through: UInt64)
        /// Verify these (signature, chain) and store them; answer with `stored`.
        case verifyAndStore(LinkID, [CarriedEnvelope])
        case disconnect(LinkID, reason: String)
        /// Save what was declared on this link, for the next link to the same peer.
        case remember(LinkID, PeerClocks)
        /// `link` pushed past its budget: it is dropped (as `disconnect`), and
        /// what it pushed over the budget was not taken. Nothing is lost: a
        /// new link starts with a clock exchange that brings it all again.
        case pushesLimited(LinkID, Int)
        /// This many envelopes `link` sent were not taken: `pendingLimit`
        /// were already waiting to be verified. Counted; the pull or the
        /// next clock exchange asks for them again.
        case pendingFull(LinkID, Int)
        /// `link` declared more authors we hold nothing of than
        /// `maximumUnknownAuthors`: this many entries were not taken.
        case clockEntriesIgnored(LinkID, Int)
        /// This many envelopes were not pushed on `link`: their version is
        /// newer than its peer reads (`LinkProtocol.envelopeVersion`).
        case heldBack(LinkID, Int)
        /// `link` pushed this many envelopes we already held or were checking.
        case duplicates(LinkID, Int)
    }

    /// Clock entries a link may declare for authors this node holds nothing
    /// of. Made-up authors cost memory, a bigger saved clock and work on
    /// every exchange. A real author past the cap is asked for once a later
    /// full clock admits it: once an author is held its entry counts as
    /// known, so a peer with more authors than this is caught up over
    /// several exchanges.
    public static let maximumUnknownAuthors = 4_096

    /// Live pushes (envelopes a link sends that we did not ask it for) a link
    /// may send at once…
    public static let pushBurst = 50_000.0
    /// …and per second after that. Far above live chat and the relay
    /// benchmark's 20,000-message burst; a peer that floods past it is
    /// disconnected (and backs off before it redials).
    public static let pushRate = 10_000.0
    /// The budget in use (tests lower it; so does `--push-rate`).
    public var pushBudget = (burst: Replicator.pushBurst, perSecond: Replicator.pushRate)
    /// The pace of catch-up we ask one link for (`pullWindow`, `pull(_:now:)`):
    /// envelopes we may ask for at once, and per second after that. By
    /// default above what the machine verifies; `--push-rate` sets it with
    /// the push budget (then that rate bounds all a link brings). Its own
    /// bucket, so catch-up never spends a link's push budget.
    public var pullBudget = (burst: Replicator.pullBurst, perSecond: Replicator.pullRate)
    /// The default pull budget: above what two cores verify, so catch-up
    /// goes as fast as the machine, unless `--push-rate` slows it.
    public static let pullBurst = 50_000.0
    public static let pullRate = 40_000.0

    /// Seconds between clock exchanges on a link (with up to 25% jitter).
    public static let exchangeInterval = 15.0
    /// Envelopes that failed verification a link may send before it is dropped.
    public static let invalidLimit = 16
    /// Most envelopes waiting for verification at once (more are dropped and
    /// fetched again later through the clock exchange).
    public static let pendingLimit = 100_000
    /// The bound in use (tests lower it).
    public var pendingBound = Replicator.pendingLimit
    /// Envelopes per `sendStored` batch message.
    public static let batchSize = 256

    /// Every this many periodic exchanges, the whole clock goes instead of a
    /// delta, so an assumption about the peer that went wrong (a lost push)
    /// is corrected even when nothing changed on its side.
    public static let fullClockEvery = 4

    public let me: PublicKey
    /// Author → highest contiguous sequence held here.
    public private(set) var clock: VectorClock
    /// Each link's state. Changed by taking it out (`removeValue`) and
    /// putting it back: a copy (`var l = links[id]`) shares its clocks'
    /// storage with the table, so its first write copies them whole (at
    /// 10,000 authors, 130 µs per link and message; `peernode-bench push`).
    var links: [LinkID: Link] = [:]
    /// (author, sequence) handed out for verification and not yet answered.
    private(set) var pending: Set<Dependency> = []
    /// A store kept less than it was handed past what we hold (it failed),
    /// so an asked range may be answered and not kept (`forgetNotKept`):
    /// the stored answers look for such ranges only while this is set.
    var notKept = false
    /// Envelopes that came and wait to be verified and stored: they count
    /// against the pull window as much as those still to come.
    public var unstored: Int { pending.count }
    /// Authors a lazy link announced past our clock: the newest sequence
    /// announced, and since when we wait for it (`Replicator+Tree.swift`).
    var missing: [PublicKey: (sequence: UInt64, since: Double)] = [:]
    private var random: any RandomNumberGenerator

    public init(me: PublicKey, clock: VectorClock, random: some RandomNumberGenerator) {
        self.me = me
        self.clock = clock
        self.random = random
    }

    /// What we believe `link` holds.
    public func knownClock(of link: LinkID) -> VectorClock? { links[link]?.known }

    /// The last clock `link`'s peer stated (nil until it has).
    public func declaredClock(of link: LinkID) -> VectorClock? { links[link]?.declared }

    private mutating func jittered(_ now: Double) -> Double {
        now + Self.exchangeInterval * Double.random(in: 0.75...1.0, using: &random)
    }

    // MARK: events

    /// A link is up. `memory` is what was saved about this peer from an
    /// earlier link, if anything; `version` is what the link speaks.
    public mutating func linkUp(_ link: LinkID, now: Double, memory: PeerClocks? = nil, version: LinkProtocol = .newest) -> [Action] {
        links[link] = Link(known: VectorClock(), lastSent: clock, declared: memory?.declared, nextExchange: jittered(now),
                           pushTokens: pushBudget.burst, refilledAt: now, peerAsks: version.peerAsksForCatchUp, envelopeVersion: version.envelopeVersion,
                           pullTokens: pullBudget.burst, pullRefilledAt: now, tree: version.speaksOverlay)
        var actions: [Action]
        if let sent = memory?.sent {
            actions = messages(since: sent).map { .send(link, $0) }
        } else {
            actions = fullClock().map { .send(link, $0) }
        }
        actions.append(remember(link))
        return actions
    }

    public mutating func linkDown(_ link: LinkID) {
        links[link] = nil
    }

    public mutating func clockReceived(_ link: LinkID, entries: [Dependency], full: Bool, now: Double) -> [Action] {
        guard var l = links.removeValue(forKey: link) else { return [] }
        let admitted: [Dependency]
        if full {
            // A full clock is the truth about the peer, even if it went back.
            admitted = admit(entries, over: VectorClock())
            l.known = VectorClock(Dictionary(admitted.map { ($0.author, $0.sequence) }, uniquingKeysWith: max))
            l.declared = l.known
        } else {
            // What the peer reports replaces what we assumed (a push may have been lost).
            admitted = admit(entries, over: l.declared ?? l.known)
            for e in admitted {
                l.known[e.author] = e.sequence
                l.declared?[e.author] = e.sequence
            }
        }
        links[link] = l
        return ignored(link, entries.count - admitted.count) + catchUp(link) + pull(link, now: now) + [remember(link)]
    }

    /// The entries of a clock message that are taken on top of `base` (what
    /// the link declared before): every entry for an author we hold or it
    /// already declared, and entries for other authors while the link has
    /// fewer than `maximumUnknownAuthors` of them.
    func admit(_ entries: [Dependency], over base: VectorClock) -> [Dependency] {
        let isNew = { (e: Dependency) in self.clock[e.author] == 0 && base[e.author] == 0 && e.sequence > 0 }
        // The common case (a `stored` answer, a delta about authors we hold) costs no count.
        guard entries.contains(where: isNew) else { return shared(entries) }
        var unknown = base.entries.keys.reduce(0) { $0 + (clock[$1] == 0 ? 1 : 0) }
        return shared(entries.filter { e in
            guard isNew(e) else { return true }
            guard unknown < Self.maximumUnknownAuthors else { return false }
            unknown += 1
            return true
        })
    }

    /// `entries` with each author we hold named by the key in our own clock:
    /// a key decoded from a message is bytes of its own, so each link's
    /// clocks held a copy of every author's key (at 10,000 authors most of
    /// the 1.6-2.2 MB a link cost a relay); the same key's bytes are shared.
    func shared(_ entries: [Dependency]) -> [Dependency] {
        entries.map { e in
            guard let i = clock.entries.index(forKey: e.author) else { return e }
            return Dependency(author: clock.entries[i].key, sequence: e.sequence)
        }
    }

    private func ignored(_ link: LinkID, _ count: Int) -> [Action] {
        count > 0 ? [.clockEntriesIgnored(link, count)] : []
    }

    /// A clock named as changes to a base clock: rebuilt when the base is the
    /// clock this peer last declared here; otherwise the whole clock is asked for.
    public mutating func clockSinceReceived(_ link: LinkID, base: ClockDigest, entries: [Dependency], now: Double) -> [Action] {
        guard var l = links[link] else { return [] }
        guard var rebuilt = l.declared, ClockDigest(rebuilt) == base else {
            return [.send(link, .fullClockWanted)]
        }
        let admitted = admit(entries, over: rebuilt)
        for e in admitted { rebuilt[e.author] = e.sequence }
        l.declared = rebuilt
        // As good as a full clock: the truth about the peer.
        l.known = rebuilt
        links[link] = l
        return ignored(link, entries.count - admitted.count) + catchUp(link) + pull(link, now: now) + [remember(link)]
    }

    /// The peer stored what we sent: what we know of its clock moves up (never
    /// down: a push on its way stays counted), and so does what it declared.
    public mutating func storedReceived(_ link: LinkID, entries: [Dependency], now: Double) -> [Action] {
        guard var l = links.removeValue(forKey: link) else { return [] }
        let admitted = admit(entries, over: l.declared ?? l.known)
        for e in admitted {
            l.known[e.author] = max(l.known[e.author], e.sequence)
            l.declared?[e.author] = e.sequence
        }
        links[link] = l
        // Asking for more reads the link's whole clock: only when the answer
        // names something we lack (usually it names what we sent it). What
        // was wanted before is asked for at the tick, as its budget refills.
        let lacking = admitted.contains { $0.sequence > clock[$0.author] }
        return ignored(link, entries.count - admitted.count) + (lacking ? pull(link, now: now) : [])
    }

    /// The peer could not rebuild our clock: send it whole.
    public mutating func fullClockWanted(_ link: LinkID) -> [Action] {
        guard var l = links[link] else { return [] }
        l.lastSent = clock
        links[link] = l
        return fullClock().map { .send(link, $0) } + [remember(link)]
    }

    /// `sendStored` for everything the peer's known clock lacks, on a link
    /// whose peer does not ask for it (version 1).
    private mutating func catchUp(_ link: LinkID) -> [Action] {
        guard links[link]?.peerAsks == false, var l = links.removeValue(forKey: link) else { return [] }
        var actions: [Action] = []
        for (author, ours) in clock.entries.sorted(by: { $0.key < $1.key }) where ours > l.known[author] {
            actions.append(.sendStored(link, author: author, from: l.known[author] + 1, through: ours))
            l.known[author] = ours
        }
        links[link] = l
        return actions
    }

    /// Authors a link may have asks waiting for (`waitingAsks`) at once;
    /// past it, an ask for what is not stored yet is dropped, as before
    /// (the asker asks again after `pullTimeout`).
    public static let maximumWaitingAsks = 1_024

    public mutating func requestReceived(_ link: LinkID, ranges: [GossipRequest]) -> [Action] {
        guard var l = links.removeValue(forKey: link) else { return [] }
        var actions: [Action] = []
        for r in ranges where r.from >= 1 {
            let end = r.from &+ max(r.count, 1) &- 1
            let last = min(clock[r.author], end)
            if r.from <= last {
                // On its way: not pushed again.
                l.known[r.author] = max(l.known[r.author], last)
                actions.append(.sendStored(link, author: r.author, from: r.from, through: last))
            }
            // The rest is on its way into the store here (a relay stores every
            // few milliseconds what it forwarded ahead, and a link that pushed
            // it ahead made the peer ask for what came before): sent once it
            // is stored, not left for the peer's `pullTimeout`.
            let next = max(r.from, clock[r.author] &+ 1)
            guard end >= next, pending.contains(Dependency(author: r.author, sequence: next)) else { continue }
            if let waiting = l.waitingAsks[r.author] {
                l.waitingAsks[r.author] = min(waiting.lowerBound, next)...max(waiting.upperBound, end)
            } else if l.waitingAsks.count < Self.maximumWaitingAsks {
                l.waitingAsks[r.author] = next...end
            }
        }
        links[link] = l
        return actions
    }

    /// Asks that waited for what `stored` has just stored (`moved`: the
    /// authors whose clock it moved): sent now, as far as the clock goes,
    /// and counted as known on the link, so the push that follows does not
    /// send them again; what is still on its way keeps waiting, the rest
    /// is dropped (the peer asks again). Costs a look at each link when
    /// none waits (nearly always).
    mutating func answerWaitingAsks(moved: [Dependency], before: [PublicKey: UInt64]) -> [Action] {
        let waiting = links.compactMap { $0.value.waitingAsks.isEmpty ? nil : $0.key }
        guard !waiting.isEmpty else { return [] }
        let authors = Set(moved.filter { clock[$0.author] > (before[$0.author] ?? 0) }.map(\.author)).sorted()
        var actions: [Action] = []
        for id in waiting.sorted() {
            guard var l = links.removeValue(forKey: id) else { continue }
            for author in authors {
                guard let asked = l.waitingAsks[author], clock[author] >= asked.lowerBound else { continue }
                let last = min(clock[author], asked.upperBound)
                actions.append(.sendStored(id, author: author, from: asked.lowerBound, through: last))
                l.known[author] = max(l.known[author], last)
                let rest = last &+ 1
                l.waitingAsks[author] = rest <= asked.upperBound && pending.contains(Dependency(author: author, sequence: rest))
                    ? rest...asked.upperBound : nil
            }
            links[id] = l
        }
        return actions
    }

    /// Envelopes from a link: the ones already held or already being checked
    /// are dropped here, before any verification.
    public mutating func envelopesReceived(_ link: LinkID, _ batch: [CarriedEnvelope], now: Double) -> [Action] {
        // Taken out while changed (a copy would copy its clocks on the first
        // write), and put back below unless the link goes.
        guard var l = links.removeValue(forKey: link) else { return [] }
        var fresh: [CarriedEnvelope] = []
        var limited = 0
        var answered = false
        // Per author: live pushes, and how many of them were held already.
        var pushed: [PublicKey: (count: Int, duplicates: Int)] = [:]
        var crossed = 0
        var overflow = 0
        l.pushTokens = min(pushBudget.burst, l.pushTokens + max(0, now - l.refilledAt) * pushBudget.perSecond)
        l.refilledAt = now
        for c in batch {
            let e = c.envelope
            let key = Dependency(author: e.author, sequence: e.sequence)
            // Not asked for: a live push, which spends budget, whatever the
            // link declared. Over budget it is not taken, and the link is
            // dropped below.
            if l.asked[e.author]?.answer(e.sequence, now: now) == true {
                answered = true
            } else {
                guard l.pushTokens >= 1 else {
                    limited += 1
                    continue
                }
                l.pushTokens -= 1
                let held = e.sequence <= clock[e.author] || pending.contains(key)
                if held, e.sequence <= l.askedThrough[e.author] ?? 0 {
                    // What we asked for, which a push of the same envelope
                    // answered first: the two crossed on the link. A
                    // duplicate, but no sign of a second path to its author.
                    crossed += 1
                } else {
                    let so = pushed[e.author] ?? (0, 0)
                    pushed[e.author] = (so.count + 1, so.duplicates + (held ? 1 : 0))
                }
            }
            // The sender holds it: remember, so we do not push it back.
            l.known[e.author] = max(l.known[e.author], e.sequence)
            guard e.sequence > clock[e.author], c.hops < CarriedEnvelope.maximumHops, !pending.contains(key) else { continue }
            guard pending.count < pendingBound else {
                overflow += 1
                continue
            }
            pending.insert(key)
            fresh.append(c)
        }
        guard limited == 0 else {
            // What came within the budget is still taken; the link goes.
            links[link] = nil
            return (fresh.isEmpty ? [] : [.verifyAndStore(link, fresh)]) + [.pushesLimited(link, limited)]
        }
        links[link] = l
        return (fresh.isEmpty ? [] : [.verifyAndStore(link, fresh)]) + pushedDuplicates(link, pushed, crossed: crossed)
            + (overflow > 0 ? [.pendingFull(link, overflow)] : []) + (answered ? pullWhenHalfAnswered(link, now: now) : [])
    }

    /// The shell's answer to `verifyAndStore`: what was stored, how the
    /// clock moved, and how many failed verification.
    public mutating func stored(from link: LinkID?, checked: [CarriedEnvelope], inserted: [CarriedEnvelope], invalid: Int,
                                newClock: [Dependency], now: Double) -> [Action] {
        for c in checked { pending.remove(Dependency(author: c.envelope.author, sequence: c.envelope.sequence)) }
        let before = Dictionary(newClock.map { ($0.author, clock[$0.author]) }, uniquingKeysWith: max)
        for d in newClock { clock[d.author] = max(clock[d.author], d.sequence) }
        if inserted.count < checked.count, checked.contains(where: { $0.envelope.sequence > clock[$0.envelope.author] }) { notKept = true }
        if notKept, !inserted.isEmpty { notKept = forgetNotKept() }
        var actions: [Action] = []
        // Taken out while changed: a copy of it would copy its clocks (copy on write), per batch.
        if let link, var l = links.removeValue(forKey: link) {
            l.invalid += invalid
            // Tell the sender what is now stored here (its "stored" state), and
            // count it as declared, so the clock digests on both ends still agree.
            // Not saved (no `.remember`): neither end saves it, so the saved
            // clocks still match each other as of the last exchange.
            let authors = Set(inserted.map(\.envelope.author))
            if !authors.isEmpty {
                let entries = authors.map { Dependency(author: $0, sequence: clock[$0]) }.sorted { $0.author < $1.author }
                for e in entries { l.lastSent[e.author] = e.sequence }
                actions.append(.send(link, .stored(entries)))
            }
            links[link] = l
            if l.invalid > Self.invalidLimit {
                links[link] = nil
                actions.append(.disconnect(link, reason: "\(l.invalid) envelopes failed verification"))
            } else if inserted.contains(where: { $0.envelope.sequence > clock[$0.envelope.author] + 1 }) {
                // Held past a gap: the link holds what is missing (it sent
                // more), and is asked for it within the pull window.
                actions += pull(link, now: now)
            } else if !checked.isEmpty, !l.asked.isEmpty {
                // A catch-up from this link: what waited to be stored is out of
                // the window now, so the next ranges go once half of it is.
                actions += pullWhenHalfAnswered(link, now: now)
            }
        }
        // Only what continues its author's chain here goes on: a link pushed
        // an envelope held past a gap would count its author known through
        // it while lacking the gap, so nobody would push it what fills the
        // gap, and it would ask us for a range we could not serve yet (the
        // relay test's stall: 30 s, the pull timeout).
        let continuing = inserted.filter { $0.envelope.sequence <= clock[$0.envelope.author] }
        // Asks that waited for these first: what they are sent is not pushed again.
        actions += answerWaitingAsks(moved: newClock, before: before)
        actions += push(continuing.map { CarriedEnvelope(hops: $0.hops &+ 1, envelope: $0.envelope) }, except: link)
        actions += announceFilledGaps(before: before, pushed: continuing, except: link)
        return actions
    }
    /// Verified envelopes that continue their authors' chains here (the
    /// shell checked them against the store): pushed now, before they are
    /// stored, so the store's write is off the forwarding path. They may
    /// come from several links: none is sent back what it brought, since
    /// `envelopesReceived` counted them as known there. `stored` does not
    /// push them again: the links count them as known.
    public mutating func verifiedAhead(_ batch: [CarriedEnvelope]) -> [Action] {
        push(batch.map { CarriedEnvelope(hops: $0.hops &+ 1, envelope: $0.envelope) }, except: nil)
    }

    /// This node posted (already stored durably).
    public mutating func localPost(_ envelope: Envelope) -> [Action] {
        clock[envelope.author] = max(clock[envelope.author], envelope.sequence)
        return push([CarriedEnvelope(hops: 0, envelope: envelope)], except: nil)
    }

    /// Time passes: clock deltas to links whose exchange is due, and asks
    /// for catch-up as the pull budget refills.
    public mutating func tick(now: Double) -> [Action] {
        var actions = treeTick(now: now)
        for id in links.keys.sorted() { actions += pull(id, now: now) }
        for id in links.keys.sorted() {
            guard var l = links[id], now >= l.nextExchange else { continue }
            l.exchanges += 1
            if l.exchanges % Self.fullClockEvery == 0 {
                // The peer rebuilds our whole clock from it and resets its beliefs.
                actions += messages(since: l.lastSent).map { .send(id, $0) }
            } else {
                actions += split(changes(since: l.lastSent), first: { .clock(entries: $0, full: false) }).map { .send(id, $0) }
            }
            l.lastSent = clock
            l.nextExchange = jittered(now)
            links[id] = l
            actions.append(remember(id))
        }
        return actions
    }

    // MARK: helpers

    private func remember(_ link: LinkID) -> Action {
        let l = links[link]
        return .remember(link, PeerClocks(sent: l?.lastSent ?? clock, declared: l?.declared))
    }
}
