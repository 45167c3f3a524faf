import Crypto
import Foundation
import Gossip
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// A file opened into its folder as its chunks come (`FileOpener`).
@Suite("Files opened as their chunks come")
struct FileOpenerTests {
    let quota = RelayQuotaTests()

    /// The file's plaintext, its offer and sealed chunks, and a row holding every chunk.
    func file(_ work: TemporaryDirectory, chunks: Int) throws -> (plain: [UInt8], offer: FileOffer, sealed: [[UInt8]], row: Store.FileRow) {
        let size = chunks * FileOffer.chunkSize - 1_000
        let made = try quota.sealedFile(work, "opened.bin", size: size)
        var row = Store.FileRow(root: made.offer.root, size: made.offer.size, origin: .fetched, author: nil, sequence: nil, added: 1)
        for index in 0..<row.chunks { row.mark(index) }
        let plain = [UInt8](try #require(FileManager.default.contents(atPath: work.path + "/opened.bin")))
        return (plain, made.offer, made.chunks, row)
    }

    func names(_ dir: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    @Test("chunks in order, and in reverse past the early buffer (those then read back in turn): the file named is the plaintext, its hash the offer's, no temporary file left")
    func orders() throws {
        let work = TemporaryDirectory(), dir = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let f = try file(work, chunks: FileOpener.earlyChunks + 6)
        for (order, name) in [(Array(f.sealed.indices), "in order"), (Array(f.sealed.indices.reversed()), "reversed")] {
            let into = TemporaryDirectory()
            let opener = try FileOpener(offer: f.offer, folder: into.path)
            #expect(names(into) == [".peernode-" + Hex.encode(f.offer.root.prefix(8)) + ".part"])
            for index in order { opener.take(f.sealed[index], index: UInt64(index)) }
            let (path, hash) = try opener.finish(f.row, store: node.store)
            #expect(path == into.path + "/opened.bin" && hash == f.offer.plainHash, "\(name)")
            #expect([UInt8](try #require(FileManager.default.contents(atPath: path))) == f.plain, "\(name)")
            #expect(names(into) == ["opened.bin"], "\(name)")
            var info = stat()
            #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == SavedFile.fileMode, "the rights the umask gives, not the node's 0600")
        }
    }

    @Test("chunks past the early buffer are hashed when their turn comes, read back then, not in a pass at the end (four sources' chunks come out of order)")
    func hashedInTurn() throws {
        let work = TemporaryDirectory(), dir = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let f = try file(work, chunks: FileOpener.earlyChunks + 6)
        let opener = try FileOpener(offer: f.offer, folder: into.path)
        // Every chunk but the first: the buffer takes `earlyChunks` of them, the rest only go to the file.
        for index in 1..<f.sealed.count { opener.take(f.sealed[index], index: UInt64(index)) }
        #expect(opener.progress.hashed == 0)
        opener.take(f.sealed[0], index: 0)
        #expect(opener.progress.hashed == UInt64(f.sealed.count), "all hashed once the first came, those past the buffer read back")
        let (path, hash) = try opener.finish(f.row, store: node.store)
        #expect(hash == f.offer.plainHash)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: path))) == f.plain)
    }

    @Test("the writeback of what is hashed starts every writeBehindBytes: not one chunk before, and at the chunk that reaches it")
    func writesBehind() throws {
        let work = TemporaryDirectory(), dir = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let reaching = Int((FileOpener.writeBehindBytes + off_t(FileOffer.chunkSize) - 1) / off_t(FileOffer.chunkSize))
        let f = try file(work, chunks: reaching + 1)
        let opener = try FileOpener(offer: f.offer, folder: into.path)
        for index in 0..<(reaching - 1) { opener.take(f.sealed[index], index: UInt64(index)) }
        #expect(opener.progress.writtenBehind == 0, "one chunk short of the bound")
        opener.take(f.sealed[reaching - 1], index: UInt64(reaching - 1))
        #expect(opener.progress.writtenBehind == off_t(reaching * FileOffer.chunkSize))
        opener.take(f.sealed[reaching], index: UInt64(reaching))
        #expect(opener.progress.writtenBehind == off_t(reaching * FileOffer.chunkSize), "the next start waits for the next writeBehindBytes")
        let (path, _) = try opener.finish(f.row, store: node.store)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: path))) == f.plain)
    }

    @Test("a chunk not taken (held from before) is opened from the chunk file at the end")
    func heldBefore() throws {
        let work = TemporaryDirectory(), dir = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let f = try file(work, chunks: 3)
        try node.store.createChunkFile(f.offer.root)
        try node.store.writeChunk(f.sealed[1], index: 1, of: f.row)
        let opener = try FileOpener(offer: f.offer, folder: into.path)
        opener.take(f.sealed[2], index: 2)
        opener.take(f.sealed[0], index: 0)
        let (path, _) = try opener.finish(f.row, store: node.store)
        #expect([UInt8](try #require(FileManager.default.contents(atPath: path))) == f.plain)
    }

    @Test("a chunk the offer's key does not open fails the file with why, and leaves nothing in the folder; a transfer abandoned leaves nothing either")
    func failures() throws {
        let work = TemporaryDirectory(), dir = TemporaryDirectory(), into = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let f = try file(work, chunks: 2)
        let opener = try FileOpener(offer: f.offer, folder: into.path)
        let stranger = FileKey.generate()
        opener.take(f.sealed[0], index: 0)
        opener.take(f.plain[FileOffer.chunkSize...].withUnsafeBytes { stranger.seal(chunk: $0, index: 1) }, index: 1)
        #expect(throws: NodeError.self) { try opener.finish(f.row, store: node.store) }
        #expect(names(into).isEmpty)
        let again = try FileOpener(offer: f.offer, folder: into.path)
        again.take(f.sealed[0], index: 0)
        again.abandon()
        again.take(f.sealed[1], index: 1)
        #expect(names(into).isEmpty)
        #expect(throws: NodeError.self) { try again.finish(f.row, store: node.store) }
    }
}
