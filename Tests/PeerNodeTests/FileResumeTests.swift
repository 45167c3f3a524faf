import Crypto
import Foundation
import Gossip
import NodeCore
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// A `/get` of a file held in part from an earlier run (`Files.get`,
/// `HeldCheck`, `resume`).
@Suite("Files taken up again from the chunks held")
struct FileResumeTests {
    let units = FileUnitTests()
    let quota = RelayQuotaTests()

    @Test("a /get of a file held in part reads its chunks back off the loop: nothing is asked until they are hashed; a chunk the chunk file no longer holds is fetched again; a check made stale by a later /get starts nothing")
    func heldReadBack() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try units.life.node(dir)
        _ = try node.join(units.life.name)
        let file = try quota.sealedFile(work, "held.bin", size: 4 * FileOffer.chunkSize + 10)
        #expect(file.chunks.count == 5)
        let offered = try units.life.chain(units.bob, on: node, [(.file, file.offer.encoded, [])])[0]
        _ = try node.store.insert([offered], receivedAt: 1)
        let offer = try #require(node.open(offered)?.offer)
        var row = Store.FileRow(root: offer.root, size: offer.size, origin: .fetched, author: offered.author, sequence: offered.sequence, added: 1)
        try node.store.createChunkFile(offer.root)
        for i in [0, 1] { try node.store.writeChunk(file.chunks[i], index: UInt64(i), of: row) }
        // Chunk 3 marked held but never written (a crash before its write): the chunk file ends before it.
        for i: UInt64 in [0, 1, 3] { row.mark(i) }
        try node.store.saveFile(row)

        let place = units.life.name.value
        let first = try node.files.get(offer, from: offered, number: 1, place: place, folder: into.path, now: 2, clock: 2)
        let second = try node.files.get(offer, from: offered, number: 1, place: place, folder: into.path, now: 2, clock: 2)
        guard case let .checkingHeld(stale)? = first.first, case let .checkingHeld(check)? = second.first, first.count == 1, second.count == 1 else {
            Issue.record("no read-back: \(first) \(second)")
            return
        }
        #expect(check.indices == [0, 1, 3])
        #expect(!node.files.fetch.fetches(offer.root), "nothing asked while the chunks held are read back")
        #expect(node.files.resume(stale.run(store: node.store), clock: 3).isEmpty, "the first /get's check is stale")
        #expect(!node.files.fetch.fetches(offer.root))

        let held = check.run(store: node.store)
        #expect(Set(held.leaves.keys) == [0, 1])
        #expect(held.leaves[0] == FileTree.leaf(index: 0, sealed: file.chunks[0]))
        let resumed = node.files.resume(held, clock: 3)
        guard case let .progress(_, _, root, bytes, of)? = resumed.first else {
            Issue.record("not resumed: \(resumed)")
            return
        }
        #expect(root == offer.root && bytes == 2 * UInt64(FileOffer.chunkSize) && of == offer.size)
        let asked = node.files.fetch.assign(links: [1: quota.peer], now: 3)
        #expect(asked == [FileFetch.Action.want(1, root: offer.root, chunks: [2, 3, 4])], "what is held whole is not asked again; chunk 3 is")
    }
}
