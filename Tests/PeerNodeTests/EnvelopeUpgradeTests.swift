import Crypto
import Foundation
import Gossip
import NetworkText
@testable import PeerNode
import Store
import TestSupport
import Testing

/// A store written by an earlier build holds version-1 envelopes (kind in
/// clear, conversations under the public derivation): this build reads them
/// all, and what it cannot read yet is filed under its kind once it can.
@Suite("Envelope versions in one store")
struct EnvelopeUpgradeTests {
    let bob = try! SigningKey.generate()  // test input

    /// A node in `dir`, without discovery.
    static func options(_ dir: TemporaryDirectory) -> Options {
        var options = Options()
        options.dataDirectory = dir.path
        options.discovery = false
        return options
    }

    /// Bob's version-1 envelopes to Alice, as an earlier build signed them.
    func olderEnvelopes(to alice: PublicKey, network: NetworkKey) throws -> [Envelope] {
        let general = RoomID.publicRoom(.general, network: network)
        let key = network.publicRoomKey(roomName: "#general")
        let dm = RoomID.directVersion1(bob.publicKey, alice, network: network)
        var previous = MessageID.zero
        var out: [Envelope] = []
        let plan: [(RoomID, Kind, [UInt8])] = [
            (general, .nick, try BodyCipher.seal(Array("bob".utf8), key: key, author: bob.publicKey, room: general, kind: .nick)),
            (general, .text, try BodyCipher.seal(Array("hello general".utf8), key: key, author: bob.publicKey, room: general, kind: .text)),
            (dm, .text, try DirectKey(own: bob, peer: alice).seal(Array("hello alice".utf8))),
        ]
        for (i, (room, kind, body)) in plan.enumerated() {
            let e = try Envelope.sign(by: bob, sequence: UInt64(i + 1), previous: previous, dependencies: [], timestamp: 1_000 + UInt64(i),
                                      room: room, kind: kind, body: body)
            previous = e.id
            out.append(e)
        }
        return out
    }

    @Test("version-1 nick, room message and DM are read after a restart: nick, history, search, and a reply goes to the version-2 conversation")
    func olderStore() throws {
        let dir = TemporaryDirectory()
        let options = Self.options(dir)
        let older: [Envelope]
        do {
            let node = try Node(options: options, environment: [:])
            _ = try node.join(.general)
            older = try olderEnvelopes(to: node.me, network: node.network)
            _ = try node.store.insert(older, receivedAt: 2_000)
        }
        let node = try Node(options: options, environment: [:])
        #expect(node.nicks[bob.publicKey] == PeerText("bob"), "nicks at start read the clear kind")
        let history = try node.store.history(of: RoomID.publicRoom(.general, network: node.network), limit: 10)
        #expect(history.compactMap { node.open($0.envelope) }.contains { $0.kind == .text && $0.text.unsanitized == "hello general" })
        let dm = try #require(node.direct(older[2]))
        #expect(dm.peer == bob.publicKey && dm.text.unsanitized == "hello alice")
        #expect(Set(try node.searchIndex.search("hello", limit: 10).map(\.envelope.id)) == [older[1].id, older[2].id])
        // A receipt for the old conversation and a reply both go to the version-2 room.
        let reply = try node.postDirect("hi bob", to: bob.publicKey)
        let conversation = RoomID.direct(try DirectKey(own: bob, peer: node.me), network: node.network)
        #expect(reply.version == Envelope.newestVersion && reply.room == conversation)
        #expect(node.direct(reply)?.text.unsanitized == "hi bob")
        #expect(try node.store.sealedCount() == 0, "everything here is readable, so every row has its kind")
    }

    @Test("a room's sealed rows are filed under their kinds when the room is joined, and then count as unread")
    func filedOnJoin() throws {
        let dir = TemporaryDirectory()
        let node = try Node(options: Self.options(dir), environment: [:])
        let name = try RoomName("#later")
        let room = RoomID.publicRoom(name, network: node.network)
        let key = node.network.publicRoomKey(roomName: name.value)
        let body = try SealedBody.seal(kind: .text, content: Array("before you came".utf8), key: key, author: bob.publicKey, room: room)
        let e = try Envelope.sign(by: bob, sequence: 1, previous: .zero, dependencies: [], timestamp: 1_000, room: room, body: body)
        _ = try node.store.insert([e], receivedAt: 2_000)
        #expect(try node.store.sealedCount() == 1, "not in the room: its kind cannot be read")
        _ = try node.join(name)
        #expect(try node.store.sealedCount() == 0)
        let summary = try #require(try node.store.roomSummaries(me: node.me).first { $0.name == name.value })
        #expect(summary.unread == 1)
        #expect(node.open(e)?.text.unsanitized == "before you came")
    }
}
