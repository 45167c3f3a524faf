import Crypto
import Foundation
import Gossip
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// The rules of edit and delete (issue 17), on one node in this process:
/// who may edit, what a replay after a delete brings back, what the
/// search index keeps of a room that was left.
@Suite("Edit and delete: the rules")
struct MessageLifeRulesTests {
    let bob = try! SigningKey.generate()  // test input
    let carol = try! SigningKey.generate()  // test input
    let name = try! RoomName("#later")  // test input

    func node(_ dir: TemporaryDirectory) throws -> Node {
        var options = Options()
        options.dataDirectory = dir.path
        options.discovery = false
        return try Node(options: options, environment: [:])
    }

    /// `author`'s chain in the room, on from `earlier`: each step's kind and
    /// content, and what it erases (the new envelopes only).
    func chain(_ author: SigningKey, on node: Node, after earlier: [Envelope] = [], _ steps: [(Kind, [UInt8], [UInt64])]) throws -> [Envelope] {
        let room = RoomID.publicRoom(name, network: node.network)
        let key = node.network.publicRoomKey(roomName: name.value)
        var out = earlier
        for (kind, content, erases) in steps {
            let body = try SealedBody.seal(kind: kind, content: content, key: key, author: author.publicKey, room: room)
            out.append(try Envelope.sign(by: author, sequence: UInt64(out.count + 1), previous: out.last?.id ?? .zero, dependencies: [],
                                         timestamp: 1_000 + UInt64(out.count), room: room, erases: erases, body: body))
        }
        return Array(out.dropFirst(earlier.count))
    }

    func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test("only the author edits, never a deleted message, at most 16 times; a replayed original stays erased; one that comes after its tombstone is stored erased")
    func rules() throws {
        let dir = TemporaryDirectory()
        let node = try node(dir)
        _ = try node.join(name)
        let original = try chain(bob, on: node, [(.text, text("hello"), [])])[0]
        let ref = MessageRef(original)
        let bobs = [original] + (try chain(bob, on: node, after: [original], (1...17).map { (.edit, MessageEdit(original: ref, text: text("v\($0)")).encoded, []) }))
        // Carol's edit of Bob's message: refused and counted.
        let forged = try chain(carol, on: node, [(.edit, MessageEdit(original: ref, text: text("carol's words")).encoded, [])])[0]
        _ = try node.store.insert(bobs + [forged], receivedAt: 1)
        for e in bobs.dropFirst() + [forged] { _ = node.open(e).map { node.messageLife.acceptEdit(e, $0) } }
        #expect(node.messageLife.refusedEdits == 2, "carol's edit, and bob's 17th")
        let opened = try #require(node.open(original))
        #expect(node.messageLife.currentText(of: original, opened: opened).text.unsanitized == "v16")

        // Bob deletes it (and its 16 edits: what one tombstone can name); an edit after that is refused.
        let key = node.network.publicRoomKey(roomName: name.value)
        let room = RoomID.publicRoom(name, network: node.network)
        let tombstone = try Envelope.sign(by: bob, sequence: 19, previous: bobs[17].id, dependencies: [], timestamp: 2_000, room: room,
                                          erases: [1] + (2...17).map { $0 },
                                          body: try SealedBody.seal(kind: .tombstone, content: [], key: key, author: bob.publicKey, room: room))
        _ = try node.store.insert([tombstone], receivedAt: 2)
        let held = try #require(try node.store.envelope(by: bob.publicKey, sequence: 1))
        #expect(held.isPruned && node.open(held) == nil)
        #expect(try node.store.envelope(by: bob.publicKey, sequence: 17)?.isPruned == true)
        #expect(try node.store.envelope(by: bob.publicKey, sequence: 18)?.isPruned == false, "the refused 17th edit was not named")
        let late = try Envelope.sign(by: bob, sequence: 20, previous: tombstone.id, dependencies: [], timestamp: 3_000, room: room,
                                     body: try SealedBody.seal(kind: .edit, content: MessageEdit(original: ref, text: text("back")).encoded,
                                                               key: key, author: bob.publicKey, room: room))
        _ = try node.store.insert([late], receivedAt: 3)
        #expect(node.messageLife.acceptEdit(late, try #require(node.open(late))) == nil && node.messageLife.refusedEdits == 3)
        // The original replayed: a duplicate, still erased.
        #expect(try node.store.insert([original], receivedAt: 4) == [.duplicate])
        #expect(try node.store.envelope(by: bob.publicKey, sequence: 1)?.isPruned == true)

        // Another node that gets the tombstone before the original stores the original erased.
        let otherDir = TemporaryDirectory()
        let other = try self.node(otherDir)
        _ = try other.store.insert([tombstone], receivedAt: 1)
        let outcomes = try other.store.insert(Array(bobs), receivedAt: 2)
        #expect(outcomes == Array(repeating: .insertedErased, count: 17) + [.inserted], "erased on arrival: the original and its 16 named edits")
        #expect(try other.store.envelope(by: bob.publicKey, sequence: 1)?.isPruned == true)
        #expect(try other.store.envelope(by: bob.publicKey, sequence: 1)?.erasedBy == 19)
    }

    @Test("leaving a room takes its texts out of the search index (so an erasure there still reaches the index), joining again puts them back")
    func leftRoom() throws {
        let dir = TemporaryDirectory()
        let node = try node(dir)
        _ = try node.join(name)
        let word = "zqxleftroomword4e2d"
        let e = try chain(bob, on: node, [(.text, text("said \(word)"), [])])
        _ = try node.store.insert(e, receivedAt: 1)
        #expect(try node.searchIndex.search(word, limit: 5).count == 1)
        try node.leave(name)
        #expect(try node.searchIndex.search(word, limit: 5).isEmpty)
        #expect(node.store.hasUnpurgedErasures)
        try node.store.purgeErased()
        #expect(MessageLifeTests.files(in: dir.path, containing: word).isEmpty)
        _ = try node.join(name)
        #expect(try node.searchIndex.search(word, limit: 5).count == 1)
    }

    @Test("an erasure owed a purge outlives the process: a node that dies after a delete and before its purge still holds the word in its search index, and the next open purges it from every file")
    func purgeOwedAcrossRestart() throws {
        let dir = TemporaryDirectory()
        let word = "zqxcrashword5c1e"
        do {
            let node = try node(dir)
            _ = try node.join(name)
            let bobs = try chain(bob, on: node, [(.text, text("said \(word)"), []), (.tombstone, [], [1])])
            _ = try node.store.insert([bobs[0]], receivedAt: 1)
            try node.searchIndex.indexNew()
            #expect(try node.searchIndex.search(word, limit: 5).count == 1)
            _ = try node.store.insert([bobs[1]], receivedAt: 2)
            #expect(node.store.hasUnpurgedErasures)
            // No purge and no clean exit: as a process killed here leaves its files.
        }
        #expect(!MessageLifeTests.files(in: dir.path, containing: word).isEmpty,
                "the unmerged index still holds the word before the next open (else this test shows nothing)")
        let again = try node(dir)
        #expect(!again.store.hasUnpurgedErasures, "purged at open")
        #expect(MessageLifeTests.files(in: dir.path, containing: word).isEmpty)
        #expect(try again.searchIndex.search(word, limit: 5).isEmpty)
    }
}
