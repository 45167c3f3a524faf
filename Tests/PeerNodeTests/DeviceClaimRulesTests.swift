import Crypto
import Foundation
import Gossip
import NetworkText
import NodeCore
@testable import PeerNode
import Store
import TestSupport
import Testing

/// Which device claims a node accepts (docs/PROTOCOL.md §15), on one node in this process.
@Suite("Device claims: the rules")
struct DeviceClaimRulesTests {
    let life = MessageLifeRulesTests()
    let alice = try! SigningKey.generate()  // test input
    let laptop = try! SigningKey.generate()  // test input
    let mallory = try! SigningKey.generate()  // test input
    let box = BoxKeyPair.generate()

    /// `author`'s next envelope of `kind` in `room` (the accounts room unless given).
    func envelope(_ author: SigningKey, sequence: UInt64, previous: MessageID = .zero, kind: Kind = .device, content: [UInt8],
                  on node: Node, room: RoomID? = nil, key: SymmetricKey? = nil) throws -> Envelope {
        let room = room ?? node.accountsRoom
        let body = try SealedBody.seal(kind: kind, content: content, key: key ?? node.accountsKey, author: author.publicKey, room: room)
        return try Envelope.sign(by: author, sequence: sequence, previous: previous, dependencies: [], timestamp: 1_000 + sequence,
                                 room: room, erases: [], body: body)
    }

    func claim(_ e: Envelope, on node: Node) -> Bool {
        guard let opened = node.open(e) else { return false }
        return node.acceptDeviceClaim(e, opened) != nil
    }

    @Test("a claim with its account's certificate makes the device show as the account, after a restart too; forged, misplaced, second and nested claims are refused and counted")
    func rules() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let certificate = try DeviceCertificate.issue(by: alice, for: laptop.publicKey, name: "laptop", at: 5, epoch: 1, conversationKey: box.publicKey)

        // Not in the accounts room: a public room's envelope with a good certificate.
        let elsewhere = try envelope(laptop, sequence: 1, content: certificate.encoded, on: node,
                                     room: RoomID.publicRoom(life.name, network: node.network), key: node.network.publicRoomKey(roomName: life.name.value))
        _ = try node.join(life.name)
        #expect(!claim(elsewhere, on: node))
        // Mallory posts alice's certificate for the laptop as her own claim: it names another device.
        #expect(!claim(try envelope(mallory, sequence: 1, content: certificate.encoded, on: node), on: node))
        // A forged certificate: the device key changed under alice's signature.
        var forged = certificate.encoded
        forged[40] ^= 1
        #expect(!claim(try envelope(laptop, sequence: 1, content: forged, on: node), on: node))
        #expect(node.people[laptop.publicKey].key == laptop.publicKey)

        let first = try envelope(laptop, sequence: 1, content: certificate.encoded, on: node)
        #expect(claim(first, on: node))
        #expect(node.people[laptop.publicKey].key == alice.publicKey)
        // A second claim, to mallory's account: the first stays.
        let toMallory = try DeviceCertificate.issue(by: mallory, for: laptop.publicKey, name: "mine", at: 6, epoch: 1, conversationKey: box.publicKey)
        #expect(!claim(try envelope(laptop, sequence: 2, previous: first.id, content: toMallory.encoded, on: node), on: node))
        #expect(node.people[laptop.publicKey].key == alice.publicKey)
        // Nested: a device of the laptop (not an account), and alice (an account with devices) becoming mallory's device.
        let phone = try SigningKey.generate()
        let fromDevice = try DeviceCertificate.issue(by: laptop, for: phone.publicKey, name: "phone", at: 7, epoch: 1, conversationKey: box.publicKey)
        #expect(!claim(try envelope(phone, sequence: 1, content: fromDevice.encoded, on: node), on: node))
        let aliceToMallory = try DeviceCertificate.issue(by: mallory, for: alice.publicKey, name: "alice", at: 8, epoch: 1, conversationKey: box.publicKey)
        #expect(!claim(try envelope(alice, sequence: 1, content: aliceToMallory.encoded, on: node), on: node))
        #expect(node.devices.refusedClaims == 6)

        // A nick from the laptop is alice's nick.
        let nick = try envelope(laptop, sequence: 2, previous: first.id, kind: .nick, content: Array("alice".utf8), on: node,
                                room: RoomID.publicRoom(life.name, network: node.network), key: node.network.publicRoomKey(roomName: life.name.value))
        if let opened = node.open(nick) { node.observe(nick, opened) }
        #expect(node.people[alice.publicKey].nick?.unsanitized == "alice" && node.people[laptop.publicKey].nick?.unsanitized == "alice")
        #expect(try node.devices.devices(of: laptop.publicKey).map(\.device) == [alice.publicKey, laptop.publicKey])
    }

    @Test("what a node learned of devices is there after a restart")
    func restart() throws {
        let dir = TemporaryDirectory()
        do {
            let node = try life.node(dir)
            let certificate = try DeviceCertificate.issue(by: alice, for: laptop.publicKey, name: "laptop", at: 5, epoch: 1, conversationKey: box.publicKey)
            #expect(claim(try envelope(laptop, sequence: 1, content: certificate.encoded, on: node), on: node))
        }
        let again = try life.node(dir)
        #expect(again.people[laptop.publicKey].key == alice.publicKey)
        #expect(try again.devices.devices(of: alice.publicKey).map(\.name) == ["first device", "laptop"])
    }

    @Test("revocations: the account key's always count; another device's count unless the account key revoked it first; two devices revoking each other are both revoked; foreign, account-key and replayed ones change nothing")
    func revocations() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let box = try SigningKey.generate()
        var heads: [PublicKey: (UInt64, MessageID)] = [:]
        func next(_ author: SigningKey, _ kind: Kind, _ content: [UInt8]) throws -> Envelope {
            let (sequence, previous) = heads[author.publicKey].map { ($0.0 + 1, $0.1) } ?? (1, .zero)
            let e = try envelope(author, sequence: sequence, previous: previous, kind: kind, content: content, on: node)
            heads[author.publicKey] = (sequence, e.id)
            return e
        }
        for (device, name) in [(laptop, "laptop"), (box, "box")] {
            #expect(claim(try next(device, .device, try DeviceCertificate.issue(by: alice, for: device.publicKey, name: name, at: 5, epoch: 1, conversationKey: self.box.publicKey).encoded), on: node))
        }
        func revoke(_ by: SigningKey, _ device: PublicKey, last: UInt64) throws -> Bool {
            let e = try next(by, .revoke, DeviceRevocation(device: device.self, last: last).encoded)
            guard let opened = node.open(e) else { return false }
            return node.devices.acceptRevocation(e, opened) != nil
        }
        // Mallory cannot revoke alice's laptop; the laptop cannot revoke the account key.
        #expect(try !revoke(mallory, laptop.publicKey, last: 0))
        #expect(try !revoke(laptop, alice.publicKey, last: 0))
        #expect(node.devices.refusedRevocations == 2 && node.devices.revokedAfter.isEmpty)

        // The box revokes the laptop after its 4th envelope; the laptop, not knowing, revokes the box: both stand.
        #expect(try revoke(box, laptop.publicKey, last: 4))
        #expect(try revoke(laptop, box.publicKey, last: 2))
        #expect(node.devices.revokedAfter == [laptop.publicKey: 4, box.publicKey: 2])
        let someID = try #require(heads[laptop.publicKey]?.1)
        let late = try envelope(laptop, sequence: 5, previous: someID, content: [], on: node)
        let earlier = try envelope(laptop, sequence: 4, previous: someID, content: [], on: node)
        #expect(node.devices.isRevoked(late) && !node.devices.isRevoked(earlier))
        // The account key revokes the laptop after its 2nd: the laptop's revocation of the box (its 3rd) no longer counts.
        #expect(try revoke(alice, laptop.publicKey, last: 2))
        #expect(node.devices.revokedAfter == [laptop.publicKey: 2])
        // The same rows in any order give the same limits.
        let rows = Array(node.devices.revocationRows)
        #expect(Devices.limits(Devices.counted(Set(rows.reversed()), account: { node.people.account($0) })) == node.devices.revokedAfter)
        // Kept in the store, read back at start the same.
        #expect(Set(try node.store.revocations()) == node.devices.revocationRows)
        try node.devices.loadRevocations()
        #expect(node.devices.revokedAfter == [laptop.publicKey: 2])
    }

    @Test("a revocation naming the last envelope: the chain ending there stands, a fork at the limit or below it does not (on a node that never held the original), a chain with a gap stands only down to the gap until it fills, and runs through genuine envelopes kept as forks where the thief's came first; a tombstone past the limit erases nothing; 40 and 72 bytes decode, 39, 41, 71, 73 and a named envelope at 0 do not")
    func revocationNamesLast() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        _ = try node.join(life.name)
        let room = RoomID.publicRoom(life.name, network: node.network), key = node.network.publicRoomKey(roomName: life.name.value)
        let certificate = try DeviceCertificate.issue(by: alice, for: laptop.publicKey, name: "laptop", at: 5, epoch: 1, conversationKey: box.publicKey)
        // The laptop's genuine chain: its claim, then four posts (this node will not hold all of it).
        var genuine = [try envelope(laptop, sequence: 1, content: certificate.encoded, on: node)]
        for n in 2...5 {
            genuine.append(try envelope(laptop, sequence: UInt64(n), previous: genuine[n - 2].id, kind: .text, content: Array("post \(n)".utf8),
                                        on: node, room: room, key: key))
        }
        // A fork of post 3 and one of post 5 (the limit), signed with the laptop's key after the theft.
        let fork3 = try envelope(laptop, sequence: 3, previous: genuine[1].id, kind: .text, content: Array("forged 3".utf8), on: node, room: room, key: key)
        let fork4 = try envelope(laptop, sequence: 4, previous: fork3.id, kind: .text, content: Array("forged 4".utf8), on: node, room: room, key: key)
        let fork5 = try envelope(laptop, sequence: 5, previous: fork4.id, kind: .text, content: Array("forged 5".utf8), on: node, room: room, key: key)
        // This node holds the claim, the genuine 2 and the forged 3–5 (it never saw the originals), and a post past the limit.
        let past = try envelope(laptop, sequence: 6, previous: fork5.id, kind: .text, content: Array("past the limit".utf8), on: node, room: room, key: key)
        _ = try node.store.insert([genuine[0], genuine[1], fork3, fork4, fork5, past], receivedAt: 1)
        #expect(claim(genuine[0], on: node))
        #expect(try node.store.unreadCount(of: room, me: node.me) == 5)
        let revocation = try envelope(alice, sequence: 1, kind: .revoke,
                                      content: DeviceRevocation(device: laptop.publicKey, last: 5, lastID: genuine[4].id).encoded, on: node)
        _ = try node.store.insert([revocation], receivedAt: 2)
        #expect(node.devices.acceptRevocation(revocation, try #require(node.open(revocation))) != nil)
        #expect(node.devices.revokedHeads[laptop.publicKey]?.id == genuine[4].id)
        #expect(try node.store.unreadCount(of: room, me: node.me) == 4, "the post past the limit, filed before, no longer counts as unread")
        for forged in [fork3, fork4, fork5] {
            #expect(node.devices.isRevoked(forged), "a fork at or below the limit, \(forged.sequence)")
            #expect(node.open(forged) == nil)
        }
        #expect(node.devices.isRevoked(genuine[1]), "below a chain that does not reach the named envelope: nothing is proven")

        // Another node holds the genuine chain but for post 3: down to the gap it stands, below it not until the gap fills.
        let otherDir = TemporaryDirectory()
        let other = try life.node(otherDir)
        _ = try other.join(life.name)
        _ = try other.store.insert([genuine[0], genuine[1], genuine[3], genuine[4]], receivedAt: 1)
        #expect(claim(genuine[0], on: other))
        _ = try other.store.insert([revocation], receivedAt: 2)
        #expect(other.devices.acceptRevocation(revocation, try #require(other.open(revocation))) != nil)
        #expect(!other.devices.isRevoked(genuine[4]) && !other.devices.isRevoked(genuine[3]))
        #expect(other.devices.isRevoked(genuine[1]), "below the gap at 3: not proven yet")
        #expect(other.devices.isRevoked(fork5), "a fork at the limit, whatever else is held")
        _ = try other.store.insert([genuine[2]], receivedAt: 3)
        #expect(!other.devices.isRevoked(genuine[2]) && !other.devices.isRevoked(genuine[1]) && !other.devices.isRevoked(genuine[0]), "the gap filled: all proven")
        #expect(try other.store.insert([fork3], receivedAt: 4) != [.inserted], "a fork of a held envelope is not stored as it")
        #expect(other.devices.isRevoked(fork3))
        // A third node held the thief's fork of 3 first, then got the genuine chain: the genuine 3 and 4 were
        // refused there (a fork, a broken link) and kept as forks; the named chain follows them, so only the fork is refused.
        let thirdDir = TemporaryDirectory()
        let third = try life.node(thirdDir)
        _ = try third.join(life.name)
        _ = try third.store.insert([genuine[0], genuine[1], fork3], receivedAt: 1)
        #expect(claim(genuine[0], on: third))
        _ = try third.store.insert([genuine[2], genuine[3], genuine[4]], receivedAt: 2)
        _ = try third.searchIndex.indexNew()
        #expect(try third.searchIndex.search("forged", limit: 5).map(\.envelope.id) == [fork3.id], "the fork was shown and indexed before any revocation")
        _ = try third.store.insert([revocation], receivedAt: 3)
        #expect(third.devices.acceptRevocation(revocation, try #require(third.open(revocation))) != nil)
        #expect(third.devices.isRevoked(fork3), "the fork held first")
        #expect(!third.devices.isRevoked(genuine[4]) && !third.devices.isRevoked(genuine[1]) && !third.devices.isRevoked(genuine[0]),
                "the genuine envelopes held, above and below it, stand: the chain runs through the kept forks")
        // The genuine 4, kept as a fork where nothing was held, is stored now, and the chain fills (what depends on it can be delivered).
        #expect(try third.store.envelope(by: laptop.publicKey, sequence: 4)?.id == genuine[3].id)
        #expect(third.store.contiguous(of: laptop.publicKey) == 5)
        #expect(!third.devices.isRevoked(genuine[3]))
        #expect(try third.store.envelope(by: laptop.publicKey, sequence: 3)?.id == genuine[2].id, "the genuine 3 takes the fork's place")
        #expect(!third.devices.isRevoked(genuine[2]) && third.open(genuine[2]) != nil)
        #expect(try third.store.forks().map(\.sequence) == [3], "the thief's fork is the one kept as a fork now")
        #expect(third.devices.isRevoked(fork3))
        #expect(try third.searchIndex.search("forged", limit: 5).isEmpty && third.searchIndex.search("post", limit: 9).contains { $0.envelope.id == genuine[2].id },
                "the index holds the genuine text in the fork's place")

        // The thief's tombstone past the limit takes back nothing of the owner's words.
        let tombstone = try Envelope.sign(by: laptop, sequence: 6, previous: genuine[4].id, dependencies: [], timestamp: 9_000, room: room,
                                          erases: [2, 3], body: try SealedBody.seal(kind: .tombstone, content: [], key: key, author: laptop.publicKey, room: room))
        _ = try other.store.insert([tombstone], receivedAt: 5)
        #expect(try other.store.envelope(by: laptop.publicKey, sequence: 2)?.isPruned == false)
        #expect(try other.store.erasedBy(laptop.publicKey, 2) == nil && !other.store.hasUnpurgedErasures)

        // The bytes: 40 (no named envelope) and 72; nothing else; a named envelope at 0 names nothing.
        let short = DeviceRevocation(device: laptop.publicKey, last: 5), long = DeviceRevocation(device: laptop.publicKey, last: 5, lastID: genuine[4].id)
        #expect(short.encoded.count == DeviceRevocation.size && DeviceRevocation.decode(short.encoded) == short)
        #expect(long.encoded.count == DeviceRevocation.sizeNamingLast && DeviceRevocation.decode(long.encoded) == long)
        for bad in [Array(short.encoded.dropLast()), short.encoded + [0], Array(long.encoded.dropLast()), long.encoded + [0],
                    DeviceRevocation(device: laptop.publicKey, last: 0, lastID: genuine[4].id).encoded] {
            #expect(DeviceRevocation.decode(bad) == nil, "\(bad.count) bytes")
        }
        // `last` at the limit every sequence from the network has, and one past it (which would overflow the chain's walk).
        let top = Envelope.maximumSequence
        #expect(DeviceRevocation.decode(DeviceRevocation(device: laptop.publicKey, last: top, lastID: genuine[4].id).encoded) != nil)
        #expect(DeviceRevocation.decode(DeviceRevocation(device: laptop.publicKey, last: top + 1, lastID: genuine[4].id).encoded) == nil)
        #expect(DeviceRevocation.decode(DeviceRevocation(device: laptop.publicKey, last: .max).encoded) == nil)
    }

    @Test("a new conversation key: only the account key announces it, in the accounts room, past its newest epoch; a device of the account takes the secret sealed to it; 64 devices decode, 65 do not")
    func conversationRekeys() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        // This node becomes a device of alice; the laptop is another.
        let mine = try DeviceCertificate.issue(by: alice, for: node.me, name: "this", at: 5, epoch: 1, conversationKey: box.publicKey)
        let own = try envelope(node.identity, sequence: 1, content: mine.encoded, on: node)
        #expect(claim(own, on: node))
        let laptopClaim = try envelope(laptop, sequence: 1, content: try DeviceCertificate.issue(by: alice, for: laptop.publicKey, name: "laptop", at: 6, epoch: 1,
                                                                                               conversationKey: box.publicKey).encoded, on: node)
        #expect(claim(laptopClaim, on: node))
        let pair = BoxKeyPair.generate()
        let toMe = try BoxKeyPair.seal(pair.exportedSecret, to: try #require(BoxKeyPair.convertedPublic(node.me)))
        let announcement = ConversationKeyAnnouncement(epoch: 2, publicKey: pair.publicKey, devices: [.init(device: node.me, sealed: toMe)])
        func accepted(_ e: Envelope) -> Bool { node.open(e).map { node.conversations.accept(e, $0, accountsRoom: node.accountsRoom) } ?? false }
        // From the laptop (a device, not the account key): refused.
        #expect(!accepted(try envelope(laptop, sequence: 2, previous: laptopClaim.id, kind: .rekey, content: announcement.encoded, on: node)))
        // From alice, in a public room: refused.
        let general = RoomID.publicRoom(.general, network: node.network)
        _ = try node.join(.general)
        let misplaced = try envelope(alice, sequence: 1, kind: .rekey, content: announcement.encoded, on: node,
                                     room: general, key: node.network.publicRoomKey(roomName: RoomName.general.value))
        #expect(!accepted(misplaced))
        #expect(node.conversations.refusedRekeys == 2)
        // From alice, in the accounts room: taken, and this device holds the secret.
        let first = try envelope(alice, sequence: 2, previous: misplaced.id, kind: .rekey, content: announcement.encoded, on: node)
        #expect(accepted(first))
        #expect(node.conversations.ownKeys[2]?.publicKey == pair.publicKey)
        #expect(node.conversations.sendingEpoch(of: alice.publicKey) == 2)
        // The same epoch again (another key): refused; the first stays.
        let other = ConversationKeyAnnouncement(epoch: 2, publicKey: BoxKeyPair.generate().publicKey, devices: [])
        #expect(!accepted(try envelope(alice, sequence: 3, previous: first.id, kind: .rekey, content: other.encoded, on: node)))
        #expect(node.conversations.boxPublic(of: alice.publicKey, epoch: 2) == pair.publicKey)

        // The layout's limits.
        let entry = ConversationKeyAnnouncement.Sealed(device: laptop.publicKey, sealed: [UInt8](repeating: 1, count: ConversationKeyAnnouncement.sealedSize))
        let most = ConversationKeyAnnouncement(epoch: 3, publicKey: pair.publicKey, devices: Array(repeating: entry, count: ConversationKeyAnnouncement.maximumDevices))
        #expect(ConversationKeyAnnouncement.decode(most.encoded) == most)
        var over = most.encoded
        over[40] = UInt8(ConversationKeyAnnouncement.maximumDevices + 1)
        over += laptop.publicKey.bytes + entry.sealed
        #expect(ConversationKeyAnnouncement.decode(over) == nil)
        #expect(ConversationKeyAnnouncement.decode(Array(most.encoded.dropLast())) == nil)
        #expect(ConversationKeyAnnouncement.decode(ConversationKeyAnnouncement(epoch: 0, publicKey: pair.publicKey, devices: []).encoded) == nil, "epoch 0 is the identity key's")
    }

    @Test("a device of the rekeyer's account does not rotate at once, only when it stands in for its account's machine, and its rotate holds as the account's")
    func standIn() throws {
        let dir = TemporaryDirectory()
        let node = try life.node(dir)
        let mine = try DeviceCertificate.issue(by: alice, for: node.me, name: "this", at: 5, epoch: 1, conversationKey: box.publicKey)
        #expect(claim(try envelope(node.identity, sequence: 1, content: mine.encoded, on: node), on: node))
        try node.store.saveConversationKey(Store.ConversationKeyRow(account: alice.publicKey, epoch: 1, publicKey: box.publicKey, secret: box.exportedSecret, claim: nil))
        try node.conversations.reload()
        // Alice's room, Bob invited, Bob gone: the key Bob held is tainted, Alice is to rekey.
        let room = RoomID.random(), first = SymmetricKey.generate(), second = SymmetricKey.generate()
        let name = try RoomName("#held")
        try node.privateRooms.add(room, name: name, key: first)
        let create = try envelope(alice, sequence: 1, kind: .membership, content: MembershipEvent(action: .create, target: alice.publicKey, role: .owner, epoch: 0, parent: .zero, keys: []).encoded,
                                  on: node, room: room, key: first)
        let sealed = [MembershipEvent.SealedKey(account: alice.publicKey, conversationEpoch: 1, sealed: try BoxKeyPair.seal(second.exportedBytes, to: box.publicKey)),
                      MembershipEvent.SealedKey(account: mallory.publicKey, conversationEpoch: 0,
                                                sealed: try BoxKeyPair.seal(second.exportedBytes, to: try #require(BoxKeyPair.convertedPublic(mallory.publicKey))))]
        let invite = try envelope(alice, sequence: 2, previous: create.id, kind: .membership, content: MembershipEvent(action: .invite, target: mallory.publicKey, role: .member, epoch: 1, parent: create.id, keys: sealed).encoded,
                                  on: node, room: room, key: first)
        let leave = try envelope(mallory, sequence: 1, kind: .membership, content: MembershipEvent(action: .leave, target: mallory.publicKey, role: .member, epoch: 1, parent: invite.id, keys: []).encoded,
                                  on: node, room: room, key: second)
        _ = try node.store.insert([create, invite, leave], receivedAt: 1)
        let state = try #require(try node.privateRooms.recomputeMembership(room))
        #expect(state.keyIsTainted && state.rekeyer == alice.publicKey && node.privateRooms.needsRekeyByUs(room), "\(state.roles) \(state.sealedTo) \(String(describing: state.head)) refused \(state.refused) keys \(node.privateRooms.roomEpochKeys[room]?.count ?? 0)")
        #expect(try node.privateRooms.rekeyIfNeeded(room) == nil, "not the account key's machine: it waits")
        let rotated = try #require(try node.privateRooms.rekeyIfNeeded(room, standIn: true))
        #expect(node.privateRooms.memberships[room]?.head?.event == rotated.id && node.privateRooms.memberships[room]?.keyIsTainted == false)
        #expect(!node.privateRooms.needsRekeyByUs(room))
    }
}
