import Crypto
import Gossip
import Testing

/// Version 4's id covers the signature, so a run of an author's envelopes
/// is proved by the signature at its top (docs/PROTOCOL.md §4, "Chains
/// vouch"); what is not so proved is checked on its own signature.
@Suite("Chain verification (version 4)")
struct ChainVerificationTests {
    let alice = try! SigningKey.generate()  // test input
    let bob = try! SigningKey.generate()  // test input
    let room = RoomID.random()
    let key = SymmetricKey.generate()

    func body(_ text: String, kind: Kind = .text, by author: SigningKey) throws -> [UInt8] {
        try SealedBody.seal(kind: kind, content: Array(text.utf8), key: key, author: author.publicKey, room: room)
    }

    /// `count` envelopes of `author`'s chain from sequence 1, of `version`.
    func chain(_ count: Int, by author: SigningKey, version: UInt8 = 4, erasing: [UInt64] = []) throws -> [Envelope] {
        var out: [Envelope] = []
        var previous = MessageID.zero
        for s in 1...count {
            let last = s == count && !erasing.isEmpty
            let e = try Envelope.sign(by: author, sequence: UInt64(s), previous: previous, dependencies: [], timestamp: UInt64(s),
                                      room: room, erases: last ? erasing : [],
                                      body: try body("message \(s)", kind: last ? .tombstone : .text, by: author), version: version)
            previous = e.id
            out.append(e)
        }
        return out
    }

    /// `e` with its signature replaced by other bytes (decoded as a store
    /// would, without checking it): its version-4 id changes with it.
    func withSignature(_ e: Envelope, _ fill: UInt8 = 0x5A) throws -> Envelope {
        var bytes = e.encoded
        let at = bytes.count - 1 - e.bodyLength - Signature.byteCount
        for i in at..<(at + Signature.byteCount) { bytes[i] = fill }
        return try Envelope.decode(bytes, verification: .trustedStorage)
    }

    /// Runs `ChainVerification.verified` with the real verify, and what it was asked.
    func check(_ batch: [Envelope]) -> (valid: [Bool], asked: [Int]) {
        var asked: [Int] = []
        let valid = ChainVerification.verified(batch) { indices in
            asked += indices
            return indices.map { (try? batch[$0].verifySignature()) != nil }
        }
        return (valid, asked)
    }

    @Test("version 4's id hashes the signature with the signed bytes; version 3's the signed bytes alone")
    func idCoversSignature() throws {
        let four = try chain(1, by: alice)[0]
        let three = try chain(1, by: alice, version: 3)[0]
        let signed4 = Array(four.signedBytes), signed3 = Array(three.signedBytes)
        #expect(four.version == 4 && four.idCoversSignature && four.id.bytes == BLAKE2b.hash(signed4 + four.signature))
        #expect(three.version == 3 && !three.idCoversSignature && three.id.bytes == BLAKE2b.hash(signed3))
        #expect(try Envelope.decode(four.encoded) == four)
        #expect(try withSignature(four).id != four.id)
    }

    @Test("a run of 200 of one author's envelopes is proved by one verify; of version 3 it takes 200")
    func oneVerifyARun() throws {
        let four = check(try chain(200, by: alice))
        #expect(four.valid == Array(repeating: true, count: 200) && four.asked == [199])
        let three = check(try chain(200, by: alice, version: 3))
        #expect(three.valid == Array(repeating: true, count: 200) && three.asked == Array(0..<200))
    }

    @Test("two authors interleaved and shuffled: one verify each, at each run's top")
    func interleaved() throws {
        let a = try chain(30, by: alice), b = try chain(20, by: bob)
        var batch = a + b
        var generator = SystemRandomNumberGenerator()
        batch.shuffle(using: &generator)
        let (valid, asked) = check(batch)
        #expect(valid.allSatisfy { $0 })
        #expect(Set(asked.map { batch[$0].id }) == [a[29].id, b[19].id])
    }

    @Test("a gap splits a run: each part is proved by its own top")
    func gap() throws {
        let a = try chain(10, by: alice)
        let batch = Array(a[0..<4]) + Array(a[5...])
        let (valid, asked) = check(batch)
        #expect(valid.allSatisfy { $0 } && asked.map { batch[$0].sequence } == [4, 10])
    }

    @Test("a peer that swaps a signature in a run: that envelope is refused, the rest taken, on their own signatures where the chain no longer reaches")
    func swappedSignature() throws {
        var a = try chain(6, by: alice)
        a[2] = try withSignature(a[2])
        let (valid, asked) = check(a)
        #expect(valid == [true, true, false, true, true, true])
        // 3..5 proved by 6; 2 named by the swapped 3 (whose top it is) fails, then 1 and 2 each on their own.
        #expect(asked == [2, 5, 0, 1])
    }

    @Test("a top whose signature does not verify: each envelope below it is checked on its own, none taken on its word")
    func badTop() throws {
        var a = try chain(5, by: alice)
        a[4] = try withSignature(a[4])
        let (valid, asked) = check(a)
        #expect(valid == [true, true, true, true, false])
        #expect(asked == [4, 0, 1, 2, 3])
        // The run's top forged by another key: nothing below it taken on it either.
        var forged = try chain(3, by: alice)
        let other = try Envelope.sign(by: bob, sequence: 3, previous: forged[1].id, dependencies: [], timestamp: 3, room: room,
                                      body: try body("not alice", by: bob))
        forged[2] = try Envelope.decode(Array(other.encoded[0..<1]) + Array(alice.publicKey.bytes) + Array(other.encoded[33...]),
                                        verification: .trustedStorage)
        #expect(check(forged).valid == [true, true, false])
    }

    @Test("an author that chains over a signature of its own that does not verify: taken with the envelope that names it, refused alone")
    func authorVouches() throws {
        let a = try chain(1, by: alice)
        let garbled = try withSignature(a[0])
        let next = try Envelope.sign(by: alice, sequence: 2, previous: garbled.id, dependencies: [], timestamp: 2, room: room,
                                     body: try body("after", by: alice))
        #expect(check([garbled, next]).valid == [true, true])
        #expect(check([garbled]).valid == [false])
    }

    @Test("not vouched for: version 3 below version 4, a previous that names another envelope, a pruned envelope (its proof is a signature of its own)")
    func notVouched() throws {
        // The author's first envelope of version 3, then version 4: the 3 is checked on its own.
        let three = try chain(1, by: alice, version: 3)[0]
        let four = try Envelope.sign(by: alice, sequence: 2, previous: three.id, dependencies: [], timestamp: 2, room: room,
                                     body: try body("upgraded", by: alice))
        #expect(check([three, four]) == ([true, true], [0, 1]))
        let garbled3 = try withSignature(three)
        #expect(check([garbled3, four]).valid == [false, true])
        // A next envelope that does not name this one: a fork of sequence 1 stands alone.
        let a = try chain(2, by: alice)
        let fork = try Envelope.sign(by: alice, sequence: 1, previous: .zero, dependencies: [], timestamp: 9, room: room,
                                     body: try body("fork", by: alice))
        let forkCheck = check([fork, a[1]])
        #expect(forkCheck.valid == [true, true] && forkCheck.asked == [0, 1])
        // Of two at one place, the first in the batch is looked for: the second is checked on its own.
        let both = check([a[0], fork, a[1]])
        #expect(both.valid == [true, true, true] && both.asked == [1, 2])
        // Pruned: checked on its own (with its proof); the tombstone still proves what it follows.
        let c = try chain(3, by: alice, erasing: [1])
        let pruned = try #require(c[0].pruned(by: c[2]))
        #expect(pruned.isPruned && pruned.id == c[0].id)
        let prunedCheck = check([pruned, c[1], c[2]])
        #expect(prunedCheck.valid == [true, true, true] && prunedCheck.asked == [0, 2])
    }

    @Test("an author's chain may pass from version 3 to 4: a version-4 tombstone erases a version-3 envelope, and the pruned form verifies with its proof")
    func upgradeErases() throws {
        let three = try chain(1, by: alice, version: 3)[0]
        let tombstone = try Envelope.sign(by: alice, sequence: 2, previous: three.id, dependencies: [], timestamp: 2, room: room,
                                          erases: [1], body: try body("", kind: .tombstone, by: alice))
        #expect(tombstone.version == 4)
        let pruned = try #require(three.pruned(by: tombstone))
        let decoded = try Envelope.decode(pruned.encoded)
        #expect(decoded.isPruned && decoded.id == three.id && decoded.version == 3 && decoded.erasedBy == 2)
        try tombstone.checkFollows(decoded)
    }

    @Test("empty and single batches; a sequence at the limit has no next to look for")
    func edges() throws {
        #expect(check([]) == ([], []))
        let one = try chain(1, by: alice)
        #expect(check(one) == ([true], [0]))
        #expect(ChainVerification.provers(try chain(3, by: alice)) == [2, 2, 2])
    }
}
