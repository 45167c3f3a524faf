import Crypto
import Foundation
import Gossip
@testable import PeerNode
import TestSupport
import Testing

/// Golden bytes of a membership event, a new conversation key and an
/// invite with epochs (docs/PROTOCOL.md §14, §15), checked from the
/// document alone by scripts/check-golden.py. The sealed parts are random
/// each time they are made, so the file is written once
/// (`PEERNODE_WRITE_GOLDEN=1`) and this build must read it as written.
@Suite("Membership, new conversation key and invite: golden vectors")
struct MembershipGoldenTests {
    struct Golden: Codable, Equatable {
        let membership: String
        let rekey: String
        let invite: String
    }

    static func bytes(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }

    @Test("a kick (one sealed key, one limit), a rekey (one device) and a PNI2 invite (one epoch) read as PROTOCOL.md says; the sealed keys open")
    func golden() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden-membership.json")
        let alice = try SigningKey(seed: Self.bytes(0x11)), carol = try SigningKey(seed: Self.bytes(0x33)), device = try SigningKey(seed: Self.bytes(0x44))
        let box = try BoxKeyPair(secretBytes: Self.bytes(0x88)), next = try BoxKeyPair(secretBytes: Self.bytes(0x99))
        let roomKey = Self.bytes(0x77)
        let inviteMade = Invite(room: try RoomID(bytes: Self.bytes(0x44)), key: Self.bytes(0x55), name: try RoomName("#plans"),
                                epochs: Invite.encodeEpochs([(try MessageID(bytes: Self.bytes(0x66)), 3, roomKey)]))
        if ProcessInfo.processInfo.environment["PEERNODE_WRITE_GOLDEN"] == "1" {
            let kick = MembershipEvent(action: .kick, target: carol.publicKey, role: .member, epoch: 3, parent: try MessageID(bytes: Self.bytes(0x22)),
                                       keys: [.init(account: alice.publicKey, conversationEpoch: 1, sealed: try BoxKeyPair.seal(roomKey, to: box.publicKey))],
                                       limits: [.init(device: carol.publicKey, last: 7)])
            let toDevice = try BoxKeyPair.seal(next.exportedSecret, to: try #require(BoxKeyPair.convertedPublic(device.publicKey)))
            let rekey = ConversationKeyAnnouncement(epoch: 2, publicKey: next.publicKey, devices: [.init(device: device.publicKey, sealed: toDevice)])
            let made = Golden(membership: Hex.encode(kick.encoded), rekey: Hex.encode(rekey.encoded), invite: Hex.encode(inviteMade.encoded))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(made).write(to: url)
        }
        let file = try JSONDecoder().decode(Golden.self, from: Data(contentsOf: url))
        let kick = try #require(MembershipEvent.decode(try Hex.decode(file.membership)))
        #expect(kick.action == .kick && kick.target == carol.publicKey && kick.role == .member && kick.epoch == 3)
        #expect(kick.parent == (try MessageID(bytes: Self.bytes(0x22))) && kick.limits == [.init(device: carol.publicKey, last: 7)])
        #expect(kick.keys.count == 1 && kick.keys.first?.account == alice.publicKey && kick.keys.first?.conversationEpoch == 1)
        #expect(try box.openSealed(try #require(kick.keys.first).sealed) == roomKey)
        let rekey = try #require(ConversationKeyAnnouncement.decode(try Hex.decode(file.rekey)))
        #expect(rekey.epoch == 2 && rekey.publicKey == next.publicKey && rekey.devices.map(\.device) == [device.publicKey])
        #expect(try BoxKeyPair.converted(from: device).openSealed(try #require(rekey.devices.first).sealed) == next.exportedSecret)
        #expect(Invite.decode(try Hex.decode(file.invite)) == inviteMade)
        #expect(file.invite == Hex.encode(inviteMade.encoded), "an invite has no random part: the same bytes")
    }
}
