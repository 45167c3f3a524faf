import Crypto
import Gossip
import Testing

/// Tree push on version-4 links (`Replicator+Tree.swift`), as event lists.
@Suite("Tree push: eager and lazy links, prune on a duplicate, graft on a missing id")
struct TreePushTests {
    static func carried(_ e: Envelope) -> CarriedEnvelope { CarriedEnvelope(hops: 0, envelope: e) }

    static func sends(_ actions: [Replicator.Action]) -> [(LinkID, GossipMessage)] {
        actions.compactMap { if case let .send(id, m) = $0 { (id, m) } else { nil } }
    }

    /// A replicator with links 1, 2 (version 4) and 3 (version 3), clocks exchanged.
    static func replicator() throws -> Replicator {
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v4)
        _ = r.linkUp(2, now: 0, version: .v4)
        _ = r.linkUp(3, now: 0, version: .v3)
        for id in 1...3 { _ = r.clockReceived(id, entries: [], full: true, now: 0) }
        return r
    }

    @Test("a push that brings only what is held prunes its link, both ends; a pruned link gets ids at the next tick, not envelopes")
    func pruneOnDuplicate() throws {
        var r = try Self.replicator()
        let a = try Author()
        let e1 = try a.envelope(1)
        // Link 1 brings it first; it is stored; link 2 brings it again.
        let first = r.envelopesReceived(1, [Self.carried(e1)], now: 1)
        #expect(first == [.verifyAndStore(1, [Self.carried(e1)])])
        _ = r.stored(from: 1, checked: [Self.carried(e1)], inserted: [Self.carried(e1)], invalid: 0,
                     newClock: [Dependency(author: a.key.publicKey, sequence: 1)], now: 1)
        let again = r.envelopesReceived(2, [Self.carried(e1)], now: 1)
        #expect(again == [.duplicates(2, 1), .send(2, .prune)])
        #expect(r.isEager(2) == false && r.isEager(1) == true)
        // A second duplicate on a lazy link is counted, and pruned no more.
        #expect(r.envelopesReceived(2, [Self.carried(e1)], now: 1) == [.duplicates(2, 1)])
        // A new envelope from link 1 goes on in full to the version-3 link, as an id to lazy link 2.
        let e2 = try a.envelope(2, previous: e1.id)
        _ = r.envelopesReceived(1, [Self.carried(e2)], now: 2)
        let pushed = Self.sends(r.stored(from: 1, checked: [Self.carried(e2)], inserted: [Self.carried(e2)], invalid: 0,
                                         newClock: [Dependency(author: a.key.publicKey, sequence: 2)], now: 2))
        #expect(pushed.contains { $0.0 == 3 && $0.1 == .envelopes([CarriedEnvelope(hops: 1, envelope: e2)]) })
        #expect(!pushed.contains { $0.0 == 2 })
        let tick = Self.sends(r.tick(now: 3))
        #expect(tick.contains { $0.0 == 2 && $0.1 == .ihave([Dependency(author: a.key.publicKey, sequence: 2)]) })
        // The version-3 link is never lazy, whatever it is told.
        r.pruneReceived(3)
        #expect(r.isEager(3) == true)
    }

    @Test("the receiver of a prune sends ids only; a graft makes it push in full again")
    func pruneAndGraftReceived() throws {
        var r = try Self.replicator()
        let me = try Author()
        r = Replicator(me: me.key.publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v4)
        _ = r.clockReceived(1, entries: [], full: true, now: 0)
        r.pruneReceived(1)
        let e1 = try me.envelope(1)
        #expect(Self.sends(r.localPost(e1)).isEmpty)
        #expect(Self.sends(r.tick(now: 1)).contains { $0.1 == .ihave([Dependency(author: me.key.publicKey, sequence: 1)]) })
        r.graftReceived(1)
        let e2 = try me.envelope(2, previous: e1.id)
        #expect(Self.sends(r.localPost(e2)).map(\.1) == [.envelopes([Self.carried(e2)])])
    }

    @Test("an id announced and still missing after graftTimeout grafts its announcer and is asked for; one that arrives in time costs nothing")
    func graftOnMissing() throws {
        var r = try Self.replicator()
        let a = try Author(), b = try Author()
        // Link 2 announces a's 1...3: within the timeout nothing happens.
        _ = r.ihaveReceived(2, entries: [Dependency(author: a.key.publicKey, sequence: 3)], now: 10)
        #expect(r.missingCount == 1)
        #expect(requests(r.tick(now: 10 + Replicator.graftTimeout / 2)).isEmpty)
        let late = r.tick(now: 10 + Replicator.graftTimeout)
        #expect(Self.sends(late).contains { $0.0 == 2 && $0.1 == .graft })
        #expect(requests(late) == [GossipRequest(author: a.key.publicKey, from: 1, count: 3)])
        #expect(r.isEager(2) == true)
        // b's announced id arrives through the tree before the timeout: no graft, no request.
        r = try Self.replicator()
        _ = r.ihaveReceived(1, entries: [Dependency(author: b.key.publicKey, sequence: 1)], now: 20)
        let e = try b.envelope(1)
        _ = r.envelopesReceived(2, [Self.carried(e)], now: 20.2)
        _ = r.stored(from: 2, checked: [Self.carried(e)], inserted: [Self.carried(e)], invalid: 0,
                     newClock: [Dependency(author: b.key.publicKey, sequence: 1)], now: 20.2)
        let quiet = r.tick(now: 22)
        #expect(!Self.sends(quiet).contains { $0.1 == .graft })
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
}
