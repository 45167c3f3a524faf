import Crypto
import Discovery
import TestSupport
import Testing

func core(_ signer: SigningKey, port: UInt16 = 7733, network: NetworkKey = labNetwork) -> DiscoveryCore {
    DiscoveryCore(signer: signer, network: network, port: port, random: SeededRandom(seed: 42))
}

func datagrams(_ actions: [DiscoveryCore.Action]) -> [[UInt8]] {
    actions.compactMap { if case let .send(d) = $0 { return d } else { return nil } }
}

@Suite("Discovery core: injected time, no sockets")
struct DiscoveryCoreTests {
    @Test("start sends a query and an announcement; a node that hears them finds the sender and answers within the answer delay")
    func queryAndAnswer() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate()
        var ca = core(a, port: 1111), cb = core(b, port: 2222)
        let hello = datagrams(ca.start(now: t0))
        #expect(hello.count == 2)
        var found: [DiscoveryCore.Action] = []
        for d in hello { found += cb.received(d, from: "10.0.0.1", now: t0 + 1) }
        #expect(found == [.found(a.publicKey, host: "10.0.0.1", port: 1111)], "found once, not once per datagram")
        #expect(datagrams(cb.tick(now: t0 + 1 + DiscoveryCore.answerDelay)).count == 1, "answered within the delay")
        // A second query soon after is answered only after the spacing.
        let again = datagrams(ca.start(now: t0 + 200))
        for d in again { _ = cb.received(d, from: "10.0.0.1", now: t0 + 200) }
        #expect(datagrams(cb.tick(now: t0 + 200 + DiscoveryCore.answerDelay)).isEmpty)
        #expect(datagrams(cb.tick(now: t0 + 1 + DiscoveryCore.answerDelay + DiscoveryCore.answerSpacing)).count == 1)
        // The answer makes a find b.
        let answer = try #require(datagrams(cb.start(now: t0 + 3000)).last)
        #expect(ca.received(answer, from: "10.0.0.2", now: t0 + 3001) == [.found(b.publicKey, host: "10.0.0.2", port: 2222)])
    }

    @Test("a linking datagram (device add waiting) is checked like any, and gives no peer and no answer")
    func linkingIgnored() throws {
        let adder = try SigningKey.generate()
        var listener = core(try SigningKey.generate())
        let key = try #require(Announcement.key(for: labNetwork))
        let linking = try Announcement(kind: .linking, node: adder.publicKey, port: 7735, timestamp: t0).sealed(by: adder, key: key)
        _ = listener.start(now: t0 - 1)  // its own first announcement out of the way
        #expect(listener.received(linking, from: "10.0.0.9", now: t0).isEmpty)
        #expect(listener.peers[adder.publicKey] == nil)
        #expect(datagrams(listener.tick(now: t0 + DiscoveryCore.answerDelay)).isEmpty)
        // The same fields as an announcement would be a peer: the kind is what differs.
        let announce = try Announcement(kind: .announce, node: adder.publicKey, port: 7735, timestamp: t0 + 1).sealed(by: adder, key: key)
        #expect(listener.received(announce, from: "10.0.0.9", now: t0 + 1) == [.found(adder.publicKey, host: "10.0.0.9", port: 7735)])
    }

    @Test("announcements every 5 s ± 20 %: about 12 a minute when idle")
    func idleTraffic() throws {
        var c = core(try SigningKey.generate())
        var sent = datagrams(c.start(now: t0)).count
        var now = t0
        while now < t0 + 60_000 {
            now += 50
            sent += datagrams(c.tick(now: now)).count
        }
        #expect((11...15).contains(sent), "\(sent) datagrams in a minute")
    }

    @Test("a silent peer expires after three intervals; a linked one does not, until its link goes")
    func expiry() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate(), c = try SigningKey.generate()
        var listener = core(a)
        var cb = core(b), cc = core(c)
        for d in datagrams(cb.start(now: t0)) { _ = listener.received(d, from: "10.0.0.2", now: t0) }
        for d in datagrams(cc.start(now: t0)) { _ = listener.received(d, from: "10.0.0.3", now: t0) }
        listener.setLinked(c.publicKey, true, now: t0)
        #expect(!listener.tick(now: t0 + DiscoveryCore.expiry).contains(.expired(b.publicKey)), "not yet at exactly the limit")
        #expect(listener.tick(now: t0 + DiscoveryCore.expiry + 1).contains(.expired(b.publicKey)))
        #expect(listener.peers[c.publicKey] != nil, "linked: kept")
        listener.setLinked(c.publicKey, false, now: t0 + 60_000)
        #expect(!listener.tick(now: t0 + 60_000 + DiscoveryCore.expiry).contains(.expired(c.publicKey)))
        #expect(listener.tick(now: t0 + 60_001 + DiscoveryCore.expiry).contains(.expired(c.publicKey)))
    }

    @Test("stale at skew limit + 1, replayed, own and moved datagrams")
    func staleReplayedOwn() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate()
        var listener = core(a)
        let key = try #require(Announcement.key(for: labNetwork))
        let atLimit = try Announcement(kind: .announce, node: b.publicKey, port: 9, timestamp: t0 - DiscoveryCore.maximumSkew).sealed(by: b, key: key)
        #expect(listener.received(atLimit, from: "10.0.0.2", now: t0) == [.found(b.publicKey, host: "10.0.0.2", port: 9)])
        let past = try Announcement(kind: .announce, node: b.publicKey, port: 9, timestamp: t0 - DiscoveryCore.maximumSkew - 1).sealed(by: b, key: key)
        #expect(listener.received(past, from: "10.0.0.2", now: t0).isEmpty)
        let future = try Announcement(kind: .announce, node: b.publicKey, port: 9, timestamp: t0 + DiscoveryCore.maximumSkew + 1).sealed(by: b, key: key)
        #expect(listener.received(future, from: "10.0.0.2", now: t0).isEmpty)
        #expect(listener.drops[.stale] == 2)
        // The same datagram again, from anywhere, is a replay.
        #expect(listener.received(atLimit, from: "10.0.0.66", now: t0).isEmpty)
        #expect(listener.drops[.replayed] == 1)
        // Our own datagrams come back through multicast loopback.
        var me = core(a)
        for d in datagrams(me.start(now: t0)) { #expect(listener.received(d, from: "10.0.0.1", now: t0).isEmpty) }
        #expect(listener.drops[.own] == 2)
        // A newer announcement from another address: found again, at the new address.
        let moved = try Announcement(kind: .announce, node: b.publicKey, port: 9, timestamp: t0 + 1).sealed(by: b, key: key)
        #expect(listener.received(moved, from: "10.0.0.7", now: t0 + 20) == [.found(b.publicKey, host: "10.0.0.7", port: 9)])
    }

    @Test("a flood from one address is limited to perSourceLimit datagrams a second and leaves other senders alone; another network's datagrams are counted")
    func flood() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate(), c = try SigningKey.generate()
        var listener = core(a)
        let key = try #require(Announcement.key(for: labNetwork))
        for i in 0..<DiscoveryCore.perSourceLimit {
            let d = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0 + UInt64(i)).sealed(by: b, key: key)
            _ = listener.received(d, from: "10.0.0.2", now: t0 + 100)
        }
        #expect(listener.drops[.rateLimited] == nil, "at the limit")
        let over = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0 + 500).sealed(by: b, key: key)
        _ = listener.received(over, from: "10.0.0.2", now: t0 + 100)
        #expect(listener.drops[.rateLimited] == 1, "one past")
        let fromC = try Announcement(kind: .announce, node: c.publicKey, port: 1, timestamp: t0).sealed(by: c, key: key)
        #expect(listener.received(fromC, from: "10.0.0.3", now: t0 + 100) == [.found(c.publicKey, host: "10.0.0.3", port: 1)])
        // The next second, the flooder's budget is back.
        #expect(listener.received(over, from: "10.0.0.2", now: t0 + 1000).isEmpty)
        #expect(listener.drops[.rateLimited] == 1)
        var stranger = core(try SigningKey.generate(), network: .derived(fromName: "elsewhere"))
        for d in datagrams(stranger.start(now: t0)) { #expect(listener.received(d, from: "10.0.0.9", now: t0 + 2000).isEmpty) }
        #expect(listener.drops[.foreignNetwork] == 2)
        #expect(listener.peers.count == 2)
    }

    @Test("signature checks are capped at maximumVerifies a second in all, however many addresses send; foreign datagrams spend no budget")
    func verifyBudget() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate()
        var listener = core(a)
        let key = try #require(Announcement.key(for: labNetwork))
        // Datagrams without the key first: a flood of them, from the same address as b.
        let stranger = try #require(Announcement.key(for: .derived(fromName: "elsewhere")))
        for i in 0..<5_000 {
            let d = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0 + UInt64(i)).sealed(by: b, key: stranger)
            _ = listener.received(d, from: "10.0.0.2", now: t0)
        }
        #expect(listener.drops[.foreignNetwork] == 5_000)
        #expect(listener.drops[.rateLimited] == nil)
        let real = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0).sealed(by: b, key: key)
        #expect(listener.received(real, from: "10.0.0.2", now: t0) == [.found(b.publicKey, host: "10.0.0.2", port: 1)])
        // Members from many addresses: the global cap holds at the limit and one past.
        for i in 1..<DiscoveryCore.maximumVerifies {
            let d = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0 + UInt64(i)).sealed(by: b, key: key)
            _ = listener.received(d, from: "10.2.\(i / 250).\(i % 250)", now: t0)
        }
        #expect(listener.drops[.rateLimited] == nil)
        let past = try Announcement(kind: .announce, node: b.publicKey, port: 1, timestamp: t0 + 5_000).sealed(by: b, key: key)
        #expect(listener.received(past, from: "10.3.0.1", now: t0).isEmpty)
        #expect(listener.drops[.rateLimited] == 1)
    }

    /// New nodes, each announcing once to `listener`: node `i` from `source(i)` at `time(i)`; their keys.
    @discardableResult
    static func announce(_ count: Int, to listener: inout DiscoveryCore, from source: (Int) -> String, at time: (Int) -> UInt64) throws -> [PublicKey] {
        let key = try #require(Announcement.key(for: labNetwork))
        return try (0..<count).map { i in
            let s = try SigningKey.generate()
            let d = try Announcement(kind: .announce, node: s.publicKey, port: 1, timestamp: time(i)).sealed(by: s, key: key)
            _ = listener.received(d, from: source(i), now: time(i))
            return s.publicKey
        }
    }

    /// One source address per sender, so the per-source limit is not what stops them.
    static func ownAddress(_ i: Int) -> String { "10.1.\(i / 250).\(i % 250)" }

    @Test("the peer table holds maximumPeers; one more new node is dropped as table_full")
    func tableFull() throws {
        var listener = core(try SigningKey.generate())
        try Self.announce(DiscoveryCore.maximumPeers + 1, to: &listener, from: Self.ownAddress, at: { _ in t0 })
        #expect(listener.peers.count == DiscoveryCore.maximumPeers)
        #expect(listener.drops[.tableFull] == 1)
    }

    @Test("issue 13, finding 11: a table full of made-up identities still takes a real node (the unlinked peer heard least recently goes); linked peers are never pushed out")
    func fullTableTakesNews() throws {
        var listener = core(try SigningKey.generate())
        let made = try Self.announce(DiscoveryCore.maximumPeers, to: &listener, from: Self.ownAddress, at: { t0 + UInt64($0) })
        // The first made-up one is linked (a real node after all): never pushed out.
        listener.setLinked(made[0], true, now: t0 + 300)
        let real = try SigningKey.generate()
        let key = try #require(Announcement.key(for: labNetwork))
        let news = try Announcement(kind: .announce, node: real.publicKey, port: 7, timestamp: t0 + 1_000).sealed(by: real, key: key)
        let actions = listener.received(news, from: "10.9.0.1", now: t0 + 1_000)
        #expect(actions == [.expired(made[1]), .found(real.publicKey, host: "10.9.0.1", port: 7)])
        #expect(listener.peers.count == DiscoveryCore.maximumPeers && listener.peers[made[0]] != nil)
    }

    @Test("issue 13, finding 11: at most maximumPeersPerSource entries from one source address; one more is dropped as source_full")
    func perSourceCap() throws {
        var listener = core(try SigningKey.generate())
        try Self.announce(DiscoveryCore.maximumPeersPerSource + 1, to: &listener, from: { _ in "10.4.0.1" }, at: { t0 + UInt64($0) })
        #expect(listener.peers.count == DiscoveryCore.maximumPeersPerSource)
        #expect(listener.drops[.sourceFull] == 1)
    }
}
