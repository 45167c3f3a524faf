import Crypto
import Gossip
import Testing

/// The ranges of the `request` messages among `actions`.
func requests(_ actions: [Replicator.Action]) -> [GossipRequest] {
    actions.flatMap { action -> [GossipRequest] in
        if case let .send(_, .request(ranges)) = action { return ranges }
        return []
    }
}

/// Catch-up that the receiver asks for (link version 2, issue 13 finding 3).
@Suite("Catch-up asked for by the side that lacks it: windowed, paced, asked again when it stalls")
struct PullTests {
    static func sendsStored(_ actions: [Replicator.Action]) -> Bool {
        actions.contains { if case .sendStored = $0 { true } else { false } }
    }

    @Test("a peer on a version-2 link is sent nothing it did not ask for; a version-1 peer is sent what its clock lacks")
    func versions() throws {
        let author = try SigningKey.generate().publicKey
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock([author: 10]), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v2)
        _ = r.linkUp(2, now: 0, version: .v1)
        #expect(!Self.sendsStored(r.clockReceived(1, entries: [], full: true, now: 0)))
        #expect(Self.sendsStored(r.clockReceived(2, entries: [], full: true, now: 0)))
        // Asked, it answers; what it sends is then not pushed again.
        #expect(r.requestReceived(1, ranges: [GossipRequest(author: author, from: 3, count: 5)])
            == [.sendStored(1, author: author, from: 3, through: 7)])
        #expect(r.knownClock(of: 1)?[author] == 7)
    }

    @Test("a link that holds nothing we lack is not looked through again at each tick, yet is asked at once when its clock moves, by a clock or an ihave")
    func nothingWantedUntilItMoves() throws {
        let author = try SigningKey.generate().publicKey, other = try SigningKey.generate().publicKey
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock([author: 10, other: 3]), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .newest)
        let held = [Dependency(author: author, sequence: 10), Dependency(author: other, sequence: 3)].sorted { $0.author < $1.author }
        #expect(requests(r.clockReceived(1, entries: held, full: true, now: 0)).isEmpty)
        for second in 1...5 { #expect(requests(r.tick(now: Double(second))).isEmpty) }
        // Its clock moves: what it now holds is asked for (at once or at the next tick).
        let moved = [Dependency(author: author, sequence: 12)]
        var asked = requests(r.clockReceived(1, entries: moved, full: false, now: 6))
        if asked.isEmpty { asked = requests(r.tick(now: 7)) }
        #expect(asked == [GossipRequest(author: author, from: 11, count: 2)])
        // An announcement moves it too (asked for once the graft timeout has passed).
        _ = r.ihaveReceived(1, entries: [Dependency(author: other, sequence: 4)], now: 8)
        asked = requests(r.tick(now: 8 + Replicator.graftTimeout + 1)) + requests(r.tick(now: 8 + Replicator.graftTimeout + 2))
        #expect(asked.contains { $0.author == other && $0.from == 4 })
    }

    @Test("a link's clocks name an author we hold by our own key's bytes, not the copy each message decodes; authors we do not hold keep theirs")
    func sharedKeys() throws {
        let author = try SigningKey.generate().publicKey, stranger = try SigningKey.generate().publicKey
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock([author: 10]), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .newest)
        // As a message decodes them: bytes of their own.
        let decoded = try PublicKey(bytes: author.bytes.map { $0 }), decodedStranger = try PublicKey(bytes: stranger.bytes.map { $0 })
        let base = { (key: PublicKey) in key.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(base(decoded) != base(author))
        let clock = [Dependency(author: decoded, sequence: 4), Dependency(author: decodedStranger, sequence: 2)].sorted { $0.author < $1.author }
        _ = r.clockReceived(1, entries: clock, full: true, now: 0)
        for held in [try #require(r.knownClock(of: 1)), try #require(r.declaredClock(of: 1))] {
            let keys = held.entries.keys
            #expect(keys.first { $0 == author }.map(base) == base(author), "shared with our clock")
            #expect(keys.first { $0 == stranger }.map(base) == base(decodedStranger), "not ours: as it came")
        }
        // A delta and a stored answer share too.
        _ = r.clockReceived(1, entries: [Dependency(author: try PublicKey(bytes: author.bytes.map { $0 }), sequence: 6)], full: false, now: 1)
        _ = r.storedReceived(1, entries: [Dependency(author: try PublicKey(bytes: author.bytes.map { $0 }), sequence: 7)], now: 2)
        #expect(try #require(r.knownClock(of: 1)).entries.keys.first { $0 == author }.map(base) == base(author))
        #expect(r.knownClock(of: 1)?[author] == 7)
    }

    @Test("a clock's stamp: new for every clock made and every change, shared by an unchanged copy; equality is the entries alone")
    func clockStamps() throws {
        let author = try SigningKey.generate().publicKey
        var a = VectorClock([author: 1])
        let b = VectorClock([author: 1])
        #expect(a == b && a.stamp != b.stamp)
        let copy = a
        #expect(copy.stamp == a.stamp)
        a[author] = 2
        #expect(a.stamp != copy.stamp && a != copy)
        a[author] = 1
        #expect(a == copy && a.stamp != copy.stamp)
    }

    @Test("links that hold the same history share it out: what one was asked for is not asked of another, and at most maximumPullingLinks are asked at once; a share that stalls for pullTimeout is asked again, once, of another link")
    func sharedOut() throws {
        let a = try Author(), b = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        let window = UInt64(Replicator.pullWindow)
        let declared = [Dependency(author: a.key.publicKey, sequence: window), Dependency(author: b.key.publicKey, sequence: window)]
            .sorted { $0.author < $1.author }
        _ = r.linkUp(1, now: 0)
        _ = r.linkUp(2, now: 0)
        let first = requests(r.clockReceived(1, entries: declared, full: true, now: 0))
        let second = requests(r.clockReceived(2, entries: declared, full: true, now: 0))
        // The first link is asked for one author's whole history (its window), the second for the other's.
        #expect(first == [GossipRequest(author: declared[0].author, from: 1, count: window)])
        #expect(second == [GossipRequest(author: declared[1].author, from: 1, count: window)])
        // A third link that holds the same is not asked while two are at work.
        #expect(Replicator.maximumPullingLinks == 2)
        _ = r.linkUp(3, now: 0)
        #expect(requests(r.clockReceived(3, entries: declared, full: true, now: 0)).isEmpty)
        // Nothing comes: after the timeout each share is asked again, once, and not of the link that stalled on it.
        var askedOf: [PublicKey: [LinkID]] = [:]
        for action in r.tick(now: Replicator.pullTimeout + 1) {
            if case let .send(link, .request(ranges)) = action { for range in ranges { askedOf[range.author, default: []].append(link) } }
        }
        #expect(askedOf[declared[0].author]?.count == 1 && askedOf[declared[0].author] != [1], "\(askedOf)")
        #expect(askedOf[declared[1].author]?.count == 1 && askedOf[declared[1].author] != [2], "\(askedOf)")
    }

    @Test("at most pullWindow envelopes are asked for at once; more once half have come; none faster than the pull budget")
    func window() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 0, perSecond: 0)
        _ = r.linkUp(1, now: 0)
        let declared = UInt64(Replicator.pullWindow) * 3
        var asked = requests(r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: declared)], full: true, now: 0))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: 1, count: UInt64(Replicator.pullWindow))])
        // Nothing more while the window is full, however long it waits (short of the timeout).
        #expect(requests(r.tick(now: 1)).isEmpty)
        // Half the window answered (free: the push budget is zero) and stored: the next part is asked for.
        let half = Replicator.pullWindow / 2
        let envelopes = try PushBudgetTests.pushes(a, 1...UInt64(half))
        let actions = r.envelopesReceived(1, envelopes, now: 2)
        #expect(!actions.contains { if case .pushesLimited = $0 { true } else { false } }, "answers are free")
        #expect(requests(actions).isEmpty, "come but not yet stored: still in the window")
        asked = requests(r.stored(from: 1, checked: envelopes, inserted: envelopes, invalid: 0,
                                  newClock: [Dependency(author: a.key.publicKey, sequence: UInt64(half))], now: 2))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: UInt64(Replicator.pullWindow) + 1, count: UInt64(half))])

        // A pull budget of 10 at once and 10/s: 10 asked now, 5 more after half a second.
        var slow = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        slow.pullBudget = (burst: 10, perSecond: 10)
        _ = slow.linkUp(1, now: 0)
        asked = requests(slow.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 100)], full: true, now: 0))
        #expect(asked.map(\.count) == [10])
        asked = requests(slow.tick(now: 0.5))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: 11, count: 5)])
    }

    @Test("what came and waits to be stored fills the window: a sender that answers at once is asked no more until half is stored; at pendingLimit waiting, one more is not taken and is counted")
    func unstoredFillsTheWindow() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 0, perSecond: 0)
        _ = r.linkUp(1, now: 0)
        let window = UInt64(Replicator.pullWindow)
        let declared = window * 3
        #expect(requests(r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: declared)], full: true, now: 0)).count == 1)
        // The whole window comes before any of it is stored (a fast sender, a slow verify).
        let all = try PushBudgetTests.pushes(a, 1...window)
        let came = r.envelopesReceived(1, all, now: 1)
        #expect(requests(came).isEmpty && r.unstored == Int(window))
        #expect(requests(r.tick(now: 2)).isEmpty, "the tick asks nothing while the window waits to be stored")
        // A quarter stored: three quarters still wait, nothing asked.
        let quarter = Int(window / 4)
        #expect(requests(r.stored(from: 1, checked: Array(all[..<quarter]), inserted: Array(all[..<quarter]), invalid: 0,
                                  newClock: [Dependency(author: a.key.publicKey, sequence: UInt64(quarter))], now: 3)).isEmpty)
        // Half stored: the next half window is asked for.
        let half = Int(window / 2)
        let asked = requests(r.stored(from: 1, checked: Array(all[quarter..<half]), inserted: Array(all[quarter..<half]), invalid: 0,
                                      newClock: [Dependency(author: a.key.publicKey, sequence: UInt64(half))], now: 4))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: window + 1, count: window / 2)])

        // The bound on what waits: at it, taken; one past it, not taken and counted.
        var bounded = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        bounded.pendingBound = 4
        _ = bounded.linkUp(1, now: 0)
        _ = bounded.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 5)], full: true, now: 0)
        let five = Array(all[..<5])
        let taken = bounded.envelopesReceived(1, Array(five[..<4]), now: 1)
        #expect(taken.contains(.verifyAndStore(1, Array(five[..<4]))) && !taken.contains { if case .pendingFull = $0 { true } else { false } })
        #expect(bounded.envelopesReceived(1, [five[4]], now: 1) == [.pendingFull(1, 1)])
        #expect(Replicator.pendingLimit == 100_000 && r.pendingBound == Replicator.pendingLimit)
    }

    @Test("as many envelopes as were asked for are free (in any order, even repeated); one more is charged; a range that stalls for pullTimeout is asked again from our clock")
    func strayAndStalled() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        r.pushBudget = (burst: 1, perSecond: 0)
        r.pullBudget = (burst: 4, perSecond: 1_000)
        _ = r.linkUp(1, now: 0)
        _ = r.clockReceived(1, entries: [Dependency(author: a.key.publicKey, sequence: 4)], full: true, now: 0)
        let e = try PushBudgetTests.pushes(a, 1...5)
        // Four asked: four free, whatever they are within the range.
        for _ in 0..<4 { #expect(!r.envelopesReceived(1, [e[0]], now: 0).contains(.pushesLimited(1, 1))) }
        // The fifth copy spends the one token; the next envelope drops the link.
        #expect(!r.envelopesReceived(1, [e[0]], now: 0).contains(.pushesLimited(1, 1)))
        #expect(r.envelopesReceived(1, [e[1]], now: 0) == [.pushesLimited(1, 1)])

        // Stalled: the peer declared 4 and sends none. After the timeout they are asked again.
        _ = r.linkUp(2, now: 100)
        let first = requests(r.clockReceived(2, entries: [Dependency(author: a.key.publicKey, sequence: 4)], full: true, now: 100))
        #expect(first == [GossipRequest(author: a.key.publicKey, from: 1, count: 4)])
        #expect(requests(r.tick(now: 100 + Replicator.pullTimeout - 1)).isEmpty)
        #expect(requests(r.tick(now: 100 + Replicator.pullTimeout)) == first)
    }

    @Test("an envelope past a gap makes its sender asked for the gap, within the window")
    func gap() throws {
        let a = try Author()
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0)
        _ = r.clockReceived(1, entries: [], full: true, now: 0)
        let e = try PushBudgetTests.pushes(a, 1...UInt64(Replicator.pullWindow + 10))
        let last = try #require(e.last)
        _ = r.envelopesReceived(1, [last], now: 1)
        let asked = requests(r.stored(from: 1, checked: [last], inserted: [last], invalid: 0, newClock: [], now: 1))
        #expect(asked == [GossipRequest(author: a.key.publicKey, from: 1, count: UInt64(Replicator.pullWindow))])
    }

    @Test("a stored answer naming what we sent asks for nothing; one naming more than we hold asks for it at once (the cost of the check that skips the rest is `peernode-bench push`)")
    func storedAnswer() throws {
        let held = try SigningKey.generate().publicKey, elsewhere = try SigningKey.generate().publicKey
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock([held: 5]), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0)
        _ = r.clockReceived(1, entries: [Dependency(author: held, sequence: 5)], full: true, now: 0)
        // The peer stored what we pushed it.
        #expect(requests(r.storedReceived(1, entries: [Dependency(author: held, sequence: 5)], now: 1)).isEmpty)
        // It holds more of an author than we do (it got it elsewhere): asked for at once.
        #expect(requests(r.storedReceived(1, entries: [Dependency(author: held, sequence: 9)], now: 2))
            == [GossipRequest(author: held, from: 6, count: 4)])
        _ = r.clockReceived(1, entries: [Dependency(author: elsewhere, sequence: 3), Dependency(author: held, sequence: 9)].sorted { $0.author < $1.author },
                            full: false, now: 3)
        // A stored answer about what we hold says nothing new; the wanted range waits for its ask or the tick.
        #expect(requests(r.storedReceived(1, entries: [Dependency(author: held, sequence: 9)], now: 4)).isEmpty)
    }

    /// `count` envelopes of `author`'s chain from sequence 1 (their bodies are never opened here).
    static func chain(_ count: Int, by author: SigningKey) throws -> [CarriedEnvelope] {
        let room = RoomID.random(), key = SymmetricKey.generate()
        var out: [CarriedEnvelope] = []
        var previous = MessageID.zero
        for s in 1...count {
            let e = try Envelope.sign(by: author, sequence: UInt64(s), previous: previous, dependencies: [], timestamp: UInt64(s),
                                      room: room, body: try SealedBody.seal(kind: .text, content: Array("message \(s)".utf8), key: key,
                                                                            author: author.publicKey, room: room))
            previous = e.id
            out.append(CarriedEnvelope(hops: 0, envelope: e))
        }
        return out
    }

    @Test("an ask for what is on its way into the store (a relay stores what it forwarded ahead a few milliseconds later) is answered once it is stored, not left for the asker's pullTimeout; what nothing brings is not kept; what the store's own push sent is not sent twice")
    func askWaitsForTheStore() throws {
        let key = try SigningKey.generate()
        let author = key.publicKey
        let chain = try Self.chain(4, by: key)
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        for id in 1...3 { _ = r.linkUp(id, now: 0, version: .newest) }
        // Link 1 brings 1 and 2, forwarded ahead to links 2 and 3 (which now count as holding them).
        _ = r.envelopesReceived(1, Array(chain[0..<2]), now: 0)
        _ = r.verifiedAhead(Array(chain[0..<2]))
        #expect(r.knownClock(of: 2)?[author] == 2)
        // Link 2 lost 1 on its way and asks for 1...4 before they are stored: nothing can go yet.
        #expect(!Self.sendsStored(r.requestReceived(2, ranges: [GossipRequest(author: author, from: 1, count: 4)])))
        // Stored: 1...2 go to link 2 then (3 and 4 are coming from nobody: not kept).
        let stored = r.stored(from: 1, checked: Array(chain[0..<2]), inserted: Array(chain[0..<2]), invalid: 0,
                              newClock: [Dependency(author: author, sequence: 2)], now: 0.004)
        #expect(stored.filter { if case .sendStored = $0 { true } else { false } } == [.sendStored(2, author: author, from: 1, through: 2)])
        // Link 3 asks for 3...4 while 3 is on its way, not forwarded ahead: once stored, 3 goes to it once (the
        // answer; the store's push, which would have sent it too, does not), and 4 is left to the push when it comes.
        _ = r.envelopesReceived(1, [chain[2]], now: 1)
        #expect(!Self.sendsStored(r.requestReceived(3, ranges: [GossipRequest(author: author, from: 3, count: 2)])))
        let third = r.stored(from: 1, checked: [chain[2]], inserted: [chain[2]], invalid: 0, newClock: [Dependency(author: author, sequence: 3)], now: 1.004)
        let toLinkThree = third.flatMap { action -> [UInt64] in
            switch action {
            case let .send(3, .envelopes(sent)): sent.map(\.envelope.sequence)
            case let .sendStored(3, _, from, through): Array(from...through)
            default: []
            }
        }
        #expect(toLinkThree == [3], "sent to link 3: \(third)")
        // 4 was never on its way when asked for: when it comes, link 3 gets it by the push alone.
        _ = r.envelopesReceived(1, [chain[3]], now: 2)
        let fourth = r.stored(from: 1, checked: [chain[3]], inserted: [chain[3]], invalid: 0, newClock: [Dependency(author: author, sequence: 4)], now: 2.004)
        #expect(!Self.sendsStored(fourth))
        // An ask for what nothing brings sends nothing and is not kept.
        #expect(r.requestReceived(2, ranges: [GossipRequest(author: author, from: 5, count: 3)]).isEmpty)
    }

    @Test("asks waiting for the store: maximumWaitingAsks authors per link are kept and answered once stored, one more is not")
    func waitingAsksAreBounded() throws {
        let limit = Replicator.maximumWaitingAsks
        #expect(limit == 1_024)
        let keys = try (0...limit).map { _ in try SigningKey.generate() }
        let firsts = try keys.map { try Self.chain(1, by: $0)[0] }
        var r = Replicator(me: try SigningKey.generate().publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        for id in 1...2 { _ = r.linkUp(id, now: 0, version: .newest) }
        _ = r.envelopesReceived(1, firsts, now: 0)
        _ = r.verifiedAhead(firsts)
        // One request per author, the last one past the limit.
        _ = r.requestReceived(2, ranges: firsts.map { GossipRequest(author: $0.envelope.author, from: 1, count: 1) })
        let stored = r.stored(from: 1, checked: firsts, inserted: firsts, invalid: 0,
                              newClock: firsts.map { Dependency(author: $0.envelope.author, sequence: 1) }, now: 0.004)
        let answered = Set(stored.compactMap { action -> PublicKey? in
            if case let .sendStored(2, author, 1, 1) = action { return author }
            return nil
        })
        #expect(answered.count == limit, "\(answered.count) answered")
    }
}
