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
@Suite("Files taken up again from the chunks held, and a fetch that cannot write stopped")
struct FileResumeTests {
    let units = FileUnitTests()
    let quota = RelayQuotaTests()

    @Test("a /get of a file held in part reads its chunks back off the loop: nothing is asked until they are checked; a chunk changed on the disk, and one the chunk file no longer holds, are fetched again; a /get again into the same folder starts nothing; a check made stale by a /get into another folder starts nothing")
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
        // Chunk 2 marked held but changed on the disk (one byte: a write cut short by a power loss);
        // chunk 3 marked held but never written (a crash before its write): the chunk file ends before it.
        var changed = file.chunks[2]
        changed[100] ^= 1
        try node.store.writeChunk(changed, index: 2, of: row)
        for i: UInt64 in [0, 1, 2, 3] { row.mark(i) }
        try node.store.saveFile(row)

        let place = units.life.name.value
        let first = try node.files.get(offer, from: offered, number: 1, place: place, folder: into.path, now: 2, clock: 2)
        // Again into the same folder: where it stands, nothing started again.
        let again = try node.files.get(offer, from: offered, number: 1, place: place, folder: into.path, now: 2, clock: 2)
        guard case .progress? = again.first, again.count == 1 else {
            Issue.record("the same /get again started something: \(again)")
            return
        }
        // Into another folder: the fetch moves there (said), with a read-back of its own.
        let elsewhere = TemporaryDirectory()
        let second = try node.files.get(offer, from: offered, number: 1, place: place, folder: elsewhere.path, now: 2, clock: 2)
        guard case let .checkingHeld(stale)? = first.first, case let .checkingHeld(check)? = second.first, first.count == 1, second.count == 2,
              case .moved(_, _, _, into.path, elsewhere.path)? = second.last else {
            Issue.record("no read-back: \(first) \(second)")
            return
        }
        #expect(check.indices == [0, 1, 2, 3])
        #expect(!node.files.fetch.fetches(offer.root), "nothing asked while the chunks held are read back")
        #expect(node.files.resume(stale.run(store: node.store), clock: 3).isEmpty, "the first /get's check is stale")
        #expect(!node.files.fetch.fetches(offer.root))

        let held = check.run(store: node.store)
        #expect(Set(held.leaves.keys) == [0, 1])
        #expect(held.leaves[0] == FileTree.leaf(index: 0, sealed: file.chunks[0]))
        #expect(check.opener.progress.hashed == 2, "the whole ones are in the file being saved already, not read again at its end")
        let resumed = node.files.resume(held, clock: 3)
        guard case let .progress(_, _, root, bytes, of)? = resumed.first else {
            Issue.record("not resumed: \(resumed)")
            return
        }
        #expect(root == offer.root && bytes == 2 * UInt64(FileOffer.chunkSize) && of == offer.size)
        let asked = node.files.fetch.assign(links: [1: quota.peer], now: 3)
        #expect(asked == [FileFetch.Action.want(1, root: offer.root, chunks: [2, 3, 4])], "what is held whole is not asked again; chunks 2 and 3 are")
    }

    @Test("a chunk that cannot be written (the chunk file gone, as a full disk fails a write) stops the fetch at once, said once as file_failed with why, nothing asked again; the chunks that came stay held for the next /get")
    func writeFailureStops() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try units.life.node(dir)
        _ = try node.join(units.life.name)
        let file = try quota.sealedFile(work, "stops.bin", size: 3 * FileOffer.chunkSize)
        let offered = try units.life.chain(units.bob, on: node, [(.file, file.offer.encoded, [])])[0]
        _ = try node.store.insert([offered], receivedAt: 1)
        let offer = try #require(node.open(offered)?.offer)
        _ = try node.files.get(offer, from: offered, number: 7, place: units.life.name.value, folder: into.path, now: 2, clock: 2)
        let links: [LinkID: PublicKey] = [1: quota.peer]
        #expect(node.files.fetch.assign(links: links, now: 2) == [FileFetch.Action.want(1, root: offer.root, chunks: [0, 1, 2])])
        let proof = { (i: Int) in FileTree.proof(index: i, levels: file.levels) }
        _ = node.files.received(offer.root, index: 0, proof: proof(0), sealed: file.chunks[0], from: quota.peer, links: links, now: 3)
        #expect(unlink(node.store.chunkPath(offer.root)) == 0)
        let (actions, said) = node.files.received(offer.root, index: 1, proof: proof(1), sealed: file.chunks[1], from: quota.peer, links: links, now: 3)
        guard case let .failed(number, _, root, reason)? = said.first, said.count == 1 else {
            Issue.record("not stopped: \(said)")
            return
        }
        #expect(number == 7 && root == offer.root && reason.contains("goes on from it"), "\(reason)")
        #expect(actions.isEmpty && !node.files.fetch.fetches(offer.root), "nothing asked again")
        let later = node.files.received(offer.root, index: 2, proof: proof(2), sealed: file.chunks[2], from: quota.peer, links: links, now: 4)
        #expect(later.actions.isEmpty && later.said.isEmpty, "a chunk still on its way is not looked at, nor its failure said again")
        let row = try #require(try node.store.file(offer.root))
        #expect(row.holds(0) && !row.holds(1) && row.folder == into.path, "what came stays held, with its folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: into.path).isEmpty, "the temporary file is gone")
    }
}
