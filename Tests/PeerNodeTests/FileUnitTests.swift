import Crypto
import Foundation
import Gossip
import NodeCore
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// The files unit in one process: an offer's edit, and the unit over a failing store.
@Suite("Files: an offer's caption edited, and the unit over a failing store")
struct FileUnitTests {
    let life = MessageLifeRulesTests()
    let units = UnitStoreFailureTests()
    let bob = try! SigningKey.generate()  // test input

    func offer(caption: String) -> FileOffer {
        FileOffer(size: 100_000, root: [UInt8](repeating: 4, count: 32), plainHash: [UInt8](repeating: 5, count: 32),
                  key: FileKey.generate().exportedBytes, name: "plan.pdf", type: "application/pdf", caption: caption)
    }

    @Test("an edit of a file offer changes its caption only: the offer still names its file, as it reads now and in its versions")
    func captionEdit() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let first = offer(caption: "draft")
        let original = try life.chain(bob, on: node, [(.file, first.encoded, [])])[0]
        let edit = try life.chain(bob, on: node, after: [original], [(.edit, MessageEdit(original: MessageRef(original), text: Array("final".utf8)).encoded, [])])[0]
        _ = try node.store.insert([original, edit], receivedAt: 1)
        #expect(node.messageLife.acceptEdit(edit, try #require(node.open(edit))) != nil)
        let now = try #require(node.messageLife.openedNow(original))
        #expect(now.edited && now.opened.offer?.caption == "final" && now.opened.offer?.root == first.root && now.opened.offer?.name == "plan.pdf")
        #expect(now.opened.text.unsanitized == "⎘ plan.pdf (100 kB) final")
        // As it arrives, at a terminal: the offer's line with its new caption, not the caption alone.
        let opened = try #require(node.open(edit))
        var shown = ShownMessage(envelope: edit, opened: opened, room: life.name, to: nil, me: node.me, book: node.people)
        #expect(TerminalPresenter.lines(.edited(shown, original: original)).first?.hasSuffix("> final (edited)") == true)
        shown.editedOffer = node.open(original).flatMap { $0.withText(opened.text.unsanitized).offer }
        let line = TerminalPresenter.lines(.edited(shown, original: original)).first ?? ""
        #expect(line.hasSuffix("> ⎘ plan.pdf (100 kB) final (edited)"), "\(line)")
    }

    /// A node in the room holding bob's offer of `plan.pdf` (not fetched), and the offer as it reads.
    func offeredToNode(_ dir: TemporaryDirectory) throws -> (node: Node, offered: Envelope, offer: FileOffer) {
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let offered = try life.chain(bob, on: node, [(.file, offer(caption: "").encoded, [])])[0]
        _ = try node.store.insert([offered], receivedAt: 1)
        return (node, offered, try #require(node.open(offered)?.offer))
    }

    @Test("a file offered is a message like a text: it counts as unread, is its room's last message, and read receipts cover it")
    func offerIsAMessage() throws {
        let dir = TemporaryDirectory()
        let (node, offered, _) = try offeredToNode(dir)
        let room = offered.room
        let summary = try #require(try node.store.roomSummary(of: room, name: life.name.value, me: node.me))
        #expect(summary.unread == 1 && summary.last?.envelope.id == offered.id, "unread \(summary.unread)")
        #expect(try node.store.latestSequences(in: room, me: node.me)[bob.publicKey] == offered.sequence)
        #expect(try node.store.messages(by: bob.publicKey, in: room).map(\.id) == [offered.id], "checked again if bob is removed")
        try node.store.markRead(room)
        #expect(try node.store.unreadCount(of: room, me: node.me) == 0)
    }

    @Test("a /get under way draws a bar on the prompt, as a catch-up does")
    func promptBar() throws {
        let dir = TemporaryDirectory(), into = TemporaryDirectory()
        let (node, offered, theOffer) = try offeredToNode(dir)
        #expect(node.files.promptTag == "")
        let said = try node.files.get(theOffer, from: offered, number: 1, place: life.name.value, folder: into.path, now: 2, clock: 2)
        #expect(said.count == 1)
        #expect(node.files.promptTag == "[⎘ ░░░░░░░░ 0% plan.pdf] ")
        #expect(SyncProgress.bar(done: 0.45) == "▓▓▓░░░░░ 45%" && SyncProgress.bar(done: 1) == "▓▓▓▓▓▓▓▓ 100%")
    }

    @Test("a /get with no link to ask is said to wait at once, and once: not again after waitingNotice")
    func waitingWithoutLinks() throws {
        let dir = TemporaryDirectory(), into = TemporaryDirectory()
        let (node, offered, theOffer) = try offeredToNode(dir)
        #expect(node.files.waitingWithoutLinks(theOffer.root).isEmpty, "nothing asked for yet")
        _ = try node.files.get(theOffer, from: offered, number: 1, place: life.name.value, folder: into.path, now: 2, clock: 2)
        let said = node.files.waitingWithoutLinks(theOffer.root)
        guard case let .waiting(number, place, root, bad)? = said.first, said.count == 1, bad.isEmpty else {
            Issue.record("not said: \(said)")
            return
        }
        #expect(number == 1 && place == life.name.value && root == theOffer.root)
        #expect(node.files.waitingWithoutLinks(theOffer.root).isEmpty)
        #expect(node.files.waiting(now: 2 + Files.waitingNotice + 1).isEmpty, "said once until a chunk comes")
    }

    @Test("/get into a folder that is not there, or a path that is a file, says which, and saves nothing")
    func notAFolder() throws {
        let dir = TemporaryDirectory(), into = TemporaryDirectory()
        let (node, offered, theOffer) = try offeredToNode(dir)
        let file = into.path + "/plain.txt"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        for (folder, reason) in [(into.path + "/missing", "no such folder (a folder is not made for a /get: make it first, or leave the folder out for your download folder)"), (file, "not a folder")] {
            do {
                _ = try node.files.get(theOffer, from: offered, number: 1, place: life.name.value, folder: folder, now: 2, clock: 2)
                Issue.record("/get into \(folder) went on")
            } catch {
                #expect("\(error)" == "cannot save to \(folder): \(reason)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: into.path) == ["plain.txt"])
    }

    @Test("""
        over a failing store: /get fails with the database's words; an ask is answered none and the failure said (a \
        file answered just before is still served, from memory); a chunk that cannot be written is not held, and said
        """)
    func failingStore() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        var offers: [(FileOffer, Envelope)] = []
        for (name, byte) in [("notes.txt", UInt8(7)), ("served.txt", 8)] {
            let file = dir.path + "/" + name
            #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: byte, count: 150_000)))
            let offer = try node.files.prepare(path: file, caption: "", now: 1)
            let posted = try node.post(content: offer.encoded, kind: .file, in: life.name)
            try node.files.offered(offer, as: posted, clock: 1)
            offers.append((offer, posted))
        }
        let (offer, posted) = offers[0], served = offers[1].0
        #expect(node.files.answer(served.root, chunks: [0]).count == 1, "held whole: answered with the chunk")

        try units.drop("files", under: node)
        let fromMemory = node.files.answer(served.root, chunks: [1])
        #expect(fromMemory.count == 1 && fromMemory.allSatisfy { if case .chunk = $0 { true } else { false } }, "its row and tree are in memory: no database read")
        #expect(node.storeFailures.count == 0)
        #expect(node.files.answer(offer.root, chunks: [0, 1]) == [.none(root: offer.root, chunks: [0, 1])])
        #expect(node.storeFailures.count == 1 && (node.storeFailures.take() ?? "").hasPrefix("the database failed (reading a file's chunk map): "))
        let into = TemporaryDirectory()
        do {
            _ = try node.files.get(offer, from: posted, number: 1, place: life.name.value, folder: into.path, now: 2, clock: 2)
            Issue.record("a /get over a failing store went through")
        } catch let error as RepositoryError {
            #expect("\(error)".hasPrefix("the database failed (reading a file's chunk map): "))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: into.path).isEmpty, "nothing saved")
    }
}

@Suite("A relay's files: room made only for what someone holds")
struct RelayQuotaTests {
    let life = MessageLifeRulesTests()
    let peer = try! PublicKey(bytes: [UInt8](repeating: 0xAB, count: 32))  // test input

    /// A file of `size` bytes sealed in `dir`: its offer, its chunks' bytes, and its tree.
    func sealedFile(_ dir: TemporaryDirectory, _ name: String, size: Int) throws -> (offer: FileOffer, chunks: [[UInt8]], levels: [[[UInt8]]]) {
        let path = dir.path + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ name.count) })))
        let sealed = try Files.seal(path: path, name: nil, caption: "", folder: dir.path)
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: sealed.staging)))
        let step = FileOffer.chunkSize + FileKey.tagByteCount
        let chunks = stride(from: 0, to: bytes.count, by: step).map { Array(bytes[$0..<min(bytes.count, $0 + step)]) }
        return (sealed.offer, chunks, FileTree.levels(sealed.leaves))
    }

    /// The `n`th of some peers that ask a relay for files (not `peer`).
    func asker(_ n: Int) throws -> PublicKey { try PublicKey(bytes: [UInt8](repeating: UInt8(n + 1), count: 32)) }

    @Test("a relay's fetches one peer's asks start with no chunk come yet are at most Files.relayFetchesPerAsker: at the limit taken, one past refused while another peer's are taken; a chunk come, or the fetch dropped, frees the place")
    func relayFetchesPerAsker() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try relayNode(dir, quota: 10_000_000)
        let files = node.files
        let limit = Files.relayFetchesPerAsker
        #expect(limit == 2)
        let hostile = try asker(0), other = try asker(1)
        let made = { (n: Int) in [UInt8](repeating: UInt8(100 + n), count: 32) }
        let real = try sealedFile(work, "real.bin", size: 130_000)
        #expect(files.relay(real.offer.root, size: real.offer.size, asker: hostile, now: 1, clock: 0))
        for n in 1..<limit { #expect(files.relay(made(n), size: 100_000, asker: hostile, now: 1, clock: 0), "at the limit") }
        #expect(!files.relay(made(limit), size: 100_000, asker: hostile, now: 1, clock: 0), "one past the limit: no fetch")
        #expect(files.relay(made(limit), size: 100_000, asker: other, now: 1, clock: 0), "another peer's ask is taken")
        // The real file's first chunk comes: someone holds it, and the asker's place is free again.
        serve(real, to: files, only: [0])
        #expect(files.relay(made(limit + 1), size: 100_000, asker: hostile, now: 1, clock: 0), "a fetch proven by a chunk frees its place")
        #expect(!files.relay(made(limit + 2), size: 100_000, asker: hostile, now: 1, clock: 0))
        // Dropped after relayPatience: the places are free.
        files.dropStale(now: Files.relayPatience)
        #expect(files.relay(made(limit + 2), size: 100_000, asker: hostile, now: 2, clock: Files.relayPatience), "dropped fetches free their places")
        withExtendedLifetime(node) {}
    }

    /// A node whose files unit keeps files to serve as a relay does, up to `quota` bytes.
    func relayNode(_ dir: TemporaryDirectory, quota: UInt64) throws -> Node {
        let node = try life.node(dir)
        node.files.maximumHeld = quota
        return node
    }

    /// A relay-like node fetching `three.bin` (`size` bytes) to serve it, nothing held yet: its files unit and the file.
    func fetchingAsRelay(_ dir: TemporaryDirectory, _ work: TemporaryDirectory, size: Int) throws
        -> (files: Files, file: (offer: FileOffer, chunks: [[UInt8]], levels: [[[UInt8]]])) {
        let files = try relayNode(dir, quota: 1_000_000).files
        let file = try sealedFile(work, "three.bin", size: size)
        #expect(files.relay(file.offer.root, size: file.offer.size, asker: peer, now: 1))
        return (files, file)
    }

    /// Feeds the chunks `only` names (every one by default) of a file to `files` as if a peer served them.
    func serve(_ file: (offer: FileOffer, chunks: [[UInt8]], levels: [[[UInt8]]]), to files: Files, only: [Int]? = nil, now: Double = 1) {
        for i in only ?? Array(file.chunks.indices) {
            _ = files.fetch.assign(links: [1: peer], now: now)
            _ = files.received(file.offer.root, index: UInt64(i), proof: FileTree.proof(index: i, levels: file.levels), sealed: file.chunks[i],
                               from: peer, links: [1: peer], now: now)
        }
    }

    @Test("asks for roots nobody holds evict nothing and are dropped after relayPatience; a file that comes makes room by evicting the oldest kept one; a file over the quota is never fetched")
    func quota() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try relayNode(dir, quota: 300_000)
        let files = node.files
        let first = try sealedFile(work, "one.bin", size: 200_000), second = try sealedFile(work, "two.bin", size: 150_000)
        #expect(files.relay(first.offer.root, size: first.offer.size, asker: peer, now: 1))
        serve(first, to: files)
        #expect(files.holdsWhole(first.offer.root))
        // Asks for made-up roots: fetched for a while, nothing evicted.
        for n in 0..<3 { #expect(files.relay([UInt8](repeating: UInt8(n), count: 32), size: 250_000, asker: try asker(n), now: 2, clock: 0)) }
        #expect(files.holdsWhole(first.offer.root), "a root nobody holds flushed nothing")
        files.dropStale(now: Files.relayPatience - 1)
        #expect(files.fetch.roots.count == 3)
        files.dropStale(now: Files.relayPatience)
        #expect(try files.fetch.roots.isEmpty && node.store.files().map(\.root) == [first.offer.root], "stale fetches dropped, their rows with them")
        // A real file over what is left: its first chunk makes room.
        #expect(files.relay(second.offer.root, size: second.offer.size, asker: peer, now: 3, clock: 100))
        serve(second, to: files)
        #expect(files.holdsWhole(second.offer.root) && !files.holdsWhole(first.offer.root), "the oldest kept file left for the new one")
        #expect(!FileManager.default.fileExists(atPath: node.store.chunkPath(first.offer.root)))
        #expect(!files.relay([UInt8](repeating: 9, count: 32), size: 300_001, asker: peer, now: 4), "over the quota: never fetched")
    }

    @Test("a relay binds a file it keeps to the offer an ask names, once it holds that envelope (the first named wins); the tombstone erasing that envelope, stored where it cannot be read, erases the file; an ask naming an erased offer starts nothing")
    func erasedWithItsOffer() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try relayNode(dir, quota: 1_000_000)
        let files = node.files
        let bob = try SigningKey.generate()
        let file = try sealedFile(work, "four.bin", size: 130_000)
        let steps = try life.chain(bob, on: node, [(.file, file.offer.encoded, []), (.text, life.text("hi"), []), (.tombstone, [], [1])])
        let offer = Dependency(author: bob.publicKey, sequence: 1), other = Dependency(author: bob.publicKey, sequence: 2)
        // Asked before the offer is here: kept unbound (a later ask binds it).
        #expect(files.relay(file.offer.root, size: file.offer.size, offer: offer, asker: peer, now: 1))
        #expect(files.offer(of: file.offer.root) == nil)
        _ = try node.store.insert(Array(steps[0..<2]), receivedAt: 1)
        #expect(!files.relay(file.offer.root, size: file.offer.size, offer: offer, asker: peer, now: 2), "already fetched: no second fetch")
        #expect(files.offer(of: file.offer.root) == offer, "bound once the envelope is held")
        _ = files.relay(file.offer.root, size: file.offer.size, offer: other, asker: peer, now: 3)
        #expect(files.offer(of: file.offer.root) == offer, "the first binding stays")
        serve(file, to: files)
        #expect(files.holdsWhole(file.offer.root) && FileManager.default.fileExists(atPath: node.store.chunkPath(file.offer.root)))
        #expect(node.open(steps[0]) == nil, "this node cannot read the offer, as a relay cannot")

        // A tombstone of something else erases nothing.
        _ = files.erase(takenBackBy: [steps[1]])
        #expect(files.holdsWhole(file.offer.root))
        _ = try node.store.insert([steps[2]], receivedAt: 2)
        _ = files.erase(takenBackBy: [steps[2]])
        #expect(!files.holdsWhole(file.offer.root) && !FileManager.default.fileExists(atPath: node.store.chunkPath(file.offer.root)))
        #expect(try node.store.files().isEmpty)
        #expect(!files.relay(file.offer.root, size: file.offer.size, offer: offer, asker: peer, now: 4), "an ask naming the erased offer starts nothing")
        #expect(files.fetch.roots.isEmpty)
    }

    @Test("a relay's file is bound to every offer asks named (Store.maximumFileBindings besides its row's, one past refused): the author's delete erases it though another member named an offer of their own for it first")
    func erasedByAnyNamedOffer() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try relayNode(dir, quota: 1_000_000)
        let files = node.files
        let alice = try SigningKey.generate(), mallory = try SigningKey.generate()
        let file = try sealedFile(work, "hers.bin", size: 70_000)
        let hers = try life.chain(alice, on: node, [(.file, file.offer.encoded, []), (.tombstone, [], [1])])
        let his = try life.chain(mallory, on: node, [(.file, file.offer.encoded, [])])
        _ = try node.store.insert([hers[0], his[0]], receivedAt: 1)
        let aliceOffer = Dependency(author: alice.publicKey, sequence: 1), malloryOffer = Dependency(author: mallory.publicKey, sequence: 1)
        // Mallory names his own offer for her file first; her hand-over names hers.
        #expect(files.relay(file.offer.root, size: file.offer.size, offer: malloryOffer, asker: mallory.publicKey, now: 1))
        #expect(!files.relay(file.offer.root, size: file.offer.size, offer: aliceOffer, asker: alice.publicKey, now: 2))
        #expect(files.offer(of: file.offer.root) == malloryOffer, "the row names the first")
        serve(file, to: files)
        #expect(files.holdsWhole(file.offer.root))
        _ = try node.store.insert([hers[1]], receivedAt: 3)
        _ = files.erase(takenBackBy: [hers[1]])
        #expect(!files.holdsWhole(file.offer.root) && !FileManager.default.fileExists(atPath: node.store.chunkPath(file.offer.root)),
                "her delete erased it, though his offer was named first")
        #expect(try node.store.files().isEmpty && node.store.files(offeredBy: alice.publicKey, sequence: 1).isEmpty, "its bindings gone with it")

        // The bindings besides the row's are bounded: at the limit bound, one past not.
        let root = [UInt8](repeating: 7, count: 32)
        let limit = Store.maximumFileBindings
        #expect(limit == 16)
        for n in 0..<limit { #expect(try node.store.bindFile(root, author: try asker(n), sequence: 1)) }
        #expect(try !node.store.bindFile(root, author: try asker(limit), sequence: 1), "one past the limit is not bound")
        #expect(try node.store.files(offeredBy: try asker(limit - 1), sequence: 1) == [root])
        #expect(try node.store.files(offeredBy: try asker(limit), sequence: 1).isEmpty)
    }

    @Test("a file still being fetched is served in part: each chunk held with the proof it came with (it verifies against the root), 'not held' for the rest; once whole, every chunk from the tree")
    func servesWhatItHolds() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let (files, file) = try fetchingAsRelay(dir, work, size: 150_000)
        #expect(file.chunks.count == 3)
        let root = file.offer.root
        #expect(files.answer(root, chunks: [0, 1, 2]) == [.none(root: root, chunks: [0, 1, 2])], "nothing held yet")
        serve(file, to: files, only: [0, 2])
        let partial = files.answer(root, chunks: [0, 1, 2])
        #expect(partial.count == 3 && partial.last == .none(root: root, chunks: [1]), "\(partial.count)")
        for case let .chunk(r, index, proof, sealed) in partial {
            #expect(r == root && sealed == file.chunks[Int(index)])
            #expect(FileTree.verify(leaf: FileTree.leaf(index: index, sealed: sealed), index: index, chunks: 3, proof: proof, root: root))
        }
        serve(file, to: files, only: [1], now: 2)
        #expect(files.holdsWhole(root) && files.partial[root] == nil, "whole: the proofs kept while fetching are gone")
        let whole = files.answer(root, chunks: [0, 1, 2])
        #expect(whole.count == 3 && whole.allSatisfy { if case .chunk = $0 { true } else { false } })
    }

    @Test("a file being fetched is seen as it stands (Files.live, what /files and the prompt show), not as its map was last written")
    func liveRow() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let (files, file) = try fetchingAsRelay(dir, work, size: 100_000)
        serve(file, to: files, only: [0])
        let saved = try #require(try files.repository.file(file.offer.root))
        #expect(saved.heldCount == 0, "the map is written every \(Files.mapWriteEvery) chunks")
        #expect(files.live(saved).heldCount == 1 && files.held(files.live(saved)) == UInt64(FileOffer.chunkSize))
    }

    @Test("a chunk not asked of the peer that sends it is not looked at (no hashing, no write); once asked, it is")
    func unasked() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let (files, file) = try fetchingAsRelay(dir, work, size: 100_000)
        let proof = FileTree.proof(index: 0, levels: file.levels)
        guard case .ignored = files.arrived(file.offer.root, index: 0, proof: proof, sealed: file.chunks[0], from: peer, links: [1: peer], now: 1) else {
            Issue.record("an unasked chunk was taken up")
            return
        }
        _ = files.fetch.assign(links: [1: peer], now: 1)
        guard case .check = files.arrived(file.offer.root, index: 0, proof: proof, sealed: file.chunks[0], from: peer, links: [1: peer], now: 1) else {
            Issue.record("an asked chunk was not checked")
            return
        }
    }

    @Test("at start, our offers of the last week are read back for the relays linked from now on, at their age; one a week old, or not ours, is not")
    func handOverReadBack() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        var offers: [FileOffer] = []
        for (name, added) in [("recent.txt", UInt64(1_000_000)), ("old.txt", UInt64(2_000))] {
            let file = dir.path + "/" + name
            #expect(FileManager.default.createFile(atPath: file, contents: Data(name.utf8)))
            let offer = try node.files.prepare(path: file, caption: "", now: added)
            try node.files.offered(offer, as: try node.post(content: offer.encoded, kind: .file, in: life.name), clock: 0)
            offers.append(offer)
        }
        // A file fetched here, held whole: someone else's offer, not ours to hand over.
        var fetched = Store.FileRow(root: [UInt8](repeating: 9, count: 32), size: 10, origin: .fetched, author: node.me, sequence: 99, added: 1_000_000)
        fetched.mark(0)
        try node.files.repository.save(fetched)
        let week = UInt64(RelayHandOver.patience * 1000)
        // A node started again: nothing in memory, the store read back. Its clock reads 5,000 s.
        node.files.relayHandOver = RelayHandOver()
        node.files.handOverKept(try node.files.repository.files(), now: 2_000 + week - 1_000, clock: 5_000)
        #expect(node.files.relayHandOver.waiting.map(\.root) == [offers[1].root, offers[0].root], "both, oldest first")
        #expect(node.files.relayHandOver.waiting.first?.since == 5_000 - RelayHandOver.patience + 1, "at its age")
        node.files.relayHandOver = RelayHandOver()
        node.files.handOverKept(try node.files.repository.files(), now: 2_000 + week, clock: 5_000)
        #expect(node.files.relayHandOver.waiting.map(\.root) == [offers[0].root], "a week old: not handed over any more")
    }
}
