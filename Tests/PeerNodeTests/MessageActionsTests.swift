import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// Replies, reactions and typing (issue 17) in `--json`, across three nodes
/// linked only through a relay.
@Suite("Replies, reactions and typing across nodes and a relay", .serialized)
struct MessageActionsTests {
    @Test("/reply quotes what it answers on every node; /react counts, a second time takes it back; /typing reaches the others through the relay; bad input refused")
    func acrossRelay() async throws {
        let trio = try await MessageLifeTests.throughRelay()
        let (relay, nodes) = (trio.relay, trio.nodes)
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])

        a.send("lunch at noon?")
        guard let atB = await b.wait({ $0["type"] == "message" && $0["text"] == "lunch at noon?" }),
              let atC = await c.wait({ $0["type"] == "message" && $0["text"] == "lunch at noon?" }),
              let nB = atB["n"], let nC = atC["n"] else {
            Issue.record("the message never reached bob and carol, numbered: \(await MessageLifeTests.state(nodes, relay))")
            return
        }
        b.send("/reply \(nB) sure, the usual place")
        for n in [a, c] {
            let reply = await n.wait { $0["type"] == "message" && $0["kind"] == "reply" }
            #expect(reply?["reply_to"] == atB["id"] && reply?["reply_to_state"] == "here" && reply?["reply_to_text"] == "lunch at noon?"
                    && reply?["text"] == "sure, the usual place", "\(String(describing: reply))")
        }
        // Bob changes his reply; carol asks for its versions by the number her node gave it.
        b.send("/edit sure, at one")
        if let replyAtC = await c.wait({ $0["type"] == "message" && $0["kind"] == "reply" }), let n = replyAtC["n"] {
            // Numbers count messages only: the receipts delivered between the two took none.
            #expect(Int(n) == Int(nC).map { $0 + 1 }, "lunch was \(nC), the reply \(n)")
            #expect(await c.wait { $0["type"] == "edit" && $0["original"] == replyAtC["id"] } != nil)
            c.send("/versions \(n)")
            let first = await c.wait { $0["type"] == "version" && $0["version"] == "0" }
            let second = await c.wait { $0["type"] == "version" && $0["version"] == "1" }
            #expect(first?["text"] == "sure, the usual place" && first?["id"] == replyAtC["id"] && second?["text"] == "sure, at one", "\(c.events.value.suffix(4))")
        } else {
            Issue.record("carol has no reply, or it has no number: \(c.events.value.suffix(4))")
        }
        c.send("/react \(nC) 👍")
        for n in [a, b] {
            let r = await n.wait { $0["type"] == "reaction" && $0["author"] == c.id }
            #expect(r?["target"] == atB["id"] && r?["reaction"] == "👍" && r?["state"] == "on" && r?["count"] == "1", "\(String(describing: r))")
        }
        b.send("/react \(nB) 👍")
        #expect(await a.wait { $0["type"] == "reaction" && $0["author"] == b.id && $0["count"] == "2" } != nil, "\(a.events.value.suffix(3))")
        c.send("/react \(nC) 👍")
        #expect(await a.wait { $0["type"] == "reaction" && $0["author"] == c.id && $0["state"] == "off" && $0["count"] == "1" } != nil,
                "\(a.events.value.suffix(3))")

        // Carol is linked to the relay only: her notice reaches alice and bob passed on once.
        c.send("/typing")
        for n in [a, b] {
            #expect(await n.wait { $0["type"] == "typing" && $0["id"] == c.id && $0["room"] == "#general" && $0["nick"] == "carol" } != nil,
                    "\(n.events.value.suffix(3))")
        }
        // A script is answered: the first went, one right after it sends nothing (at most one in 3 s).
        #expect(await c.wait { $0["type"] == "typing_sent" && $0["room"] == "#general" && $0["sent"] == "yes" } != nil, "\(c.events.value.suffix(3))")
        c.send("/typing")
        #expect(await c.wait { $0["type"] == "typing_sent" && $0["room"] == "#general" && $0["sent"] == "no" } != nil, "\(c.events.value.suffix(3))")
        c.send("/react \(nC) two words")
        #expect(await c.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("/react") } != nil)
        c.send("/react \(nC) " + String(repeating: "x", count: 33))
        #expect(await c.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("32 bytes") } != nil)
        c.send("/reply 99999 nothing there")
        #expect(await c.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("no message numbered 99999") } != nil)
        _ = await relay.terminate()
        for n in nodes { _ = await n.quit() }
        withExtendedLifetime(trio.dirs) {}
    }
}

@Suite("Replies, reactions, edits and typing at the terminal")
struct MessageLifeTerminalTests {
    @Test("at two pseudo-terminals: /history numbers, /reply quotes, /react and /reactions, /edit, typing in the prompt line, /delete")
    func session() async throws {
        let result = try await TerminalTests.run("message_life_session.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }
}

@Suite("A reply that comes before the message it answers")
struct LateQuoteTests {
    @Test("a reply whose author named no dependency on its message, pushed before that message, is shown 'not here yet', then quoted once the message arrives (reply_quote)")
    func lateQuote() async throws {
        let (dir, node, port) = try await target()
        let dave = try SigningKey.generate(), erin = try SigningKey.generate()
        let network = HostilePeer.lan
        let room = RoomID.publicRoom(.general, network: network)
        let key = network.publicRoomKey(roomName: RoomName.general.value)
        func first(by author: SigningKey, _ kind: Kind, _ content: [UInt8]) throws -> CarriedEnvelope {
            let body = try SealedBody.seal(kind: kind, content: content, key: key, author: author.publicKey, room: room)
            let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: UInt64(Date().timeIntervalSince1970 * 1000),
                                      room: room, erases: [], body: body)
            return CarriedEnvelope(hops: 0, envelope: e)
        }
        let question = try first(by: dave, .text, Array("the question".utf8))
        let answer = try first(by: erin, .reply, Reply(target: MessageRef(question.envelope), text: Array("the answer".utf8)).encoded)
        // Erin's link brings the answer; once it is shown, Dave's brings the question.
        let erinsLink = try HostilePeer(identity: erin, network: network, messages: [.clock(entries: [], full: true), .envelopes([answer])])
        let attack = Task { try await erinsLink.attack(port: port, timeout: 30) }
        let shown = await node.wait { $0["type"] == "message" && $0["kind"] == "reply" }
        #expect(shown?["reply_to_state"] == "missing" && shown?["reply_to"] == question.envelope.id.hex, "\(node.events.value.suffix(4))")
        let davesLink = try HostilePeer(identity: dave, network: network, messages: [.clock(entries: [], full: true), .envelopes([question])])
        let second = Task { try await davesLink.attack(port: port, timeout: 30) }
        defer { second.cancel() }
        let quoted = await node.wait { $0["type"] == "reply_quote" }
        #expect(quoted?["id"] == answer.envelope.id.hex && quoted?["reply_to_state"] == "here" && quoted?["reply_to_text"] == "the question",
                "\(node.events.value.suffix(4))")
        attack.cancel()
        _ = await node.quit()
        withExtendedLifetime(dir) {}
    }
}

/// An original that comes after its author's tombstone is stored without
/// its body; what the node passes on is that stored form, never the body as
/// it came (docs/DECISIONS.md, "Edit and delete for everyone").
@Suite("An erased original passed on erased")
struct ErasedOnArrivalTests {
    @Test("a tombstone, then the original it erases from another link: the node stores it erased, never shows it, and a third link hears it only erased")
    func passedOnErased() async throws {
        let (dir, node, port) = try await target()
        let dave = try SigningKey.generate(), watcher = try SigningKey.generate()
        let network = HostilePeer.lan
        let room = RoomID.publicRoom(.general, network: network)
        let key = network.publicRoomKey(roomName: RoomName.general.value)
        // A link that holds nothing and listens to what the node sends it.
        let listener = try HostilePeer(identity: watcher, network: network, messages: [.clock(entries: [], full: true)])
        let listening = Task { try await listener.attack(port: port, timeout: 60) }
        defer { listening.cancel() }
        #expect(await node.wait { $0["type"] == "peer_up" && $0["id"] == watcher.publicKey.hex } != nil)

        let secret = "zqxerasedonarrival words"
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let original = try Envelope.sign(by: dave, sequence: 1, previous: .zero, dependencies: [], timestamp: now, room: room,
                                         body: try SealedBody.seal(kind: .text, content: Array(secret.utf8), key: key, author: dave.publicKey, room: room))
        let tombstone = try Envelope.sign(by: dave, sequence: 2, previous: original.id, dependencies: [], timestamp: now + 1, room: room, erases: [1],
                                          body: try SealedBody.seal(kind: .tombstone, content: [], key: key, author: dave.publicKey, room: room))
        // Dave's link brings the tombstone first, then the original it erased.
        let davesLink = try HostilePeer(identity: dave, network: network, messages: [
            .clock(entries: [], full: true), .envelopes([CarriedEnvelope(hops: 0, envelope: tombstone)]),
            .envelopes([CarriedEnvelope(hops: 0, envelope: original)]),
        ])
        let attack = Task { try await davesLink.attack(port: port, timeout: 30) }
        defer { attack.cancel() }
        let heard = await eventuallyValue(30) { () -> [Envelope]? in
            let daves = listener.envelopesHeard.filter { $0.author == dave.publicKey }
            return daves.contains { $0.sequence == 1 } && daves.contains { $0.sequence == 2 } ? daves : nil
        }
        let passedOn = try #require(heard, "the listener heard \(listener.envelopesHeard.count) envelopes; node: \(node.recent(10))")
        #expect(passedOn.filter { $0.sequence == 1 }.allSatisfy { $0.isPruned && $0.id == original.id },
                "the original went on with its body")
        #expect(!node.events.value.contains { ($0["text"] ?? "").contains("zqxerasedonarrival") }, "the node showed the erased text")
        _ = await node.quit()
        withExtendedLifetime(dir) {}
    }
}

@Suite("A direct conversation at the terminal (/query)")
struct QueryTerminalTests {
    @Test("at a pseudo-terminal: /query names the other party in the prompt; lines go to them; /history numbers both sides; /reply, /react, Up-/edit and /delete act on the conversation; typing reaches them; /me is a direct action; room commands refused; /part closes it")
    func session() async throws {
        let result = try await TerminalTests.run("query_session.py")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all checked"), "\(result.stdout)")
    }
}
