import Crypto
import Foundation
import Gossip
import NetworkText
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// The rules of reactions and replies (issue 17), on one node in this process.
@Suite("Reactions and replies: the rules")
struct ReactionRulesTests {
    let life = MessageLifeRulesTests()

    /// A node in the room with Bob's "lunch?" (not yet stored).
    func lunch() throws -> (TemporaryDirectory, Node, Envelope) {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        return (dir, node, try life.chain(life.bob, on: node, [(.text, life.text("lunch?"), [])])[0])
    }

    @Test("a reaction toggles; 8 different ones per person and message, the 9th refused and counted; one on a message elsewhere or not here is refused; one applied twice counts once")
    func reactions() throws {
        let (dir, node, original) = try lunch()
        defer { withExtendedLifetime(dir) {} }
        let ref = MessageRef(original)
        func reaction(_ r: String, to target: MessageRef = ref) throws -> [UInt8] { try Reaction(target: target, reaction: r).encoded }
        let steps = ["👍", "👍", "👍"] + (1...8).map { "r\($0)" }
        let carols = try life.chain(life.carol, on: node, steps.map { (.reaction, try reaction($0), []) })
        _ = try node.store.insert([original] + carols, receivedAt: 1)
        let applied = carols.map { e in node.open(e).flatMap { node.reactions.accept(e, $0) }?.on }
        #expect(applied[0...2] == [true, false, true], "given, taken back, given again")
        #expect(applied[3...9].allSatisfy { $0 == true } && applied[10] == nil, "7 more make 8; the 9th is refused")
        #expect(node.reactions.refused == 1)
        let standing = node.reactions.standing(on: original)
        #expect(standing.count == 8 && standing.allSatisfy { $0.by == [life.carol.publicKey] })
        // Applied again (a second delivery): nothing changes, nothing counted.
        #expect(node.open(carols[0]).flatMap { node.reactions.accept(carols[0], $0) } == nil && node.reactions.refused == 1)
        #expect(try node.store.reactionStands(on: ref, by: life.carol.publicKey, reaction: "👍"))
        // A reaction naming a message that is not here, or the right sequence with another id: refused.
        let wrong = MessageRef(author: life.bob.publicKey, sequence: 1, id: try MessageID(bytes: [UInt8](repeating: 1, count: 32)))
        let missing = MessageRef(author: life.bob.publicKey, sequence: 9, id: original.id)
        let bobs = try life.chain(life.bob, on: node, after: [original], [(.reaction, try reaction("x", to: wrong), []), (.reaction, try reaction("x", to: missing), [])])
        _ = try node.store.insert(bobs, receivedAt: 2)
        for e in bobs { #expect(node.open(e).flatMap { node.reactions.accept(e, $0) } == nil) }
        #expect(node.reactions.refused == 3)
    }

    @Test("a reply quotes the current text of what it answers, says when that is not here yet or deleted; a reaction or reply depends on its target, within the dependency bound")
    func replies() throws {
        let (dir, node, original) = try lunch()
        defer { withExtendedLifetime(dir) {} }
        let reply = try life.chain(life.carol, on: node, [(.reply, Reply(target: MessageRef(original), text: life.text("yes")).encoded, [])])[0]
        _ = try node.store.insert([reply], receivedAt: 1)
        let opened = try #require(node.open(reply))
        #expect(opened.isMessage && opened.text.unsanitized == "yes")
        guard case .missing? = node.reactions.quote(of: reply, opened)?.state else { Issue.record("not marked missing"); return }
        _ = try node.store.insert([original], receivedAt: 2)
        guard case let .here(text)? = node.reactions.quote(of: reply, opened)?.state else { Issue.record("not quoted"); return }
        #expect(text.unsanitized == "lunch?")
        #expect(Quote.excerpt(String(repeating: "a", count: 100)).count == Quote.maximumCharacters)
        #expect(Quote.excerpt("two\nlines") == "two lines")

        // Dependencies: the target's author at the target's sequence, within 256 entries.
        let many = try (0..<Envelope.maximumDependencies).map { _ in Dependency(author: try SigningKey.generate().publicKey, sequence: 3) }
        let deps = many.requiring(Dependency(author: original.author, sequence: original.sequence), by: node.me)
        #expect(deps.count == Envelope.maximumDependencies && deps.contains(Dependency(author: life.bob.publicKey, sequence: 1)))
        #expect([Dependency(author: life.bob.publicKey, sequence: 5)].requiring(Dependency(author: original.author, sequence: original.sequence), by: node.me) == [Dependency(author: life.bob.publicKey, sequence: 5)])
        let tombstone = try life.chain(life.bob, on: node, after: [original], [(.tombstone, [], [1])])
        _ = try node.store.insert(tombstone, receivedAt: 3)
        guard case .deleted? = node.reactions.quote(of: reply, opened)?.state else { Issue.record("not marked deleted"); return }
    }

    @Test("edits and reactions a room held before this node joined it apply when it joins")
    func joinedLater() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let bobs = try life.chain(life.bob, on: node, [(.text, life.text("v0"), [])])
        let ref = MessageRef(bobs[0])
        let edit = try life.chain(life.bob, on: node, after: bobs, [(.edit, MessageEdit(original: ref, text: life.text("v1")).encoded, [])])
        let reaction = try life.chain(life.carol, on: node, [(.reaction, try Reaction(target: ref, reaction: "👍").encoded, [])])
        _ = try node.store.insert(bobs + edit + reaction, receivedAt: 1)
        _ = try node.join(life.name)
        let opened = try #require(node.open(bobs[0]))
        #expect(node.messageLife.currentText(of: bobs[0], opened: opened) == (PeerText("v1"), true))
        #expect(node.reactions.standing(on: bobs[0]).map(\.by) == [[life.carol.publicKey]])
        #expect(node.messageLife.refusedEdits == 0 && node.reactions.refused == 0)
    }

    @Test("search finds a message by its earlier or its new words, once, as it reads now; /versions lists both")
    func searchEdited() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let bobs = try life.chain(life.bob, on: node, [(.text, life.text("zqxalpha first words"), [])])
        let edit = try life.chain(life.bob, on: node, after: bobs, [(.edit, MessageEdit(original: MessageRef(bobs[0]), text: life.text("zqxbeta second words")).encoded, [])])
        _ = try node.store.insert(bobs + edit, receivedAt: 1)
        _ = node.messageLife.acceptEdit(edit[0], try #require(node.open(edit[0])))
        for word in ["zqxalpha", "zqxbeta", "words"] {
            let found = try node.searchIndex.search(word, limit: 10)
            #expect(found.map(\.envelope.id) == [bobs[0].id], "\(word)")
        }
        #expect(node.messageLife.openedNow(bobs[0])?.opened.text.unsanitized == "zqxbeta second words")
        #expect(node.messageLife.versions(of: bobs[0]).map(\.text.unsanitized) == ["zqxalpha first words", "zqxbeta second words"])
    }
}
