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
    }

    @Test("over a failing store: /get fails with the database's words; an ask is answered none and the failure said; a chunk that cannot be written is not held, and said")
    func failingStore() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let file = dir.path + "/notes.txt"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 7, count: 150_000)))
        let offer = try node.files.prepare(path: file, caption: "", now: 1)
        let posted = try node.post(content: offer.encoded, kind: .file, in: life.name)
        try node.files.offered(offer, as: posted)
        #expect(node.files.answer(offer.root, chunks: [0]).count == 1, "held whole: answered with the chunk")

        try units.drop("files", under: node)
        #expect(node.files.answer(offer.root, chunks: [0, 1]) == [.none(root: offer.root, chunks: [0, 1])])
        #expect(node.storeFailures.count == 1 && (node.storeFailures.take() ?? "").hasPrefix("the database failed (reading a file's chunk map): "))
        let into = TemporaryDirectory()
        do {
            _ = try node.files.get(offer, from: posted, number: 1, place: life.name.value, folder: into.path, now: 2)
            Issue.record("a /get over a failing store went through")
        } catch let error as RepositoryError {
            #expect("\(error)".hasPrefix("the database failed (reading a file's chunk map): "))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: into.path).isEmpty, "nothing saved")
    }
}
