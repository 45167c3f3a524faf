import Crypto
import Foundation
import Gossip
import NetworkText
import NodeCore
@testable import PeerNode
import TestSupport
import Testing

/// Removing a member from a private room (issue 18, docs/PROTOCOL.md §14):
/// checked on the bytes each node stored, with every key the removed
/// member's database holds.
@Suite("Removing a member from a private room", .serialized)
struct RoomRemovalTests {
    static let life = MessageLifeRulesTests()

    /// Hex column values from `sql` on the database in `dir`.
    static func hexRows(_ dir: String, _ sql: String) async throws -> [[UInt8]] {
        let out = try await runToEnd("/usr/bin/sqlite3", [dir + "/peernode.db", sql]).stdout
        return out.split(separator: "\n").compactMap { try? Hex.decode(String($0)) }
    }

    @Test("after /kick, nothing the others post opens with any key Carol's database ever held, nor does any new room key sealed in a membership event; what they posted before still opens; her own late post with an old key is refused everywhere")
    func kick() async throws {
        let (dirs, a, b, c) = try await chainOfThree()
        let carolID = c.id  // read before any wait: a wait's match runs under the events lock
        a.send("/private #plans")
        a.send("/invite \(b.id) #plans")
        a.send("/invite \(c.id) #plans")
        #expect(await b.wait { $0["type"] == "invite" && $0["room"] == "#plans" } != nil)
        #expect(await c.wait { $0["type"] == "invite" && $0["room"] == "#plans" } != nil)
        b.send("/accept #plans")
        c.send("/accept #plans")
        a.send("/join #plans")
        a.send("before from alice")
        #expect(await b.wait { $0["text"] == "before from alice" } != nil)
        b.send("/join #plans")
        b.send("before from bob")
        #expect(await c.wait { $0["text"] == "before from alice" && $0["room"] == "#plans" } != nil, "\(c.recent(10))")
        #expect(await c.wait { $0["text"] == "before from bob" && $0["room"] == "#plans" } != nil, "\(c.recent(10))")

        a.send("/members")
        #expect(await a.wait { $0["type"] == "room_member" && $0["id"] == carolID && $0["role"] == "member" } != nil, "\(a.recent(10))")
        a.send("/kick \(c.id)")
        for node in [a, b, c] {
            #expect(await node.wait { $0["type"] == "membership" && $0["action"] == "kick" && $0["target"] == carolID } != nil, "\(node.recent(10))")
        }
        a.send("after from alice")
        b.send("after from bob")
        #expect(await b.wait { $0["text"] == "after from alice" } != nil, "\(b.recent(10))")
        #expect(await a.wait { $0["text"] == "after from bob" } != nil, "\(a.recent(10))")
        // Carol's node holds both: what each author posted next, in #general, shows there.
        a.send("/join #general")
        a.send("marker from alice")
        b.send("/join #general")
        b.send("marker from bob")
        #expect(await c.wait { $0["text"] == "marker from alice" } != nil)
        #expect(await c.wait { $0["text"] == "marker from bob" } != nil)
        #expect(!c.events.value.contains { ($0["text"] ?? "").hasPrefix("after from") })
        // Her node says she is out rather than post.
        c.send("/join #plans")
        c.send("carol after the kick")
        #expect(await c.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("no longer a member") } != nil, "\(c.recent(5))")
        #expect(await c.quit() == 0)

        // Carol, hostile, signs a post with the newest key she kept (her next
        // sequence, her own chain) and goes back online: Alice and Bob refuse it.
        do {
            let carol = try Self.life.node(dirs[2])
            let room = try carol.privateRooms.privateRoom(named: try RoomName("#plans"))
            let kept = try #require((carol.privateRooms.roomEpochKeys[room] ?? [:]).values.max { $0.epoch < $1.epoch })
            #expect(kept.epoch == 2)
            _ = try carol.appendOwn(room: room, kind: .text, content: Array("carol writes into the past".utf8), key: kept.key)
        }
        let c2 = try NodeProcess(dir: dirs[2].path, ["--peer", b.url])
        #expect(await started(c2))
        #expect(await counterAtLeast(b, "room_post_refused", 1, timeout: 30))
        #expect(await counterAtLeast(a, "room_post_refused", 1, timeout: 30))
        await c2.quit(); await a.quit(); await b.quit()
        for node in [a, b] { #expect(!node.events.value.contains { ($0["text"] ?? "").contains("carol writes") }) }

        // The bytes: Alice's store of the room, opened as Alice and tried with every key of Carol's.
        let alice = try Self.life.node(dirs[0])
        let room = try alice.privateRooms.privateRoom(named: try RoomName("#plans"))
        let stored = try await Self.hexRows(dirs[0].path, """
            SELECT hex(e.bytes) FROM envelopes e JOIN rooms r ON e.room = r.rowid WHERE r.room_id = x'\(room.bytes.map { String(format: "%02x", $0) }.joined())';
            """).map { try Envelope.decode($0, verification: .trustedStorage) }
        var carolKeys = try await Self.hexRows(dirs[2].path, "SELECT hex(key) FROM private_rooms UNION ALL SELECT hex(key) FROM room_keys;")
            .map { try SymmetricKey(bytes: $0) }
        // A pending invite keeps its later keys behind the first.
        for row in try await Self.hexRows(dirs[2].path, "SELECT hex(key) FROM pending_invites;") {
            carolKeys += try ([Array(row.prefix(32))] + Invite.epochKeys(Array(row.dropFirst(32))).map(\.key)).map { try SymmetricKey(bytes: $0) }
        }
        let carolSecrets = try await Self.hexRows(dirs[2].path, "SELECT hex(secret) FROM conversation_keys WHERE secret IS NOT NULL;")
        let carol = try Self.life.node(dirs[2])
        let carolPairs = try carolSecrets.map { try BoxKeyPair(secretBytes: $0) } + Array(carol.conversations.ownKeys.values)
        #expect(carolKeys.count >= 3 && !carolPairs.isEmpty, "Carol held \(carolKeys.count) room keys and \(carolPairs.count) box keys")

        func opensForCarol(_ e: Envelope) -> Bool { carolKeys.contains { (try? BodyCipher.openAny(e, key: $0)) != nil } }
        var texts: [String: Envelope] = [:]
        var kickEpoch: UInt32?
        var events: [MembershipEvent] = []
        for e in stored {
            guard let opened = alice.open(e) else { continue }
            if opened.kind == .membership, let event = MembershipEvent.decode(opened.content) {
                events.append(event)
                if event.action == .kick { kickEpoch = event.epoch }
            } else if opened.isMessage {
                texts[String(decoding: opened.content, as: UTF8.self)] = e
            }
        }
        let kicked = try #require(kickEpoch)
        for text in ["before from alice", "before from bob"] {
            let e = try #require(texts[text], "\(texts.keys)")
            #expect(opensForCarol(e), "\(text) was Carol's to read")
        }
        for text in ["after from alice", "after from bob"] {
            let e = try #require(texts[text], "\(texts.keys)")
            #expect(!opensForCarol(e), "\(text) opens with a key of Carol's")
        }
        // No room key made at the kick or after is sealed to anything she holds.
        let later = events.filter { $0.epoch >= kicked && $0.action != .leave }
        #expect(!later.isEmpty)
        for event in later {
            #expect(!event.keys.contains { $0.account.hex == carolID })
            for sealed in event.keys {
                #expect(!carolPairs.contains { (try? $0.openSealed(sealed.sealed)) != nil })
            }
        }
        // And what came before was sealed to her (the check can succeed).
        #expect(events.contains { e in e.epoch < kicked && e.keys.contains { k in carolPairs.contains { (try? $0.openSealed(k.sealed)) != nil } } })
        withExtendedLifetime(dirs) {}
    }

    @Test("/op makes bob an admin who can /ban carol; a banned carol cannot be invited back; bob's /leave gets the room a new key from the owner, and bob is out")
    func rolesBanLeave() async throws {
        let (dirs, a, b, c) = try await chainOfThree()
        let bobID = b.id, carolID = c.id
        a.send("/private #ops")
        a.send("/invite \(bobID) #ops")
        a.send("/invite \(carolID) #ops")
        #expect(await b.wait { $0["type"] == "invite" && $0["room"] == "#ops" } != nil)
        #expect(await c.wait { $0["type"] == "invite" && $0["room"] == "#ops" } != nil)
        b.send("/accept #ops")
        c.send("/accept #ops")
        b.send("/join #ops")
        // A member cannot remove anyone.
        b.send("/kick \(carolID)")
        #expect(await b.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("only") } != nil, "\(b.recent(5))")
        a.send("/join #ops")
        a.send("/op \(bobID)")
        #expect(await b.wait { $0["type"] == "membership" && $0["action"] == "admin" && $0["target"] == bobID } != nil, "\(b.recent(5))")
        b.send("/ban \(carolID)")
        #expect(await a.wait { $0["type"] == "membership" && $0["action"] == "ban" && $0["target"] == carolID } != nil, "\(a.recent(5))")
        a.send("/invite \(carolID) #ops")
        #expect(await a.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("banned") } != nil, "\(a.recent(5))")
        a.send("/members")
        #expect(await a.wait { $0["type"] == "room_member" && $0["id"] == carolID && $0["role"] == "banned" } != nil)
        #expect(await a.wait { $0["type"] == "room_member" && $0["id"] == bobID && $0["role"] == "admin" } != nil)
        // Bob leaves: no new key from him; the owner's node makes one, sealed to who stays.
        b.send("/leave")
        #expect(await a.wait { $0["type"] == "membership" && $0["action"] == "leave" && $0["by"] == bobID } != nil, "\(a.recent(5))")
        #expect(await a.wait { $0["type"] == "membership" && $0["action"] == "rotate" } != nil, "\(a.recent(5))")
        a.send("after bob left")
        #expect(await a.wait { $0["text"] == "after bob left" && $0["room"] == "#ops" } != nil, "\(a.recent(5))")
        b.send("/join #ops")
        b.send("bob again")
        #expect(await b.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("no longer a member") } != nil, "\(b.recent(5))")
        // Bob holds what Alice posted after (her next line, in #general, shows there) and reads none of it.
        a.send("/join #general")
        a.send("marker after bob left")
        #expect(await b.wait { $0["text"] == "marker after bob left" } != nil, "\(b.recent(5))")
        #expect(!b.events.value.contains { $0["text"] == "after bob left" })
        await a.quit(); await b.quit(); await c.quit()
        withExtendedLifetime(dirs) {}
    }

    @Test("an invitee who declines leaves the room it was a member of from the invite on: the owner makes a key without it")
    func declineLeaves() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let bobID = b.id
        a.send("/private #maybe")
        a.send("/invite \(bobID) #maybe")
        #expect(await b.wait { $0["type"] == "invite" && $0["room"] == "#maybe" } != nil)
        b.send("/decline #maybe")
        #expect(await a.wait { $0["type"] == "membership" && $0["action"] == "leave" && $0["by"] == bobID } != nil, "\(a.recent(6))")
        #expect(await a.wait { $0["type"] == "membership" && $0["action"] == "rotate" } != nil, "\(a.recent(6))")
        a.send("/join #maybe")
        a.send("/members")
        #expect(await a.wait { $0["type"] == "room_member" && $0["room"] == "#maybe" } != nil)
        #expect(!a.events.value.contains { $0["type"] == "room_member" && $0["id"] == bobID })
        // Bob's node shows nothing of the room it declined.
        b.send("/rooms")
        #expect(!b.events.value.contains { $0["type"] == "membership" || ($0["room"] == "#maybe" && $0["type"] != "invite" && $0["type"] != "invite_declined") },
                "\(b.recent(6))")
        await a.quit(); await b.quit()
        withExtendedLifetime(dirs) {}
    }

    @Test("the owner's node replaces a room key a week old with a rotate sealed to every member, and not before")
    func scheduledRotation() throws {
        let dir = TemporaryDirectory()
        let node = try Self.life.node(dir)
        let bob = try SigningKey.generate().publicKey
        let name = try RoomName("#weekly")
        try node.privateRooms.createPrivateRoom(name)
        _ = try node.privateRooms.invite(bob, to: name)
        let room = try node.privateRooms.privateRoom(named: name)
        let state = try #require(node.privateRooms.memberships[room])
        let made = state.headTimestamp
        #expect(try node.privateRooms.rekeyIfNeeded(room, now: made + RoomMembership.rotationInterval - 1) == nil)
        let rotated = try #require(try node.privateRooms.rekeyIfNeeded(room, now: made + RoomMembership.rotationInterval))
        let event = try #require(node.open(rotated).flatMap { MembershipEvent.decode($0.content) })
        #expect(event.action == .rotate && event.epoch == state.head.map { $0.epoch + 1 })
        #expect(Set(event.keys.map(\.account)) == [node.account, bob])
        #expect(node.privateRooms.memberships[room]?.head?.event == rotated.id)
        #expect(try node.privateRooms.rekeyIfNeeded(room, now: made + RoomMembership.rotationInterval) == nil, "the new key is not due")
        withExtendedLifetime(dir) {}
    }

    @Test("a removal that names less than this node holds (made on another node): the removed member's posts past its limit, filed as messages when they came, no longer count as unread")
    func removalRefilesPosts() throws {
        let dir = TemporaryDirectory()
        let node = try Self.life.node(dir)
        let carol = try SigningKey.generate()
        let name = try RoomName("#race")
        try node.privateRooms.createPrivateRoom(name)
        _ = try node.privateRooms.invite(carol.publicKey, to: name)
        let room = try node.privateRooms.privateRoom(named: name)
        let head = try #require(node.privateRooms.memberships[room]?.head)
        let key = try #require(node.privateRooms.roomPostingKeys[room])
        // Carol's two posts, sealed with the epoch she was invited at: both stand, both unread.
        var posts: [Envelope] = []
        for n in 1...2 {
            let body = try SealedBody.seal(kind: .text, content: Array("carol \(n)".utf8), key: key, author: carol.publicKey, room: room)
            posts.append(try Envelope.sign(by: carol, sequence: UInt64(n), previous: posts.last?.id ?? .zero, dependencies: [],
                                           timestamp: Node.now(), room: room, erases: [], body: body))
        }
        _ = try node.store.insert(posts, receivedAt: 1)
        #expect(try node.store.unreadCount(of: room, me: node.me) == 2)
        // A kick made where only her first post was held: limit 1.
        let kick = MembershipEvent(action: .kick, target: carol.publicKey, role: .member, epoch: head.epoch + 1, parent: head.event,
                                   keys: [], limits: [.init(device: carol.publicKey, last: 1)])
        _ = try node.appendOwn(room: room, kind: .membership, content: kick.encoded, key: key)
        try node.privateRooms.recomputeMembership(room)
        #expect(node.open(posts[1]) == nil && node.open(posts[0]) != nil)
        #expect(try node.privateRooms.fileRefusedPosts(in: room, of: carol.publicKey) == 1)
        #expect(try node.store.unreadCount(of: room, me: node.me) == 1)
        withExtendedLifetime(dir) {}
    }

    @Test("an invite with epochs: 900 keys and a name round-trip and fit a body; a count of 901 is not an invite; the plain layout still reads")
    func inviteLimit() throws {
        let room = try RoomID(bytes: [UInt8](repeating: 1, count: 32))
        let name = try RoomName("#" + String(repeating: "x", count: RoomName.maximumLength - 1))
        let keys = (0..<Invite.maximumEpochs).map { i in
            (event: try! MessageID(bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 32)), epoch: UInt32(i + 1), key: [UInt8](repeating: 7, count: 32))  // test input
        }
        let full = Invite(room: room, key: [UInt8](repeating: 2, count: 32), name: name, epochs: Invite.encodeEpochs(keys))
        #expect(Invite.decode(full.encoded) == full)
        #expect(Invite.epochKeys(full.epochs).count == Invite.maximumEpochs)
        #expect(full.encoded.count <= Envelope.maximumPlaintextBody)
        var over = full.encoded
        over.replaceSubrange(68..<70, with: [UInt8((Invite.maximumEpochs + 1) >> 8), UInt8((Invite.maximumEpochs + 1) & 0xff)])
        over.insert(contentsOf: [UInt8](repeating: 9, count: 68), at: 70)
        #expect(Invite.decode(over) == nil)
        let plain = Invite(room: room, key: [UInt8](repeating: 2, count: 32), name: name)
        #expect(Invite.decode(plain.encoded) == plain)
        #expect(Invite.decode(Array(full.encoded.prefix(70 + 68))) == nil, "keys cut short, no name")
    }
}
