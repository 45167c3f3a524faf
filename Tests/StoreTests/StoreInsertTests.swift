import Crypto
import Gossip
import Store
import TestSupport
import Testing

@Suite("Inserting envelopes: idempotence, forks, gaps, clock")
struct StoreInsertTests {
    @Test("the same bytes again are a no-op")
    func idempotent() async throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let e = try alice.next()
        #expect(try store.insert([e], receivedAt: 1) == [.inserted])
        #expect(try store.insert([e, e], receivedAt: 2) == [.duplicate, .duplicate])
        #expect(try await sqliteShell(fixture.databasePath, "SELECT count(*) FROM envelopes") == "1")
        #expect(try store.forks().isEmpty)
    }

    @Test("same author and sequence with other bytes: the first is kept, the fork recorded and listed")
    func fork() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let first = try alice.next()
        let forked = try alice.fork(of: 1)
        _ = try store.insert([first], receivedAt: 1)
        #expect(try store.insert([forked], receivedAt: 7) == [.fork(kept: first.id)])
        #expect(try store.insert([forked], receivedAt: 8) == [.fork(kept: first.id)])  // recorded once
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 10) == [first])
        let forks = try store.forks()
        #expect(forks.count == 1)
        #expect(forks.first?.fork == forked)
        #expect(forks.first?.kept == first.id)
        #expect(forks.first?.detectedAt == 7)
    }

    @Test("forks kept per author: Store.maximumForksPerAuthor, and one past it is refused yet still reported")
    func forkLimit() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let first = try alice.next()
        _ = try store.insert([first], receivedAt: 1)
        let limit = Int(Store.maximumForksPerAuthor)
        // Sequence 2, each linking to a made-up sequence 1: a broken chain each.
        let forks = try (0...limit).map { i in
            try Envelope.sign(by: alice.key, sequence: 2, previous: MessageID(bytes: [UInt8](repeating: UInt8(i + 1), count: 32)),
                              dependencies: [], timestamp: 1, room: general, kind: .text, body: [])
        }
        for (i, f) in forks.enumerated() {
            #expect(try store.insert([f], receivedAt: 2) == [.brokenChain(kept: first.id)])
            #expect(try store.forks().count == min(i + 1, limit))
        }
        // Another author's fork is not held back by this one's.
        let bob = try ChainAuthor()
        _ = try store.insert([try bob.next()], receivedAt: 1)
        #expect(try store.insert([try bob.fork(of: 1)], receivedAt: 3).count == 1)
        #expect(try store.forks().count == limit + 1)
    }

    @Test("an envelope that does not link to its held neighbours is refused and recorded")
    func brokenChain() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let e1 = try alice.next()
        let e2 = try alice.next()
        let e3 = try alice.next()
        // A second chain from the same key: its sequence 2 links to another sequence 1.
        let other = try Envelope.sign(by: alice.key, sequence: 2, previous: e3.id, dependencies: [],
                                      timestamp: 1, room: general, kind: .text, body: [])
        _ = try store.insert([e1], receivedAt: 1)
        #expect(try store.insert([other], receivedAt: 1) == [.brokenChain(kept: e1.id)])
        // Successor check: 3 is held ahead of the gap; a 2 that 3 does not point to is refused.
        let fixture2 = try StoreFixture()
        let store2 = try #require(fixture2.store)
        let fake2 = try Envelope.sign(by: alice.key, sequence: 2, previous: e1.id, dependencies: [],
                                      timestamp: 99, room: general, kind: .text, body: [])
        _ = try store2.insert([e1, e3], receivedAt: 1)
        #expect(try store2.insert([fake2], receivedAt: 1) == [.brokenChain(kept: e3.id)])
        #expect(try store2.insert([e2], receivedAt: 1) == [.inserted])
        #expect(try store2.vectorClock()[alice.publicKey] == 3)
        #expect(try store.forks().count == 1 && store2.forks().count == 1)
    }

    @Test("the clock counts contiguous envelopes; those past a gap are kept, counted, then joined")
    func gaps() async throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let chain = try (1...6).map { _ in try alice.next() }
        _ = try store.insert([chain[0], chain[2], chain[3], chain[5]], receivedAt: 1)
        #expect(try store.vectorClock()[alice.publicKey] == 1)
        #expect(try store.aheadOfGapCount() == 3)
        _ = try store.insert([chain[1]], receivedAt: 2)
        #expect(try store.vectorClock()[alice.publicKey] == 4)
        #expect(try store.aheadOfGapCount() == 1)
        _ = try store.insert([chain[4]], receivedAt: 3)
        #expect(try store.vectorClock()[alice.publicKey] == 6)
        #expect(try store.aheadOfGapCount() == 0)
        #expect(try store.undeliveredCount() == 0)
        // The clock lives in the authors table, kept as envelopes arrive.
        #expect(try await sqliteShell(fixture.databasePath, "SELECT contiguous, delivered FROM authors") == "6|6")
    }

    @Test("an author's envelopes from sequence N upward, in order, limited")
    func syncQuery() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let chain = try (1...10).map { _ in try alice.next() }
        _ = try store.insert(chain.shuffled(), receivedAt: 1)
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 4, limit: 3) == Array(chain[3..<6]))
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 9, limit: 100) == Array(chain[8..<10]))
        #expect(try store.envelopes(from: try SigningKey.generate().publicKey, startingAt: 1, limit: 5).isEmpty)
        // A byte budget: reading stops once it is reached (the one that reaches it included), never below one.
        let size = chain[0].encoded.count
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 100, bytes: 3 * size) == Array(chain[0..<3]))
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 100, bytes: 3 * size - 1) == Array(chain[0..<3]))
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 100, bytes: 3 * size + 1) == Array(chain[0..<4]))
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 100, bytes: 1) == [chain[0]])
    }

    @Test("own posts: the next sequence, previous id and dependencies come from the store")
    func ownPosts() throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let me = try ChainAuthor()
        let bob = try ChainAuthor()
        _ = try store.insert([bob.next(), bob.next()], receivedAt: 1)
        #expect(try store.head(of: me.publicKey) == nil)
        let deps = try store.dependenciesForNextPost(by: me.publicKey)
        #expect(deps == [Dependency(author: bob.publicKey, sequence: 2)])
        let mine = try me.next(dependencies: deps)
        #expect(try store.insertOwn(mine, at: 5) == .inserted)
        #expect(try store.head(of: me.publicKey)?.id == mine.id)
        // Nothing new from Bob: the next post names nothing.
        #expect(try store.dependenciesForNextPost(by: me.publicKey).isEmpty)
        _ = try store.insert([bob.next()], receivedAt: 6)
        #expect(try store.dependenciesForNextPost(by: me.publicKey) == [Dependency(author: bob.publicKey, sequence: 3)])
    }

    @Test("a post's dependencies survive a restart (what earlier posts named is read back), name at most maximumDependencies with the rest in the next post, and never name the author")
    func dependenciesAcrossRestart() throws {
        let fixture = try StoreFixture()
        let me = try ChainAuthor(), bob = try ChainAuthor(), carol = try ChainAuthor()
        do {
            let store = try #require(fixture.store)
            _ = try store.insert([bob.next(), bob.next(), carol.next()], receivedAt: 1)
            let first = try store.dependenciesForNextPost(by: me.publicKey)
            #expect(first == [Dependency(author: bob.publicKey, sequence: 2), Dependency(author: carol.publicKey, sequence: 1)]
                .sorted { $0.author < $1.author })
            #expect(try store.insertOwn(me.next(dependencies: first), at: 2) == .inserted)
            _ = try store.insert([bob.next()], receivedAt: 3)
        }
        try fixture.reopen()
        let store = try #require(fixture.store)
        // Only Bob moved since the post; our own chain is never named.
        #expect(try store.dependenciesForNextPost(by: me.publicKey) == [Dependency(author: bob.publicKey, sequence: 3)])

        // More authors moved than one post names: the rest come in the next.
        let many = try (0..<(Envelope.maximumDependencies + 10)).map { _ in try ChainAuthor() }
        _ = try store.insert(many.map { try $0.next() }, receivedAt: 4)
        let named = try store.dependenciesForNextPost(by: me.publicKey)
        #expect(named.count == Envelope.maximumDependencies)
        #expect(try store.insertOwn(me.next(dependencies: named), at: 5) == .inserted)
        let rest = try store.dependenciesForNextPost(by: me.publicKey)
        #expect(rest.count == 11 && Set(rest).isDisjoint(with: Set(named)))
    }
}
