import Crypto
import Gossip
import Testing

/// Tree push on version-4 links (`Replicator+Tree.swift`), as event lists:
/// one tree per author.
@Suite("Tree push: per author, eager and lazy links, prune on a duplicate, graft on a missing id")
struct TreePushTests {
    static func carried(_ e: Envelope) -> CarriedEnvelope { CarriedEnvelope(hops: 0, envelope: e) }

    static func sends(_ actions: [Replicator.Action]) -> [(LinkID, GossipMessage)] {
        actions.compactMap { if case let .send(id, m) = $0 { (id, m) } else { nil } }
    }

    /// A replicator with links 1, 2 (version 4) and 3 (version 3), clocks exchanged.
    static func replicator(me: PublicKey? = nil) throws -> Replicator {
        var r = Replicator(me: try me ?? SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v4)
        _ = r.linkUp(2, now: 0, version: .v4)
        _ = r.linkUp(3, now: 0, version: .v3)
        for id in 1...3 { _ = r.clockReceived(id, entries: [], full: true, now: 0) }
        return r
    }

    /// Takes `e` from `link` and stores it.
    static func take(_ r: inout Replicator, _ e: Envelope, from link: LinkID, now: Double) -> [Replicator.Action] {
        let received = r.envelopesReceived(link, [carried(e)], now: now)
        return received + r.stored(from: link, checked: [carried(e)], inserted: [carried(e)], invalid: 0,
                                   newClock: [Dependency(author: e.author, sequence: e.sequence)], now: now)
    }

    @Test("a push of an author's envelopes that brings only what is held prunes that author on the link, both ends; its ids go at the next tick, other authors still in full")
    func pruneOnDuplicate() throws {
        var r = try Self.replicator()
        let a = try Author(), b = try Author()
        let a1 = try a.envelope(1)
        _ = Self.take(&r, a1, from: 1, now: 1)
        // Link 2 brings a's first again: a duplicate, and a is pruned on link 2.
        let again = r.envelopesReceived(2, [Self.carried(a1)], now: 1)
        #expect(again == [.duplicates(2, 1), .send(2, .prune([a.key.publicKey]))])
        #expect(r.isEager(2, for: a.key.publicKey) == false && r.isEager(1, for: a.key.publicKey) == true)
        #expect(r.lazyAuthors(of: 2) == 1)
        // A second duplicate of a pruned author is counted and pruned no more.
        #expect(r.envelopesReceived(2, [Self.carried(a1)], now: 1) == [.duplicates(2, 1)])
        // a's next from link 1: in full to the version-3 link, as an id to link 2 at the next tick.
        let a2 = try a.envelope(2, previous: a1.id)
        let pushed = Self.sends(Self.take(&r, a2, from: 1, now: 2))
        #expect(pushed.contains { $0.0 == 3 && $0.1 == .envelopes([CarriedEnvelope(hops: 1, envelope: a2)]) })
        #expect(!pushed.contains { if $0.0 == 2, case .envelopes = $0.1 { true } else { false } })
        #expect(Self.sends(r.tick(now: 3)).contains { $0.0 == 2 && $0.1 == .ihave([Dependency(author: a.key.publicKey, sequence: 2)]) })
        // b has its own tree: its first envelope goes to link 2 in full.
        let b1 = try b.envelope(1)
        #expect(Self.sends(Self.take(&r, b1, from: 1, now: 4)).contains { $0.0 == 2 && $0.1 == .envelopes([CarriedEnvelope(hops: 1, envelope: b1)]) })
        // The version-3 link is never lazy, whatever it is told.
        r.pruneReceived(3, authors: [a.key.publicKey])
        #expect(r.isEager(3, for: a.key.publicKey) == true)
    }

    @Test("a batch of many envelopes of two authors: a link that lacks all of it gets it whole; one that holds part of an author's run gets only what it lacks; what each is known to hold after is each author's highest it was sent, so a second push of the same sends nothing")
    func batchPushedPerAuthor() throws {
        var r = try Self.replicator()
        let a = try Author(), b = try Author()
        var chainA: [Envelope] = [], chainB: [Envelope] = []
        for n in 1...40 { chainA.append(try a.envelope(UInt64(n), previous: chainA.last?.id ?? .zero)) }
        for n in 1...3 { chainB.append(try b.envelope(UInt64(n), previous: chainB.last?.id ?? .zero)) }
        // Link 2 already holds a's first ten (it says so in its clock).
        _ = r.clockReceived(2, entries: [Dependency(author: a.key.publicKey, sequence: 10)], full: true, now: 1)
        let batch = (chainA + chainB).map(Self.carried)
        let sent = Self.sends(r.verifiedAhead(batch))
        let to1 = sent.first { $0.0 == 1 }?.1, to2 = sent.first { $0.0 == 2 }?.1
        #expect(to1 == .envelopes(batch.map { CarriedEnvelope(hops: 1, envelope: $0.envelope) }))
        #expect(to2 == .envelopes(Array(batch.dropFirst(10)).map { CarriedEnvelope(hops: 1, envelope: $0.envelope) }))
        #expect(r.knownClock(of: 1)?[a.key.publicKey] == 40 && r.knownClock(of: 1)?[b.key.publicKey] == 3)
        #expect(r.knownClock(of: 2)?[a.key.publicKey] == 40 && r.knownClock(of: 2)?[b.key.publicKey] == 3)
        #expect(Self.sends(r.verifiedAhead(batch)).isEmpty)
    }

    @Test("envelopes held past a gap are not pushed on (a link would count them known and never get the gap); once the gap fills, it goes in full and the rest as ids to tree links, which ask for it; a request is served then")
    func gapFilled() throws {
        var r = try Self.replicator()
        let a = try Author()
        let a1 = try a.envelope(1), a2 = try a.envelope(2, previous: a1.id), a3 = try a.envelope(3, previous: a2.id)
        let ahead = [a2, a3].map(Self.carried)
        _ = r.envelopesReceived(1, ahead, now: 1)
        let held = r.stored(from: 1, checked: ahead, inserted: ahead, invalid: 0, newClock: [Dependency(author: a.key.publicKey, sequence: 0)], now: 1)
        #expect(!Self.sends(held).contains { if case .envelopes = $0.1 { true } else { false } }, "\(held)")
        _ = r.envelopesReceived(1, [Self.carried(a1)], now: 2)
        let filled = Self.sends(r.stored(from: 1, checked: [Self.carried(a1)], inserted: [Self.carried(a1)], invalid: 0,
                                         newClock: [Dependency(author: a.key.publicKey, sequence: 3)], now: 2))
        for link in [2, 3] {
            #expect(filled.contains { $0.0 == link && $0.1 == .envelopes([CarriedEnvelope(hops: 1, envelope: a1)]) }, "\(filled)")
        }
        #expect(filled.contains { $0.0 == 2 && $0.1 == .ihave([Dependency(author: a.key.publicKey, sequence: 3)]) }, "\(filled)")
        #expect(!filled.contains { $0.0 == 3 && $0.1 == .ihave([Dependency(author: a.key.publicKey, sequence: 3)]) }, "a version-3 link learns it by the clock exchange")
        #expect(!filled.contains { if $0.0 == 1, case .envelopes = $0.1 { true } else if $0.0 == 1, case .ihave = $0.1 { true } else { false } },
                "nothing back to where it came from")
        #expect(r.requestReceived(2, ranges: [GossipRequest(author: a.key.publicKey, from: 2, count: 2)]) == [.sendStored(2, author: a.key.publicKey, from: 2, through: 3)])
    }

    @Test("a prune names only authors we hold (made-up ones cost nothing), never ourselves; a graft makes an author go in full again")
    func pruneAndGraftReceived() throws {
        let me = try Author(), a = try Author()
        var r = try Self.replicator(me: me.key.publicKey)
        let e1 = try me.envelope(1)
        _ = r.localPost(e1)
        let a1 = try a.envelope(1)
        _ = Self.take(&r, a1, from: 2, now: 0)
        let strangers = try (0..<100).map { _ in try SigningKey.generate().publicKey }
        r.pruneReceived(1, authors: [me.key.publicKey, a.key.publicKey] + strangers)
        #expect(r.lazyAuthors(of: 1) == 1)
        // Our own next post still goes in full: we are the root of our tree.
        let e2 = try me.envelope(2, previous: e1.id)
        #expect(Self.sends(r.localPost(e2)).contains { $0.0 == 1 && $0.1 == .envelopes([Self.carried(e2)]) })
        // a's next goes to link 1 as an id, at the next tick.
        let a2 = try a.envelope(2, previous: a1.id)
        #expect(!Self.sends(Self.take(&r, a2, from: 2, now: 1)).contains { if $0.0 == 1, case .envelopes = $0.1 { true } else { false } })
        #expect(Self.sends(r.tick(now: 1)).contains { $0.0 == 1 && $0.1 == .ihave([Dependency(author: a.key.publicKey, sequence: 2)]) })
        r.graftReceived(1, authors: [a.key.publicKey])
        let a3 = try a.envelope(3, previous: a2.id)
        #expect(Self.sends(Self.take(&r, a3, from: 2, now: 2)).contains { $0.0 == 1 && $0.1 == .envelopes([CarriedEnvelope(hops: 1, envelope: a3)]) })
    }

    @Test("an id announced and still missing after graftTimeout grafts its author on the announcer's link and is asked for; one that arrives in time costs nothing")
    func graftOnMissing() throws {
        var r = try Self.replicator()
        let a = try Author(), b = try Author()
        // Link 2 announces a's 1...3: within the timeout nothing happens.
        _ = r.ihaveReceived(2, entries: [Dependency(author: a.key.publicKey, sequence: 3)], now: 10)
        #expect(r.missingCount == 1)
        #expect(requests(r.tick(now: 10 + Replicator.graftTimeout / 2)).isEmpty)
        let late = r.tick(now: 10 + Replicator.graftTimeout)
        #expect(Self.sends(late).contains { $0.0 == 2 && $0.1 == .graft([a.key.publicKey]) })
        #expect(requests(late) == [GossipRequest(author: a.key.publicKey, from: 1, count: 3)])
        #expect(r.isEager(2, for: a.key.publicKey) == true)
        // b's announced id arrives through the tree before the timeout: no graft, no request.
        r = try Self.replicator()
        _ = r.ihaveReceived(1, entries: [Dependency(author: b.key.publicKey, sequence: 1)], now: 20)
        _ = Self.take(&r, try b.envelope(1), from: 2, now: 20.2)
        let quiet = r.tick(now: 22)
        #expect(!Self.sends(quiet).contains { if case .graft = $0.1 { true } else { false } })
        #expect(requests(quiet).isEmpty)
        #expect(r.missingCount == 0)
    }

    @Test("an announcer that went away is forgotten: nothing is grafted or asked of a link that is down")
    func announcerGone() throws {
        var r = try Self.replicator()
        let a = try Author()
        _ = r.ihaveReceived(2, entries: [Dependency(author: a.key.publicKey, sequence: 5)], now: 0)
        r.linkDown(2)
        let actions = r.tick(now: 5)
        #expect(!Self.sends(actions).contains { $0.0 == 2 })
        #expect(r.missingCount == 0)
    }

    @Test("a request and a push of the same envelope that cross on the link (the author posts as we catch up) are a duplicate, not a prune: its next post still comes in full (CI, PeerListTests)")
    func crossedAnswerDoesNotPrune() throws {
        var r = try Self.replicator()
        let a = try Author()
        let a1 = try a.envelope(1), a2 = try a.envelope(2, previous: a1.id)
        // Link 1 holds a's 1...2: asked for.
        let asked = Self.sends(r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 2)], full: false, now: 1))
        #expect(asked.contains { $0.0 == 1 && $0.1 == .request([GossipRequest(author: a.key.publicKey, from: 1, count: 2)]) })
        // a posts its 2nd as the request crosses: the push comes first and takes one answer…
        _ = Self.take(&r, a2, from: 1, now: 1)
        // (and a later pull forgets the range once 2 is held: the answer is still on its way)
        _ = r.tick(now: 1.5)
        // …then the answer, 1 and 2: 2 is held, and the link stays eager for a.
        let answer = r.envelopesReceived(1, [Self.carried(a1), Self.carried(a2)], now: 1)
        #expect(answer.contains { if case .duplicates(1, _) = $0 { true } else { false } })
        #expect(!Self.sends(answer).contains { if case .prune = $0.1 { true } else { false } })
        #expect(r.isEager(1, for: a.key.publicKey) == true)
        // Past what was asked, a held push is a second path again: pruned.
        let a3 = try a.envelope(3, previous: a2.id)
        _ = Self.take(&r, a3, from: 2, now: 2)
        #expect(Self.sends(r.envelopesReceived(1, [Self.carried(a3)], now: 2)).contains { $0.0 == 1 && $0.1 == .prune([a.key.publicKey]) })
    }
}
