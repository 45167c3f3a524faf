import Crypto
import Gossip
import Testing

/// The saved per-peer clock: a reconnect costs what changed, and the memory
/// is only a hint (a peer that lost it, or never got our last clock, gets
/// the whole clock).
@Suite("Replication: clocks remembered between links")
struct PeerClockTests {
    static func authors(_ n: Int) throws -> [PublicKey] {
        try (0..<n).map { _ in try SigningKey.generate().publicKey }
    }

    static func clock(_ authors: [PublicKey], _ seq: UInt64) -> VectorClock {
        VectorClock(Dictionary(uniqueKeysWithValues: authors.map { ($0, seq) }))
    }

    /// Runs two replicators' clock exchange on one link until quiet; returns
    /// the bytes of the clock messages each sent and the actions other than
    /// sends (requests for catch-up are answered, and not counted as clock cost).
    static func exchange(_ a: inout Replicator, _ b: inout Replicator, first: [Replicator.Action], second: [Replicator.Action])
        -> (bytes: Int, messages: [GossipMessage], memoryA: PeerClocks?, memoryB: PeerClocks?, stored: [Replicator.Action]) {
        var queue: [(to: Int, GossipMessage)] = []
        var bytes = 0
        var messages: [GossipMessage] = []
        var memory: [PeerClocks?] = [nil, nil]
        var stored: [Replicator.Action] = []
        func take(_ actions: [Replicator.Action], from: Int) {
            for action in actions {
                switch action {
                case let .send(_, m): queue.append((1 - from, m))
                case let .remember(_, clocks): memory[from] = clocks
                default: stored.append(action)
                }
            }
        }
        take(first, from: 0)
        take(second, from: 1)
        while !queue.isEmpty {
            let (to, m) = queue.removeFirst()
            if case .request = m {} else {
                bytes += m.encoded.count
                messages.append(m)
            }
            let actions: [Replicator.Action]
            switch m {
            case let .request(ranges): actions = to == 0 ? a.requestReceived(1, ranges: ranges) : b.requestReceived(1, ranges: ranges)
            case let .clock(entries, full): actions = to == 0 ? a.clockReceived(1, entries: entries, full: full, now: 0) : b.clockReceived(1, entries: entries, full: full, now: 0)
            case let .clockSince(base, entries): actions = to == 0 ? a.clockSinceReceived(1, base: base, entries: entries, now: 0) : b.clockSinceReceived(1, base: base, entries: entries, now: 0)
            case .fullClockWanted: actions = to == 0 ? a.fullClockWanted(1) : b.fullClockWanted(1)
            default: actions = []
            }
            take(actions, from: to)
        }
        return (bytes, messages, memory[0], memory[1], stored)
    }

    @Test("1,000 authors: first contact ≤ 40 bytes per author per side; reconnect with nothing new: a few bytes; with 10 changed: about 10 entries")
    func reconnectCostsWhatChanged() throws {
        let authors = try Self.authors(1000)
        let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
        var a = Replicator(me: me, clock: Self.clock(authors, 50), random: SystemRandomNumberGenerator())
        var b = Replicator(me: peer, clock: Self.clock(authors, 50), random: SystemRandomNumberGenerator())
        let first = Self.exchange(&a, &b, first: a.linkUp(1, now: 0), second: b.linkUp(1, now: 0))
        #expect(first.bytes <= 2 * 40 * 1000, "first contact: \(first.bytes) bytes")
        #expect(first.stored.isEmpty, "nothing missing, nothing to send")
        let memA = try #require(first.memoryA), memB = try #require(first.memoryB)
        #expect(memA.declared == b.clock && memB.declared == a.clock)
        a.linkDown(1)
        b.linkDown(1)

        // Reconnect, nothing new: each side sends a digest and no entries.
        let again = Self.exchange(&a, &b, first: a.linkUp(1, now: 1, memory: memA), second: b.linkUp(1, now: 1, memory: memB))
        #expect(again.bytes <= 2 * 20, "reconnect with nothing new: \(again.bytes) bytes")
        #expect(!again.messages.contains(.fullClockWanted))
        #expect(a.knownClock(of: 1) == b.clock)
        a.linkDown(1)
        b.linkDown(1)

        // Ten authors moved on at a while apart: a's message names those ten; b asks, a sends them.
        var moved = a.clock
        for author in authors.prefix(10) { moved[author] = 60 }
        a = Replicator(me: me, clock: moved, random: SystemRandomNumberGenerator())
        let changed = Self.exchange(&a, &b, first: a.linkUp(1, now: 2, memory: memA), second: b.linkUp(1, now: 2, memory: memB))
        #expect(changed.bytes <= 2 * 20 + 10 * 42, "ten changed: \(changed.bytes) bytes")
        #expect(changed.stored.count == 10, "a sends b the ten authors' new envelopes")
    }

    @Test("a peer that lost its database (and its memory) gets the whole clock and everything back")
    func lostDatabase() throws {
        let authors = try Self.authors(20)
        let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
        var a = Replicator(me: me, clock: Self.clock(authors, 5), random: SystemRandomNumberGenerator())
        var b = Replicator(me: peer, clock: Self.clock(authors, 5), random: SystemRandomNumberGenerator())
        let first = Self.exchange(&a, &b, first: a.linkUp(1, now: 0), second: b.linkUp(1, now: 0))
        a.linkDown(1)
        // b is wiped: empty clock, no memory. a still remembers b's old clock.
        b = Replicator(me: peer, clock: VectorClock(), random: SystemRandomNumberGenerator())
        let after = Self.exchange(&a, &b, first: a.linkUp(1, now: 1, memory: first.memoryA), second: b.linkUp(1, now: 1, memory: nil))
        #expect(after.messages.contains(.fullClockWanted), "b cannot rebuild a's clock from a digest")
        #expect(a.knownClock(of: 1) != nil)
        let sent = after.stored.compactMap { action -> UInt64? in
            if case let .sendStored(_, _, from, through) = action { return through - from + 1 }
            return nil
        }
        #expect(sent.reduce(0, +) == 20 * 5, "everything goes back to b")
    }

    @Test("a clock the peer never received (lost with the link) makes it ask for the whole clock")
    func staleMemory() throws {
        let authors = try Self.authors(5)
        let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
        var a = Replicator(me: me, clock: Self.clock(authors, 1), random: SystemRandomNumberGenerator())
        var b = Replicator(me: peer, clock: Self.clock(authors, 1), random: SystemRandomNumberGenerator())
        let first = Self.exchange(&a, &b, first: a.linkUp(1, now: 0), second: b.linkUp(1, now: 0))
        // a remembers having sent a newer clock that b never saw.
        var memA = try #require(first.memoryA)
        memA.sent[authors[0]] = 9
        a.linkDown(1)
        b.linkDown(1)
        let after = Self.exchange(&a, &b, first: a.linkUp(1, now: 1, memory: memA), second: b.linkUp(1, now: 1, memory: first.memoryB))
        #expect(after.messages.filter { $0 == .fullClockWanted }.count == 1)
        #expect(b.knownClock(of: 1) == a.clock, "b ends with a's true clock")
    }

    @Test("a clock larger than one message goes as a first part and deltas, and is rebuilt whole")
    func largeClock() throws {
        let authors = try Self.authors(GossipMessage.maximumClockEntries + 5)
        let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
        var a = Replicator(me: me, clock: Self.clock(authors, 2), random: SystemRandomNumberGenerator())
        // B holds a little of ten authors, so the rest stay within Replicator.maximumUnknownAuthors.
        var b = Replicator(me: peer, clock: Self.clock(Array(authors.prefix(10)), 1), random: SystemRandomNumberGenerator())
        let first = Self.exchange(&a, &b, first: a.linkUp(1, now: 0), second: b.linkUp(1, now: 0))
        #expect(first.messages.count == 3, "a: full + delta; b: a small full clock")
        #expect(b.knownClock(of: 1) == a.clock)
        #expect(first.memoryB?.declared == a.clock)
    }

    @Test("a storage acknowledgement moves what the sender knows without making it resend, and keeps the clock digests in step")
    func storedAcknowledgement() throws {
        let authors = try Self.authors(3)
        let me = try SigningKey.generate().publicKey, peer = try SigningKey.generate().publicKey
        var a = Replicator(me: me, clock: Self.clock(authors, 4), random: SystemRandomNumberGenerator())
        var b = Replicator(me: peer, clock: Self.clock(authors, 4), random: SystemRandomNumberGenerator())
        let first = Self.exchange(&a, &b, first: a.linkUp(1, now: 0), second: b.linkUp(1, now: 0))
        // A stored batch with nothing new in it needs no acknowledgement.
        let actions = b.stored(from: 1, checked: [], inserted: [], invalid: 0, newClock: [], now: 0)
        #expect(actions.isEmpty, "nothing inserted, nothing to acknowledge")
        let e = try Envelope.sign(by: try SigningKey.generate(), sequence: 1, previous: .zero, dependencies: [], timestamp: 1,
                                  room: RoomID.random(), kind: .text, body: [1])
        let ack = b.stored(from: 1, checked: [], inserted: [CarriedEnvelope(hops: 0, envelope: e)], invalid: 0, newClock: [], now: 0)
        guard case let .send(_, .stored(entries))? = ack.first else { Issue.record("no acknowledgement: \(ack)"); return }
        #expect(entries == [Dependency(author: e.author, sequence: b.clock[e.author])])
        #expect(a.storedReceived(1, entries: entries, now: 0).isEmpty, "an acknowledgement never makes the sender resend")
        // Both ends moved their view the same way: a reconnect from memory that also counts the
        // acknowledgement still rebuilds (the saved clocks are those of the last exchange).
        a.linkDown(1)
        b.linkDown(1)
        let again = Self.exchange(&a, &b, first: a.linkUp(1, now: 1, memory: first.memoryA), second: b.linkUp(1, now: 1, memory: first.memoryB))
        #expect(!again.messages.contains(.fullClockWanted))
    }
}

