import Crypto
import Foundation
import Gossip
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// Each unit of the node given a store that fails under it (issue 40): a
/// table dropped, so the unit's repository throws. What the person asked
/// for fails with the database's words and is counted; what cannot throw
/// (a line being shown, an envelope being applied) takes the safe side,
/// is counted and said once; nothing shows a wrong screen.
@Suite("Each unit with a failing store")
struct UnitStoreFailureTests {
    let life = MessageLifeRulesTests()
    let bob = try! SigningKey.generate()  // test input

    /// A node in this process, joined to the test room, holding one message of bob's.
    func nodeWithMessage(_ dir: TemporaryDirectory) throws -> (Node, Envelope) {
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let original = try life.chain(bob, on: node, [(.text, Array("first words".utf8), [])])[0]
        _ = try node.store.insert([original], receivedAt: 1)
        return (node, original)
    }

    func drop(_ table: String, under node: Node) throws {
        try node.store.db.execute("DROP TABLE \(table)")
        node.store.db.resetStatements()
    }

    @Test("message life: /edit and /delete of ours fail with the database's words (counted once heard); a delivered edit is not applied and is said; versions and the text now show the message as first written")
    func messageLife() throws {
        let dir = TemporaryDirectory()
        let (node, original) = try nodeWithMessage(dir)
        let room = RoomID.publicRoom(life.name, network: node.network)
        let ours = try node.post("our words", kind: .text, in: life.name)
        #expect(try node.messageLife.ownMessage(in: room, named: life.name.value, number: nil).id == ours.id)
        let edit = try life.chain(bob, on: node, after: [original], [(.edit, MessageEdit(original: MessageRef(original), text: Array("second".utf8)).encoded, [])])[0]

        try drop("edits", under: node)
        for attempt in [{ try node.messageLife.edit(ours, text: "changed") }, { try node.messageLife.delete(ours) }] {
            do {
                _ = try attempt()
                Issue.record("a command over a failing store went through")
            } catch let error as RepositoryError {
                #expect(error.doing == "reading a message's edits" && "\(error)".hasPrefix("the database failed (reading a message's edits): "))
                node.storeFailures.heard(error)
            }
        }
        #expect(node.storeFailures.count == 2 && node.storeFailures.take() == nil, "a command's failure is told by the command, counted here")

        _ = try node.store.insert([edit], receivedAt: 2)
        #expect(node.messageLife.acceptEdit(edit, try #require(node.open(edit))) == nil)
        #expect(node.messageLife.refusedEdits == 0, "a failing store is no refusal of the edit")
        #expect(node.storeFailures.count == 3 && (node.storeFailures.take() ?? "").contains("reading a message's edits"))
        let opened = try #require(node.open(original))
        #expect(node.messageLife.currentText(of: original, opened: opened).text.unsanitized == "first words")
        #expect(node.messageLife.versions(of: original).map(\.text.unsanitized) == ["first words"])
        #expect(node.storeFailures.count == 5)
    }

    @Test("reactions: a delivered reaction whose write fails is not applied and is said, not refused; the reactions standing read empty and said; /react still signs (it writes nothing of the table)")
    func reactions() throws {
        let dir = TemporaryDirectory()
        let (node, original) = try nodeWithMessage(dir)
        let reaction = try life.chain(bob, on: node, after: [original],
                                      [(.reaction, try Reaction(target: MessageRef(original), reaction: "👍").encoded, [])])[0]
        try drop("reactions", under: node)
        #expect(node.reactions.accept(reaction, try #require(node.open(reaction))) == nil)
        #expect(node.reactions.refused == 0)
        #expect(node.storeFailures.count == 1 && (node.storeFailures.take() ?? "").hasPrefix("the database failed (recording a reaction): "))
        #expect(node.reactions.standing(on: original).isEmpty)
        #expect(node.storeFailures.count == 2 && (node.storeFailures.take() ?? "").contains("reading a message's reactions"))
        #expect(try node.reactions.react(to: original, with: "🎉").author == node.me)
    }

    @Test("own durability: a boot that cannot be recorded keeps our posts fsynced before they go, and says so; a clean stop that cannot be recorded throws the database's words")
    func ownDurability() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        try drop("settings", under: node)
        node.ownDurability.startRunning()
        #expect(!node.ownDurability.sendsBeforeSync)
        #expect(node.storeFailures.count == 1 && (node.storeFailures.take() ?? "").hasPrefix("the database failed (reading the setting last_boot): "))
        node.ownDurability.syncFailed()
        #expect(node.storeFailures.count == 2 && (node.storeFailures.take() ?? "").contains("writing the setting own_history_unsure"))
        #expect(throws: RepositoryError.self) { try node.ownDurability.markKnown() }
    }
}
