import Crypto
import Gossip
@testable import NodeCore
import Testing

/// The fetch core (docs/PROTOCOL.md §16, "Fetching") as lists of inputs and
/// the asks they make: no socket, no clock but the one passed in.
@Suite("Fetching a file from the swarm: who is asked for what")
struct FileFetchTests {
    let root = [UInt8](repeating: 1, count: 32)
    let a = try! PublicKey(bytes: [UInt8](repeating: 0xA, count: 32))  // test input
    let b = try! PublicKey(bytes: [UInt8](repeating: 0xB, count: 32))  // test input

    func asked(_ actions: [FileFetch.Action]) -> [LinkID: [UInt64]] {
        var out: [LinkID: [UInt64]] = [:]
        for case let .want(link, _, chunks) in actions { out[link, default: []] += chunks }
        return out
    }

    @Test("two links share a file: chunks dealt round them lowest first, 16 in flight on each, each asked once; what is held is not asked; the last chunk completes it")
    func sharing() {
        var f = FileFetch()
        let links: [LinkID: PublicKey] = [1: a, 2: b]
        f.start(root, chunks: 40, held: { $0 == 0 })
        var out = asked(f.assign(links: links, now: 0))
        #expect(out[1] == Array(stride(from: UInt64(1), through: 31, by: 2)) && out[2] == Array(stride(from: UInt64(2), through: 32, by: 2)))
        #expect(f.assign(links: links, now: 0).isEmpty, "nothing more while every link is full")
        // Answer whatever is outstanding, from the peer it was asked of, until the file is complete.
        var outstanding: [(LinkID, UInt64)] = out.flatMap { link, chunks in chunks.map { (link, $0) } }.sorted { $0.1 < $1.1 }
        var everAsked = outstanding.map(\.1)
        var completed = false
        while let (link, index) = outstanding.first {
            outstanding.removeFirst()
            let actions = f.received(root, index: index, from: link == 1 ? a : b, valid: true, links: links, now: 1)
            completed = completed || actions.contains(.complete(root))
            out = asked(actions)
            for (l, chunks) in out { outstanding += chunks.map { (l, $0) }; everAsked += chunks }
            for l in [1, 2] { #expect(outstanding.filter { $0.0 == l }.count <= FileFetch.perLink) }
        }
        #expect(completed && !f.fetches(root))
        #expect(everAsked.sorted() == Array(1...39).map(UInt64.init), "each missing chunk asked exactly once")
    }

    @Test("a file of the largest size (4 GiB, 67,109 chunks) through one link: every chunk asked once, in order, and the transfer completes (the bookkeeping per chunk does not grow with the file: `make bench` prints it)")
    func largest() {
        var f = FileFetch()
        let links: [LinkID: PublicKey] = [1: a]
        let chunks = FileOffer.chunks(size: FileOffer.maximumSize)
        #expect(chunks == 67_109)
        f.start(root, chunks: chunks, held: { _ in false })
        var pending = f.assign(links: links, now: 0)
        var order: [UInt64] = []
        var completed = false
        while !pending.isEmpty {
            let action = pending.removeFirst()
            completed = completed || action == .complete(root)
            guard case let .want(_, _, asked) = action else { continue }
            for index in asked {
                order.append(index)
                pending += f.received(root, index: index, from: a, valid: true, links: links, now: 0)
            }
        }
        #expect(completed && !f.fetches(root))
        #expect(order == Array(0..<chunks), "each asked once, lowest first")
    }

    @Test("a chunk that does not verify: its peer is asked nothing more for the file, and what it was asked goes to the other")
    func badChunk() {
        var f = FileFetch()
        let links: [LinkID: PublicKey] = [1: a, 2: b]
        f.start(root, chunks: 4, held: { _ in false })
        #expect(asked(f.assign(links: links, now: 0)) == [1: [0, 2], 2: [1, 3]])
        #expect(asked(f.received(root, index: 0, from: a, valid: false, links: links, now: 1)) == [2: [0, 2]])
        // Answers from the dropped peer count for nothing now.
        #expect(f.received(root, index: 2, from: a, valid: true, links: links, now: 1).isEmpty)
        #expect(f.left(root) == 4)
        for i in [0, 1, 2] as [UInt64] { #expect(f.received(root, index: i, from: b, valid: true, links: links, now: 2).isEmpty) }
        #expect(f.received(root, index: 3, from: b, valid: true, links: links, now: 2) == [.complete(root)])
        #expect(!f.fetches(root))
    }

    @Test("a peer that lacks the file is left alone while another is asked; an unanswered ask moves on after wantTimeout and leaves its peer alone for lackMemory; a link that went down gives its asks back")
    func lackingAndTimeouts() {
        var f = FileFetch()
        let links: [LinkID: PublicKey] = [1: a, 2: b]
        f.start(root, chunks: 2, held: { _ in false })
        #expect(asked(f.assign(links: links, now: 0)) == [1: [0], 2: [1]])
        #expect(asked(f.lacking(root, chunks: [0], from: a, links: links, now: 1)) == [2: [0]])
        #expect(f.tick(links: links, now: 10.9).isEmpty, "nothing timed out, and everything is asked of b")
        // Chunk 1 (asked of b at 0) times out at 15; a's memory has passed: a is asked.
        #expect(asked(f.tick(links: links, now: 15)) == [1: [1]])
        #expect(asked(f.tick(links: links, now: 16)) == [1: [0]], "chunk 0 (asked of b at 1) times out at 16")
        // a's link goes down: b is still left alone (it timed out at 16), until 26.
        #expect(f.linkDown(1, links: [2: b], now: 17).isEmpty)
        #expect(asked(f.tick(links: [2: b], now: 26)) == [2: [0, 1]])
        // A chunk nobody asked a peer for is not taken from it.
        var g = FileFetch()
        g.start(root, chunks: 2, held: { _ in false })
        #expect(g.received(root, index: 0, from: b, valid: true, links: [1: a], now: 0).isEmpty)
        #expect(g.left(root) == 2)
    }

    @Test("""
        a peer that says it lacks the file is asked again after lackFirst, twice as long after each further none with \
        no chunk between, at most lackMemory; a chunk from it (a relay fetching the file) starts the waits over
        """)
    func lackBackoff() {
        var f = FileFetch()
        let links: [LinkID: PublicKey] = [1: a]
        f.start(root, chunks: 4, held: { _ in false })
        #expect(asked(f.assign(links: links, now: 0)) == [1: [0, 1, 2, 3]])
        #expect(f.lacking(root, chunks: [0, 1, 2, 3], from: a, links: links, now: 0).isEmpty, "left alone at first")
        #expect(FileFetch.lackFirst == 0.25 && FileFetch.lackMemory == 10)
        #expect(f.tick(links: links, now: 0.2).isEmpty)
        #expect(asked(f.tick(links: links, now: 0.25)) == [1: [0, 1, 2, 3]], "asked again after lackFirst")
        // It has fetched chunk 0 meanwhile, and lacks the rest: the wait starts over at lackFirst.
        #expect(f.received(root, index: 0, from: a, valid: true, links: links, now: 1.5).isEmpty)
        #expect(f.lacking(root, chunks: [1, 2, 3], from: a, links: links, now: 1.5).isEmpty)
        #expect(f.tick(links: links, now: 1.7).isEmpty)
        #expect(asked(f.tick(links: links, now: 1.75)) == [1: [1, 2, 3]])
        // Nones with no chunk between: 0.5, 1, 2, 4, 8, then 10 s at most.
        var now = 1.75
        for wait in [0.5, 1, 2, 4, 8, 10, 10] {
            #expect(f.lacking(root, chunks: [1, 2, 3], from: a, links: links, now: now).isEmpty)
            #expect(f.tick(links: links, now: now + wait - 0.05).isEmpty, "left alone for \(wait) s")
            // Once no chunk has come for stalledAfter (the last at 1.5 s), it is probed a chunk at a time.
            let again: [UInt64] = now + wait - 1.5 >= FileFetch.stalledAfter ? [1] : [1, 2, 3]
            #expect(asked(f.tick(links: links, now: now + wait)) == [1: again], "asked again after \(wait) s")
            now += wait
        }
    }

    @Test("at most maximumTransfers files are fetched at once; the next starts when one ends")
    func transfersBound() {
        var f = FileFetch()
        let roots = (0..<(FileFetch.maximumTransfers + 1)).map { [UInt8](repeating: UInt8($0), count: 32) }
        for r in roots { f.start(r, chunks: 1, held: { _ in false }) }
        #expect(f.assign(links: [1: a], now: 0).count == FileFetch.maximumTransfers)
        let next = f.received(roots[0], index: 0, from: a, valid: true, links: [1: a], now: 1)
        #expect(next == [.complete(roots[0]), .want(1, root: roots[FileFetch.maximumTransfers], chunks: [0])])
    }

    @Test("a transfer that had a place and took no chunk in for stalledAfter gives it to one waiting its turn and is only probed, a chunk at a time on each link; a chunk come gives it a place again; one waiting its turn is not stalled")
    func stalledGivesItsPlace() {
        var f = FileFetch()
        let limit = FileFetch.maximumTransfers, wait = FileFetch.stalledAfter
        #expect(wait == 30)
        // `limit` files nobody serves, then one somebody does, waiting its turn.
        let stuck = (0..<limit).map { [UInt8](repeating: UInt8($0), count: 32) }
        let served = [UInt8](repeating: 0xEE, count: 32)
        for r in stuck + [served] { f.start(r, chunks: 40, held: { _ in false }, now: 0) }
        let first = asked(f.assign(links: [1: a], now: 0))
        #expect(first[1]?.count == limit * FileFetch.perLink, "the first \(limit) have the places, 16 chunks each")
        #expect(f.waitsItsTurn(served) && !f.waitsItsTurn(stuck[limit - 1]), "one past the limit waits its turn")
        // They go unanswered: the asks come back after wantTimeout, the peer left alone meanwhile.
        _ = f.tick(links: [1: a], now: FileFetch.wantTimeout)
        #expect(f.stalled(for: wait, now: wait - 0.01).isEmpty, "not yet")
        #expect(f.stalled(for: wait, now: wait) == stuck, "the one waiting its turn is not stalled: it never had a place")
        let after = f.tick(links: [1: a], now: wait)
        let roots = after.compactMap { if case let .want(_, root, _) = $0 { root } else { nil } }
        #expect(roots.contains(served) && !f.waitsItsTurn(served), "the file waiting its turn has a place now")
        let wants = after.compactMap { if case let .want(_, root, chunks) = $0 { (root, chunks) } else { nil } }
        #expect(wants.first { $0.0 == served }?.1.count == FileFetch.perLink, "with the room of a place: \(wants.first { $0.0 == served }?.1 ?? [])")
        #expect(wants.filter { $0.0 != served }.allSatisfy { $0.1.count == 1 } && wants.contains { $0.0 == stuck[0] },
                "the stalled are probed, one chunk each: \(wants.map(\.1.count))")
        // A stalled file's probe answered: it has a place again (and one chunk came, so the rest is asked).
        let probe = wants.first { $0.0 == stuck[0] }?.1.first ?? 0
        let back = f.received(stuck[0], index: probe, from: a, valid: true, links: [1: a], now: wait + 1)
        #expect(back.contains { if case let .want(_, root, chunks) = $0 { root == stuck[0] && chunks.count == FileFetch.perLink } else { false } },
                "a chunk come: a place again, its link filled to 16: \(back)")
    }
}
