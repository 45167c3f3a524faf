import Crypto
import Foundation
import Gossip
import NodeCore
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// The units split out of the node in issue 40's second part, each given a
/// store that fails under it (a table dropped): what the person asked for
/// fails with the database's words; what cannot throw takes the safe side,
/// is counted (`store_read_failed`) and said once, and is no refusal of
/// the sender's envelope.
@Suite("Devices, conversations, private rooms, receipts and search with a failing store")
struct UnitStoreFailureMoreTests {
    let life = MessageLifeRulesTests()
    let claims = DeviceClaimRulesTests()
    let units = UnitStoreFailureTests()

    /// Moves a table out of the store's sight (one others name cannot be dropped).
    func away(_ table: String, under node: Node) throws {
        try node.store.db.execute("ALTER TABLE \(table) RENAME TO \(table)_away")
        node.store.db.resetStatements()
    }

    func said(_ node: Node, _ count: Int, _ doing: String) -> Bool {
        node.storeFailures.count == count && (node.storeFailures.take() ?? "").hasPrefix("the database failed (\(doing)): ")
    }

    @Test("devices: a claim that cannot be recorded is not kept, not refused, and said; /device revoke fails with the database's words; a revocation that cannot be recorded is not kept and is said, and taken when it comes again")
    func devices() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let certificate = try DeviceCertificate.issue(by: claims.alice, for: claims.laptop.publicKey, name: "laptop", at: 5, epoch: 1, conversationKey: claims.box.publicKey)
        let claim = try claims.envelope(claims.laptop, sequence: 1, content: certificate.encoded, on: node)

        try units.drop("devices", under: node)
        #expect(!claims.claim(claim, on: node))
        #expect(node.devices.refusedClaims == 0, "a failing store is no refusal of the claim")
        #expect(node.people[claims.laptop.publicKey].key == claims.laptop.publicKey, "the device does not show as the account's")
        #expect(said(node, 1, "recording a device's claim"))
        #expect(throws: RepositoryError.self) { try node.devices.ownDevice("laptop") }
        #expect(node.devices.name(of: claims.laptop.publicKey) == nil)

        // A fresh node, where the claim holds; then the revocations table goes.
        let other = TemporaryDirectory()
        let second = try life.node(other)
        #expect(claims.claim(claim, on: second))
        try second.store.db.execute("ALTER TABLE revocations RENAME TO revocations_away")
        second.store.db.resetStatements()
        let revocation = try claims.envelope(claims.alice, sequence: 1, kind: .revoke, content: DeviceRevocation(device: claims.laptop.publicKey, last: 3).encoded, on: second)
        let opened = try #require(second.open(revocation))
        #expect(second.devices.acceptRevocation(revocation, opened) == nil)
        #expect(second.devices.refusedRevocations == 0 && second.devices.revokedAfter.isEmpty)
        #expect(said(second, 1, "recording a revocation"))
        // The table back: the same revocation, delivered again, is taken.
        try second.store.db.execute("ALTER TABLE revocations_away RENAME TO revocations")
        second.store.db.resetStatements()
        #expect(second.devices.acceptRevocation(revocation, opened) != nil)
        #expect(second.devices.revokedAfter == [claims.laptop.publicKey: 3])
    }

    @Test("conversations: an announced conversation key that cannot be saved is not taken and is said, not refused; reading the keys again fails with the database's words")
    func conversations() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        try units.drop("conversation_keys", under: node)
        let pair = BoxKeyPair.generate()
        let announcement = ConversationKeyAnnouncement(epoch: 2, publicKey: pair.publicKey, devices: [])
        let e = try claims.envelope(claims.alice, sequence: 1, kind: .rekey, content: announcement.encoded, on: node)
        #expect(!node.conversations.accept(e, try #require(node.open(e)), accountsRoom: node.accountsRoom))
        #expect(node.conversations.refusedRekeys == 0)
        #expect(said(node, 1, "saving a conversation key"))
        #expect(node.conversations.sendingEpoch(of: claims.alice.publicKey) == 0)
        #expect(throws: RepositoryError.self) { try node.conversations.reload() }
    }

    @Test("private rooms: /invites and /accept fail with the database's words; an invite that cannot be kept fails; a delivered membership change whose room state cannot be read leaves the room as it was")
    func privateRooms() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let name = try RoomName("#plans")
        try node.privateRooms.createPrivateRoom(name)
        let room = try node.privateRooms.privateRoom(named: name)
        let before = try #require(node.privateRooms.memberships[room])

        try units.drop("pending_invites", under: node)
        #expect(throws: RepositoryError.self) { try node.privateRooms.pendingInvites() }
        #expect(throws: RepositoryError.self) { try node.privateRooms.pendingInvite(named: "") }
        let invite = Invite(room: RoomID.random(), key: SymmetricKey.generate().exportedBytes, name: try RoomName("#elsewhere"))
        #expect(throws: RepositoryError.self) { try node.privateRooms.receiveInvite(invite, from: claims.alice.publicKey) }

        try away("envelopes", under: node)
        do {
            _ = try node.privateRooms.recomputeMembership(room)
            Issue.record("a membership read over a failing store went through")
        } catch let error as RepositoryError {
            #expect("\(error)".hasPrefix("the database failed ("))
        }
        #expect(node.privateRooms.memberships[room]?.head?.event == before.head?.event, "the room's state stays what it was")
    }

    @Test("receipts: a read receipt from our other device whose mark cannot be moved is said, and the room stays unread; our messages for a receipt that cannot be read give no events and are said")
    func receipts() throws {
        let dir = TemporaryDirectory()
        let (node, original) = try units.nodeWithMessage(dir)
        final class Poster: ReceiptPosting {
            func postReceipt(_ receipt: Receipt, in room: RoomID) throws -> Envelope { throw NodeError.receiptRoomNotWritable }
        }
        let poster = Poster()
        let receipts = Receipts(me: node.me, sendsRead: true, repository: .init(store: node.store), envelopes: node, poster: poster, failures: node.storeFailures)
        let room = RoomID.publicRoom(life.name, network: node.network)
        let ours = try node.post("our words", kind: .text, in: life.name)
        receipts.posted(ours.sequence, in: room)
        // A disk that takes no writes: the read mark cannot move.
        try node.store.db.execute("PRAGMA query_only = ON")
        let read = Receipt(state: .read, marks: [.init(author: original.author, sequence: original.sequence)])
        #expect(!receipts.readElsewhere(read, in: room))
        #expect(said(node, 1, "moving the read mark"))
        try node.store.db.execute("PRAGMA query_only = OFF")
        try away("envelopes", under: node)
        #expect(receipts.stored(through: ours.sequence, by: claims.alice.publicKey, shown: true).isEmpty)
        #expect(said(node, 2, "reading our messages for receipts"))
        // What is owed and cannot be posted is said, counted once heard.
        receipts.shown(author: original.author, sequence: original.sequence, in: room, isMessage: true, current: true)
        #expect(receipts.postDue(now: 1_000_000).isEmpty)
        #expect(node.storeFailures.count == 2 && node.storeFailures.take()?.hasPrefix("sending a receipt failed: ") == true, "not the store's: said, not counted")
    }

    @Test("search: /search and /mentions fail with the database's words when the index is gone; leaving a room fails the same and keeps the room")
    func search() throws {
        let dir = TemporaryDirectory()
        let (node, _) = try units.nodeWithMessage(dir)
        try units.drop("message_text", under: node)
        do {
            _ = try node.searchIndex.search("first", limit: 5)
            Issue.record("a search over a failing index went through")
        } catch {
            #expect("\(error)".hasPrefix("the database failed ("))
        }
        #expect(throws: RepositoryError.self) { try node.searchIndex.mentions(of: "bob", me: node.me, limit: 5) }
        #expect(throws: RepositoryError.self) { try node.leave(life.name) }
        #expect(node.roomName(RoomID.publicRoom(life.name, network: node.network)) == life.name, "a room that could not leave the index is still shown")
    }
}
