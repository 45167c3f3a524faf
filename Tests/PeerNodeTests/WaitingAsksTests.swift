import Crypto
import Foundation
import Gossip
import NodeCore
@testable import PeerNode
import TestSupport
import Testing

/// Asks for chunks a fetch here has asked of another peer wait for them
/// (`WaitingAsks`, `Files.answer`; docs/PROTOCOL.md §16).
@Suite("Asks that wait for chunks on their way")
struct WaitingAsksTests {
    let root = [UInt8](repeating: 3, count: 32)
    let units = RelayQuotaTests()
    let source = try! PublicKey(bytes: [UInt8](repeating: 0xAB, count: 32))  // test input
    let carol = try! PublicKey(bytes: [UInt8](repeating: 0xCD, count: 32))  // test input

    @Test("a link holds perLink asks at most, the one past answered none; an ask held twice counts once; each chunk that comes frees its askers")
    func perLink() {
        var w = WaitingAsks()
        let all = (0..<UInt64(WaitingAsks.perLink + 1)).map { $0 }
        #expect(w.hold(root, chunks: Array(all.prefix(WaitingAsks.perLink)), on: 1, now: 0).isEmpty, "at the limit: all held")
        #expect(w.hold(root, chunks: [0], on: 1, now: 0).isEmpty, "held already: not twice, not refused")
        #expect(w.hold(root, chunks: [all.last!], on: 1, now: 0) == [all.last!], "one past: answered none")
        #expect(w.held[1] == WaitingAsks.perLink)
        #expect(w.hold(root, chunks: [5], on: 2, now: 0).isEmpty, "another link has its own room")
        #expect(w.came(root, index: 5).sorted() == [1, 2])
        #expect(w.came(root, index: 5).isEmpty, "freed once")
        #expect(w.held[1] == WaitingAsks.perLink - 1 && w.held[2] == nil)
        #expect(w.hold(root, chunks: [all.last!], on: 1, now: 0).isEmpty, "room again")
    }

    @Test("an ask waits patience seconds at most, not one moment more; a fetch that ends frees all of its asks by link; a link that goes down leaves nothing held")
    func patienceAndEnds() {
        var w = WaitingAsks()
        _ = w.hold(root, chunks: [0, 1], on: 1, now: 10)
        _ = w.hold(root, chunks: [2], on: 1, now: 10.5)
        let other = [UInt8](repeating: 4, count: 32)
        _ = w.hold(other, chunks: [7, 3], on: 2, now: 10)
        #expect(w.expired(now: 10 + WaitingAsks.patience - 0.01).isEmpty, "just before patience")
        let old = w.expired(now: 10 + WaitingAsks.patience)
        #expect(old.count == 2 && old.contains { $0.root == root && $0.link == 1 && $0.chunks == [0, 1] }
                && old.contains { $0.root == other && $0.link == 2 && $0.chunks == [3, 7] }, "at patience, in order: \(old)")
        #expect(w.held[1] == 1 && w.held[2] == nil)
        _ = w.hold(root, chunks: [4], on: 3, now: 11)
        let ended = w.ended(root)
        #expect(ended.count == 2 && ended[0].link == 1 && ended[0].chunks == [2] && ended[1].link == 3)
        #expect(w.isEmpty && w.held.isEmpty)
        _ = w.hold(root, chunks: [1], on: 4, now: 12)
        w.dropped(4)
        #expect(w.isEmpty && w.held.isEmpty && w.expired(now: 100).isEmpty)
    }

    /// A node fetching a file of `size` bytes to serve it, nothing held yet; the node and folders kept for the caller.
    func fetching(size: Int) throws -> (files: Files, file: (offer: FileOffer, chunks: [[UInt8]], levels: [[[UInt8]]]), kept: (Node, [TemporaryDirectory])) {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try units.relayNode(dir, quota: 10_000_000)
        let file = try units.sealedFile(work, "waited.bin", size: size)
        #expect(node.files.relay(file.offer.root, size: file.offer.size, asker: units.peer, now: 1))
        return (node.files, file, (node, [dir, work]))
    }

    @Test("""
        a node fetching a file holds an ask for a chunk it has asked another peer for, and answers it with the chunk once \
        it came and verified; a chunk asked of the asker itself, or of nobody yet, is answered none at once
        """)
    func heldUntilItComes() throws {
        let (files, file, kept) = try fetching(size: 64_000 * 20)
        defer { withExtendedLifetime(kept) {} }
        let links: [LinkID: PublicKey] = [1: source, 2: carol]
        // The fetch asks its first chunks of the source alone (carol's link is not offered to it).
        let asked = files.fetch.assign(links: [1: source], now: 1)
        #expect(asked == [.want(1, root: file.offer.root, chunks: Array(0..<16))])
        let answer = files.answer(file.offer.root, chunks: [0, 1, 16], asker: (2, carol), now: 1)
        #expect(answer == [.none(root: file.offer.root, chunks: [16])], "0 and 1 wait; 16 is asked of nobody: \(answer)")
        // The source asks too: what it was asked for is not waited for.
        #expect(files.answer(file.offer.root, chunks: [2], asker: (1, source), now: 1) == [.none(root: file.offer.root, chunks: [2])])
        #expect(files.takeFreedAsks().isEmpty)
        _ = files.received(file.offer.root, index: 1, proof: FileTree.proof(index: 1, levels: file.levels), sealed: file.chunks[1],
                           from: source, links: links, now: 1.1)
        let freed = files.takeFreedAsks()
        #expect(freed.count == 1 && freed[0].link == 2 && freed[0].chunks == [1] && freed[0].held, "\(freed)")
        guard case let .chunk(_, index, proof, sealed)? = files.answer(file.offer.root, chunks: [1], asker: (2, carol), now: 1.1).first else {
            Issue.record("the chunk that came was not served")
            return
        }
        #expect(index == 1 && sealed == file.chunks[1])
        #expect(FileTree.verify(leaf: FileTree.leaf(index: 1, sealed: sealed), index: 1, chunks: 20, proof: proof, root: file.offer.root))
        // Chunk 0 never comes: none once patience has passed.
        #expect(files.takeFreedAsks(expiring: 1 + WaitingAsks.patience - 0.01).isEmpty)
        let late = files.takeFreedAsks(expiring: 1 + WaitingAsks.patience)
        #expect(late.count == 1 && late[0].chunks == [0] && !late[0].held)
    }

    @Test("""
        a chunk asked of a peer that is fetching the file too (it asked us for some) is waited for only by an asker whose \
        key is below that peer's, so fetchers never wait on each other all the way round a ring; the author's hand-over \
        ask (the last chunk alone) does not make it a fetcher
        """)
    func noRingOfWaits() throws {
        let (files, file, kept) = try fetching(size: 64_000 * 20)
        defer { withExtendedLifetime(kept) {} }
        let root = file.offer.root
        let low = try PublicKey(bytes: [UInt8](repeating: 0x01, count: 32)), high = try PublicKey(bytes: [UInt8](repeating: 0xFE, count: 32))
        _ = files.fetch.assign(links: [1: source], now: 1)
        // The source's hand-over ask: still not a fetcher, so both askers wait.
        files.asked(root, chunks: [19], by: source)
        #expect(files.answer(root, chunks: [0], asker: (2, high), now: 1).isEmpty && files.answer(root, chunks: [1], asker: (3, low), now: 1).isEmpty)
        // Once it asks for other chunks, it is fetching: only the asker below it waits.
        files.asked(root, chunks: [16, 17], by: source)
        #expect(files.answer(root, chunks: [2], asker: (2, high), now: 1) == [.none(root: root, chunks: [2])], "0xFE… > 0xAB…: none")
        #expect(files.answer(root, chunks: [3], asker: (3, low), now: 1).isEmpty, "0x01… < 0xAB…: waits")
    }

    @Test("three nodes fetching one file, each having asked the next for its first chunk and asked by the one before: not all three wait, whatever their keys")
    func ringOfThree() throws {
        let work = TemporaryDirectory()
        let file = try units.sealedFile(work, "ring.bin", size: 64_000 * 4)
        let root = file.offer.root
        var kept: [Any] = [work]
        defer { withExtendedLifetime(kept) {} }
        // Every order of three keys round the ring.
        let byte: [UInt8] = [0x10, 0x80, 0xF0]
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let keys = try order.map { try PublicKey(bytes: [UInt8](repeating: byte[$0], count: 32)) }
            var waiting = 0
            for i in 0..<3 {
                let dir = TemporaryDirectory()
                let node = try units.relayNode(dir, quota: 10_000_000)
                kept += [dir, node]
                let (before, next) = (keys[(i + 2) % 3], keys[(i + 1) % 3])
                #expect(node.files.relay(root, size: file.offer.size, asker: before, now: 1))
                _ = node.files.fetch.assign(links: [1: next], now: 1)
                // Each asked this one for other chunks too: both are known to fetch it.
                node.files.asked(root, chunks: [1, 2], by: before)
                node.files.asked(root, chunks: [1, 2], by: next)
                if node.files.answer(root, chunks: [0], asker: (2, before), now: 1).isEmpty { waiting += 1 }
            }
            #expect(waiting < 3 && waiting > 0, "keys in the order \(order): \(waiting) of the three wait")
        }
    }

    @Test("the asks waiting for a file are answered with their chunks when it completes, and none when its fetch is dropped")
    func endsOfAFetch() throws {
        let (files, file, kept) = try fetching(size: 64_000 * 3)
        defer { withExtendedLifetime(kept) {} }
        _ = files.fetch.assign(links: [1: source], now: 1)
        #expect(files.answer(file.offer.root, chunks: [0, 1, 2], asker: (2, carol), now: 1).isEmpty, "all three wait")
        units.serve(file, to: files, only: [2, 0], now: 1)
        #expect(files.takeFreedAsks().map(\.chunks) == [[2], [0]])
        units.serve(file, to: files, only: [1], now: 1)
        #expect(files.holdsWhole(file.offer.root))
        #expect(files.takeFreedAsks().map(\.chunks) == [[1]], "the last chunk's ask, freed as it came")

        let (other, second, more) = try fetching(size: 64_000 * 2)
        defer { withExtendedLifetime(more) {} }
        _ = other.fetch.assign(links: [1: source], now: 1)
        _ = other.answer(second.offer.root, chunks: [0, 1], asker: (2, carol), now: 1)
        other.dropStale(now: 1 + Files.relayPatience)
        let dropped = other.takeFreedAsks()
        #expect(dropped.count == 1 && dropped[0].chunks == [0, 1] && !dropped[0].held, "\(dropped)")
    }
}
