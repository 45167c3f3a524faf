import Crypto
import Gossip
@testable import PeerNode
import Testing

/// One signed envelope, as a link carries it: what these tests batch.
func oneEnvelope() throws -> CarriedEnvelope {
    let e = try Envelope.sign(by: try SigningKey.generate(), sequence: 1, previous: .zero, dependencies: [], timestamp: 1,
                              room: RoomID.random(), kind: .text, body: [1, 2, 3])
    return CarriedEnvelope(hops: 0, envelope: e)
}

/// Batches back from the verifier are stored together, in order, at most
/// `NetworkNode.maximumVerifiedPerStore` envelopes a transaction.
@Suite("Verified batches stored together")
struct VerifiedStoreTests {
    let envelope: CarriedEnvelope

    init() throws { envelope = try oneEnvelope() }

    func batch(_ link: LinkID, _ count: Int) -> NetworkNode.VerifiedBatch {
        (link, Array(repeating: envelope, count: count), (0..<count).map { $0 % 3 != 0 })
    }

    @Test("whole batches up to the limit exactly; one envelope past it waits for the next store")
    func atTheLimit() {
        let limit = NetworkNode.maximumVerifiedPerStore
        var waiting = (0..<(limit / 64)).map { batch($0, 64) } + [batch(99, 1)]
        let first = NetworkNode.nextStore(from: &waiting)
        #expect(first.batches.map(\.0) == Array(0..<(limit / 64)))
        #expect(first.valid.count == limit)
        #expect(first.valid == (0..<(limit / 64)).flatMap { _ in (0..<64).map { $0 % 3 != 0 } })
        #expect(waiting.count == 1 && waiting[0].link == 99)
        let second = NetworkNode.nextStore(from: &waiting)
        #expect(second.batches.map(\.0) == [99] && second.valid == [false] && waiting.isEmpty)
    }

    @Test("a batch larger than the limit is stored alone, never split or held back; nothing waiting takes nothing")
    func largerThanTheLimit() {
        let limit = NetworkNode.maximumVerifiedPerStore
        var waiting = [batch(1, limit + 1), batch(2, 1)]
        let first = NetworkNode.nextStore(from: &waiting)
        #expect(first.batches.map(\.0) == [1] && first.valid.count == limit + 1)
        #expect(waiting.map(\.link) == [2])
        var none: [NetworkNode.VerifiedBatch] = []
        let nothing = NetworkNode.nextStore(from: &none)
        #expect(nothing.batches.isEmpty && nothing.valid.isEmpty)
    }
}

/// A relay's verified batches held for one commit (`RelayCommitGroup`).
@Suite("A relay's commit group")
struct RelayCommitGroupTests {
    let envelope: CarriedEnvelope

    init() throws { envelope = try oneEnvelope() }

    @Test("held until the timer below the limit; due at once at the limit; taken whole, in order, with its ends forgotten")
    func atTheLimit() {
        let limit = NetworkNode.maximumVerifiedPerStore
        var group = RelayCommitGroup()
        #expect(group.isEmpty)
        let below = group.hold([(1, Array(repeating: envelope, count: limit - 2))], valid: Array(repeating: true, count: limit - 2))
        let oneBelow = group.hold([(2, [envelope])], valid: [false])
        #expect(!below && !oneBelow)
        group.ends[envelope.envelope.author] = (1, envelope.envelope.id)
        group.forwardedAhead = true
        let atLimit = group.hold([(3, [envelope])], valid: [true])
        #expect(atLimit)
        let taken = group.take()
        #expect(taken.batches.map(\.0) == [1, 2, 3] && taken.valid.count == limit && taken.valid[limit - 2] == false)
        #expect(taken.forwardedAhead)
        #expect(group.isEmpty && group.ends.isEmpty && !group.forwardedAhead && group.timer == nil)
        // One past the limit in one batch: due at once too.
        let past = group.hold([(4, Array(repeating: envelope, count: limit + 1))], valid: Array(repeating: true, count: limit + 1))
        #expect(past)
    }

    @Test("while a COMMIT is on the disk, what is held waits for it below RelayCommitGroup.heldWhileCommitting envelopes, and not at it or past it")
    func heldWhileCommitting() {
        let limit = RelayCommitGroup.heldWhileCommitting
        #expect(limit > NetworkNode.maximumVerifiedPerStore)
        #expect(RelayCommitGroup.waitsForCommit(held: limit - 1))
        #expect(!RelayCommitGroup.waitsForCommit(held: limit) && !RelayCommitGroup.waitsForCommit(held: limit + 1))
    }
}

/// A batch's signatures checked across the cores in slices of
/// `SignatureCheck.slice`, taken by whichever core is free.
@Suite("Signatures checked in slices")
struct VerifiedSlicesTests {
    /// `count` envelopes in a chain; those at `bad` with their last byte of signed content changed.
    func batch(_ count: Int, bad: Set<Int>) throws -> [CarriedEnvelope] {
        let key = try SigningKey.generate()
        var previous = MessageID.zero
        return try (0..<count).map { i in
            let e = try Envelope.sign(by: key, sequence: UInt64(i + 1), previous: previous, dependencies: [], timestamp: 1,
                                      room: RoomID.random(), kind: .text, body: [UInt8](repeating: UInt8(i % 251), count: 16))
            previous = e.id
            guard bad.contains(i) else { return CarriedEnvelope(hops: 0, envelope: e) }
            var bytes = e.encoded
            bytes[e.signedBytes.count - 1] ^= 1
            return CarriedEnvelope(hops: 0, envelope: try Envelope.decode(bytes, verification: .trustedStorage))
        }
    }

    @Test("every flag where its envelope is, below the parallel size, at it, and with a last slice cut short")
    func flagsInOrder() throws {
        let slice = SignatureCheck.slice
        for count in [31, 32, 33, 4 * slice + 3] {
            let bad: Set<Int> = [0, slice - 1, slice, count - 1]
            let flags = SignatureCheck.verified(try batch(count, bad: bad))
            #expect(flags == (0..<count).map { !bad.contains($0) }, "batch of \(count)")
        }
    }
}

/// Batches handed to the verifier (`VerifyPipe`): one drain at a time,
/// taking every batch waiting, in order.
@Suite("Batches to the verifier, drained together")
struct VerifyPipeTests {
    @Test("the first batch starts a drain, those after it while it runs do not; a drain takes all in order, and ends when none waits")
    func drains() throws {
        let e = try Envelope.sign(by: try SigningKey.generate(), sequence: 1, previous: .zero, dependencies: [], timestamp: 1,
                                  room: RoomID.random(), kind: .text, body: [1])
        let one = [CarriedEnvelope(hops: 0, envelope: e)]
        let pipe = VerifyPipe()
        #expect(!pipe.isDraining && pipe.take().isEmpty)
        #expect(pipe.add(1, one) && pipe.isDraining)
        #expect(!pipe.add(2, one + one) && !pipe.add(3, one))
        #expect(pipe.take().map(\.0) == [1, 2, 3] && pipe.isDraining)
        #expect(!pipe.add(4, one), "still draining: the drain looks again before it ends")
        #expect(pipe.take().map(\.0) == [4])
        #expect(pipe.take().isEmpty && !pipe.isDraining)
        #expect(pipe.add(5, one), "a batch after the drain ended starts the next")
    }

    @Test("a drain checks what it took together, or each batch on its own (a relay's), and hands back flags in order for each")
    func together() throws {
        let key = try SigningKey.generate()
        var previous = MessageID.zero
        let envelopes = try (1...5).map { s in
            let e = try Envelope.sign(by: key, sequence: UInt64(s), previous: previous, dependencies: [], timestamp: 1,
                                      room: RoomID.random(), kind: .text, body: [UInt8(s)])
            previous = e.id
            return CarriedEnvelope(hops: 0, envelope: e)
        }
        for together in [true, false] {
            let pipe = VerifyPipe()
            #expect(pipe.add(1, Array(envelopes[0..<2])))
            #expect(!pipe.add(2, Array(envelopes[2..<5])))
            var calls: [[NetworkNode.VerifiedBatch]] = []
            // Flags that tell the envelopes apart: odd sequences "verify".
            pipe.drain(together: together, verify: { $0.map { $0.envelope.sequence % 2 == 1 } }) { back, _ in calls.append(back) }
            #expect(calls.map { $0.map(\.link) } == (together ? [[1, 2]] : [[1], [2]]))
            #expect(calls.flatMap { $0 }.map(\.valid) == [[true, false], [true, false, true]])
            #expect(!pipe.isDraining)
        }
    }
}
