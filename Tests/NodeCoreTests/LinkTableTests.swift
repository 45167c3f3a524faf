import Crypto
import Gossip
import NetworkText
import NodeCore
import TestSupport
import Testing

/// Two identities, `small` < `large` (the tie-break compares them).
private func twoKeys() throws -> (small: PublicKey, large: PublicKey) {
    let a = try SigningKey.generate().publicKey, b = try SigningKey.generate().publicKey
    return a < b ? (a, b) : (b, a)
}

private func dials(_ effects: [LinkTable.Effect]) -> [LinkTable.DialerID] {
    effects.compactMap { if case let .dial(d, _, _) = $0 { return d } else { return nil } }
}

/// Two link tables and the connections between them: a dial of one is a
/// connection accepted by the other, a close at one end is a close at both.
private struct Pair {
    var tables: [LinkTable]
    let keys: [PublicKey]
    /// Open connections: (link id at side 0 or 1) for each end.
    var connections: [(ids: [LinkID], dialer: Int)] = []
    var nextLink = 1
    /// Everything each side's table said, in order.
    var said: [[LinkTable.Effect]] = [[], []]

    init(_ a: PublicKey, _ b: PublicKey, seed: UInt64) {
        keys = [a, b]
        tables = [LinkTable(me: a, random: SeededRandom(seed: seed)), LinkTable(me: b, random: SeededRandom(seed: seed + 1))]
    }

    mutating func run(_ side: Int, _ effects: [LinkTable.Effect], now: Double) {
        said[side] += effects
        for effect in effects {
            switch effect {
            case .dial:
                // Opened at both ends; each handshake finishes, the dialler's first.
                let here = nextLink, there = nextLink + 1
                nextLink += 2
                tables[side].opened(here, dialer: dials([effect])[0])
                tables[1 - side].opened(there, dialer: nil)
                connections.append((side == 0 ? [here, there] : [there, here], side))
                run(side, tables[side].established(here, remote: keys[1 - side], now: now), now: now)
                run(1 - side, tables[1 - side].established(there, remote: keys[side], now: now), now: now)
            case let .close(id, why):
                guard let i = connections.firstIndex(where: { $0.ids[side] == id }) else { continue }
                let ids = connections.remove(at: i).ids
                let reason = PeerText(why == .duplicate ? "duplicate link" : "blocked")
                run(side, tables[side].closed(ids[side], reason: reason, duplicate: false, now: now), now: now)
                run(1 - side, tables[1 - side].closed(ids[1 - side], reason: reason, duplicate: why == .duplicate, now: now), now: now)
            default:
                break
            }
        }
    }

    mutating func tick(_ now: Double) {
        for side in 0...1 { run(side, tables[side].tick(now: now), now: now) }
    }
}

@Suite("The link table: tie-break, backoff, discovery, held addresses")
struct LinkTableTests {
    @Test("two nodes that dial each other keep one link, the one dialled by the smaller id; redials are skipped while linked, for ten minutes of ticks")
    func mutualDial() throws {
        let (small, large) = try twoKeys()
        for seed in UInt64(1)...20 {
            var pair = Pair(small, large, seed: seed * 2)
            pair.tables[0].addPeer(host: "b", port: 1)
            pair.tables[1].addPeer(host: "a", port: 1)
            var now = 0.0
            while now <= 600 {
                pair.tick(now)
                now += 0.25
            }
            #expect(pair.connections.count == 1 && pair.connections[0].dialer == 0, "one link, dialled by the smaller id")
            for side in 0...1 {
                let ups = pair.said[side].filter { if case .up(_, _, true) = $0 { return true } else { return false } }
                #expect(ups.count == 1, "announced once")
                #expect(!pair.said[side].contains { if case .peerDown = $0 { return true } else { return false } }, "never down")
                #expect(pair.tables[side].linkedPeers.count == 1)
            }
            // The larger node's dialler found the peer linked at each turn: ten minutes / 30 s.
            let skipped = pair.said[1].filter { $0 == .count(.redialSkippedLinked) }.count
            #expect((19...21).contains(skipped), "\(skipped) redials skipped")
            #expect(dials(pair.said[0] + pair.said[1]).count == 2, "each dialled once")
        }
    }

    @Test("a dial that fails waits 0.5 s doubling to 30 s (±25 %); a link resets the wait")
    func backoff() throws {
        let (me, peer) = try twoKeys()
        var table = LinkTable(me: me, random: SeededRandom(seed: 7))
        let d = table.addPeer(host: "h", port: 9)
        var now = 0.0
        #expect(dials(table.tick(now: now)) == [d])
        for attempt in 0..<12 {
            table.dialFailed(d, now: now)
            let expected = min(LinkTable.backoffCap, LinkTable.backoffBase * Double(1 << attempt))
            let wait = (table.dialers[d]?.nextTry ?? 0) - now
            #expect(wait >= expected * 0.75 && wait <= expected * 1.25, "attempt \(attempt): \(wait) s")
            #expect(dials(table.tick(now: now + wait * 0.999)).isEmpty, "not before its time")
            now += wait
            #expect(dials(table.tick(now: now)) == [d])
        }
        table.opened(1, dialer: d)
        _ = table.established(1, remote: peer, now: now)
        #expect(table.expectedRemote(of: d) == peer, "the dialler learned who answers")
        _ = table.closed(1, reason: PeerText("bye"), duplicate: false, now: now)
        let wait = (table.dialers[d]?.nextTry ?? 0) - now
        #expect(wait <= LinkTable.backoffBase * 1.25, "back to the first step: \(wait) s")
    }

    @Test("a link closed as a duplicate keeps its peer up for duplicateGrace: a new link then is no new peer; none by then is a peer down")
    func duplicateGrace() throws {
        let (me, peer) = try twoKeys()
        var table = LinkTable(me: me, random: SeededRandom(seed: 1))
        table.opened(1, dialer: nil)
        #expect(table.established(1, remote: peer, now: 0) == [.up(1, peer, announce: true)])
        #expect(table.closed(1, reason: PeerText("duplicate link"), duplicate: true, now: 1) == [.down(1)])
        #expect(table.tick(now: 1 + LinkTable.duplicateGrace - 0.01).isEmpty)
        table.opened(2, dialer: nil)
        #expect(table.established(2, remote: peer, now: 2) == [.up(2, peer, announce: false)], "the peer stayed up")
        #expect(table.closed(2, reason: PeerText("duplicate link"), duplicate: true, now: 3) == [.down(2)])
        #expect(table.tick(now: 3 + LinkTable.duplicateGrace) == [.peerDown(peer, reason: nil)], "at the limit: down")
        // An ordinary close is a peer down at once, with its reason.
        table.opened(3, dialer: nil)
        _ = table.established(3, remote: peer, now: 10)
        #expect(table.closed(3, reason: PeerText("node quitting"), duplicate: false, now: 11) == [.down(3), .peerDown(peer, reason: PeerText("node quitting"))])
    }

    @Test("want: one dial for the overlay, retired when it ends; a failure or a close releases the peer, a close as the loser of a tie-break does not")
    func want() throws {
        let (me, peer) = try twoKeys()
        var table = LinkTable(me: me, random: SeededRandom(seed: 1))
        let first = dials(table.want(peer, host: "10.0.0.2", port: 7733, now: 0))
        #expect(first.count == 1)
        #expect(table.expectedRemote(of: first[0]) == peer, "dialled only for its identity")
        #expect(table.dialFailed(first[0], now: 1) == [.released(peer)])
        #expect(dials(table.tick(now: 100)).isEmpty, "a one-shot dialler does not try again")
        // Wanted again: a link, closed by the peer as a duplicate: no release (its other link carries it).
        let second = dials(table.want(peer, host: "10.0.0.2", port: 7733, now: 200))
        #expect(second.count == 1)
        table.opened(5, dialer: second[0])
        _ = table.established(5, remote: peer, now: 200)
        #expect(!table.closed(5, reason: PeerText("duplicate link"), duplicate: true, now: 201).contains(.released(peer)))
        // Closed otherwise: released.
        let third = dials(table.want(peer, host: "10.0.0.2", port: 7733, now: 300))
        table.opened(6, dialer: third[0])
        _ = table.established(6, remote: peer, now: 300)
        #expect(table.closed(6, reason: PeerText("node quitting"), duplicate: false, now: 301).contains(.released(peer)))
        // Linked already: no dial.
        table.opened(7, dialer: nil)
        _ = table.established(7, remote: peer, now: 400)
        #expect(dials(table.want(peer, host: "10.0.0.2", port: 7733, now: 400)).isEmpty)
    }

    @Test("discovery: the smaller id dials at once, the larger after discoveredDialDelay (at once when not listening); expired stops; found again starts; a --peer that knows the identity needs no second dialler")
    func discovery() throws {
        let (small, large) = try twoKeys()
        var low = LinkTable(me: small, random: SeededRandom(seed: 1))
        #expect(dials(low.found(large, host: "10.0.0.2", port: 7733, listening: true, now: 0)).count == 1)
        var high = LinkTable(me: large, random: SeededRandom(seed: 2))
        #expect(dials(high.found(small, host: "10.0.0.1", port: 7733, listening: true, now: 0)).isEmpty)
        #expect(dials(high.tick(now: LinkTable.discoveredDialDelay - 0.01)).isEmpty)
        let d = try #require(dials(high.tick(now: LinkTable.discoveredDialDelay)).first)
        var quiet = LinkTable(me: large, random: SeededRandom(seed: 3))
        #expect(dials(quiet.found(small, host: "10.0.0.1", port: 7733, listening: false, now: 0)).count == 1, "a node nobody can dial dials at once")
        #expect(high.found(small, host: "10.0.0.1", port: 0, listening: true, now: 0).isEmpty, "no port: nothing to dial")

        high.dialFailed(d, now: 3)
        high.expired(small)
        #expect(dials(high.tick(now: 1_000)).isEmpty, "retired")
        #expect(dials(high.found(small, host: "10.0.0.1", port: 7733, listening: true, now: 1_000)).isEmpty)
        #expect(dials(high.tick(now: 1_000 + LinkTable.discoveredDialDelay)) == [d], "the same dialler, revived")
        #expect(high.dialers.count == 1)

        var withPeer = LinkTable(me: small, random: SeededRandom(seed: 4))
        let p = withPeer.addPeer(host: "10.0.0.2", port: 7733)
        withPeer.opened(1, dialer: p)
        _ = withPeer.established(1, remote: large, now: 0)
        _ = withPeer.found(large, host: "10.0.0.2", port: 7733, listening: true, now: 1)
        #expect(withPeer.dialers.count == 1)
    }

    @Test("a dial for a discovered peer that reaches another identity holds the address: others announced there are not dialled; the one that answered is; the hold ends after misdirectedHold")
    func misdirected() throws {
        let (me, announced) = try twoKeys()
        let answered = try SigningKey.generate().publicKey, third = try SigningKey.generate().publicKey
        var table = LinkTable(me: me, random: SeededRandom(seed: 5))
        let d = try #require(dials(table.found(announced, host: "10.0.0.9", port: 7733, listening: false, now: 0)).first)
        table.opened(1, dialer: d)
        #expect(table.misdirected(1, answered: answered, now: 0) == [
            .count(.discoveryMisdirected),
            .misdirected(address: "10.0.0.9:7733", announced: announced, answered: answered, until: LinkTable.misdirectedHold),
        ])
        _ = table.closed(1, reason: PeerText("expected other"), duplicate: false, now: 0)
        let heldTick = table.tick(now: 60)
        #expect(dials(heldTick).isEmpty, "held")
        #expect(heldTick.filter { $0 == .count(.dialSkippedHeld) }.count == 1, "the skipped turn is counted, once")
        #expect(table.tick(now: 61).isEmpty, "and not again before the hold ends")
        #expect(dials(table.found(third, host: "10.0.0.9", port: 7733, listening: false, now: 60)).isEmpty, "a third identity is not dialled there either")
        #expect(dials(table.found(answered, host: "10.0.0.9", port: 7733, listening: false, now: 60)).count == 1, "the one that answered is")
        #expect(dials(table.tick(now: LinkTable.misdirectedHold)).count == 2, "the hold is over")
        // A --peer dialler is never held: the user asked for that address.
        var peer = LinkTable(me: me, random: SeededRandom(seed: 6))
        let p = peer.addPeer(host: "10.0.0.9", port: 7733)
        _ = peer.tick(now: 0)
        peer.opened(1, dialer: p)
        #expect(peer.misdirected(1, answered: answered, now: 0).isEmpty)
    }

    @Test("held addresses: maximumMisdirected at once; one more forgets the hold made longest ago")
    func misdirectedLimit() throws {
        let me = try SigningKey.generate().publicKey, answered = try SigningKey.generate().publicKey
        var table = LinkTable(me: me, random: SeededRandom(seed: 8))
        for i in 0...LinkTable.maximumMisdirected {
            let key = try SigningKey.generate().publicKey
            // A hundredth of a second apart: every hold still runs at the end.
            let now = Double(i) / 100
            let d = try #require(dials(table.found(key, host: "10.1.\(i / 250).\(i % 250)", port: 1, listening: false, now: now)).first)
            table.opened(i + 1, dialer: d)
            _ = table.misdirected(i + 1, answered: answered, now: now)
            _ = table.closed(i + 1, reason: PeerText(""), duplicate: false, now: now)
        }
        // The first address was held longest ago: forgotten, so dialled again at its turn; the second is still held.
        let due = dials(table.tick(now: 12))
        #expect(due == [1], "only the first address: \(due)")
    }

    @Test("a block closes every link that carries the peer")
    func block() throws {
        let (me, peer) = try twoKeys()
        var table = LinkTable(me: me, random: SeededRandom(seed: 9))
        table.opened(4, dialer: nil)
        _ = table.established(4, remote: peer, now: 0)
        #expect(table.block(peer) == [.close(4, .blocked)])
        #expect(table.block(me).isEmpty)
    }

    @Test("counters: a refused handshake's counter has the name the logs use; counts saturate")
    func counters() throws {
        let key = try SigningKey.generate().publicKey
        let failures: [LinkFailure] = [.wrongNetworkKey, .badIdentity("x"), .handshakeTimeout, .malformedHandshake("x"), .transportDecryptFailed,
                                       .blocked(key), .unexpectedIdentity(expected: key, got: key), .selfConnection, .nonceExhausted]
        for failure in failures { #expect(Counter(failure).rawValue == failure.counterName) }
        var counts = Counters()
        counts.add(.bytesIn, Int.max - 1)
        counts.add(.bytesIn, 5)
        #expect(counts[.bytesIn] == Int.max)
        #expect(counts.byName == ["bytes_in": Int.max])
        #expect(Set(Counter.allCases.map(\.rawValue)).count == Counter.allCases.count, "names are distinct")
    }
}
