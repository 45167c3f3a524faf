import Crypto
import Foundation
import Gossip
import Store
import TestSupport
import Testing
@testable import PeerNode

/// Finding 7: who talks to whom, and what they send, is not visible to
/// another member of the network (envelope version 2, docs/PROTOCOL.md §4–5).
@Suite("Hostile members: what a member sees of others' conversations", .serialized)
struct DirectMetadataTests {
    static let network = HostilePeer.lan

    @Test("a member linked to Alice sees her DM, invite and receipt to Bob in a room it cannot name, with no kind and one size; Bob reads them")
    func observer() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let alice = try PublicKey(hex: a.id), bob = try PublicKey(hex: b.id)
        let port = try #require(a.url.split(separator: ":").last.flatMap { UInt16($0) })
        let eveKey = try SigningKey.generate()
        let eve = try HostilePeer(identity: eveKey, network: Self.network, messages: [.clock(entries: [], full: true)], nick: "eve")
        let listening = Task { try await eve.attack(port: port, timeout: 90) }
        #expect(await a.wait { $0["type"] == "peer_up" && $0["id"] == eveKey.publicKey.hex } != nil)

        // A public line, a DM, an invite; Bob's DM makes Alice owe him a receipt.
        a.send("hello everyone")
        a.send("/msg bob meet at noon")
        a.send("/private #plans")
        a.send("/invite bob #plans")
        #expect(await b.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["text"] == "meet at noon" } != nil, "Bob reads Alice's DM")
        #expect(await b.wait { $0["type"] == "invite" && $0["room"] == "#plans" } != nil, "Bob is offered the invite")
        b.send("/msg alice ok")
        #expect(await a.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["text"] == "ok" } != nil)

        // Eve waits for Alice's public line and the five that are not hers to read: the DM, the invite
        // and the receipt (in the conversation's room, or its next one if Alice learns a newer key of
        // Bob's meanwhile) and the two membership events of #plans (in its own room).
        let general = RoomID.publicRoom(.general, network: Self.network)
        let heard = await eventuallyValue(30) { () -> [Envelope]? in
            let mine = eve.envelopesHeard.filter { $0.author == alice }
            return mine.contains { $0.room == general } && mine.count { $0.room != general } >= 5 ? mine : nil
        }
        let fromAlice = try #require(heard, """
            Eve heard \(eve.envelopesHeard.map { "\($0.author == alice ? "alice" : $0.author == bob ? "bob" : "other") \($0.sequence) \($0.room == general ? "general" : Hex.encode($0.room.bytes.prefix(3)))" }); \
            closed: \(String(describing: eve.lock.withLock { eve.closed })); alice: \(a.recent(8))
            """)
        let conversation = fromAlice.filter { $0.room != general }

        // No kind in clear, on anything.
        #expect(fromAlice.allSatisfy { $0.version == Envelope.newestVersion && $0.clearKind == nil })
        // The room is not one a member can compute: not version 1's derivation
        // from the two public keys, nor Eve's own conversations.
        let nameable = [RoomID.directVersion1(alice, bob, network: Self.network), RoomID.directVersion1(alice, eveKey.publicKey, network: Self.network),
                        RoomID.direct(try DirectKey(own: eveKey, peer: alice), network: Self.network),
                        RoomID.direct(try DirectKey(own: eveKey, peer: bob), network: Self.network)]
        #expect(conversation.allSatisfy { !nameable.contains($0.room) })
        // One size for the DM, the invite with its keys and name, a receipt and
        // the public line. A membership event of #plans carries the room key
        // sealed to each member, so it pads to the bucket its member count
        // needs (docs/PROTOCOL.md §14): still a bucket, in a room Eve cannot name.
        let smallest = SealedBody.smallestBucket + SymmetricKey.overhead
        // #plans is the room of the membership event that seals its key to Bob (a larger bucket).
        let plans = conversation.first { $0.body.count > smallest }?.room
        let direct = conversation.filter { $0.room != plans }
        #expect(plans != nil && direct.count >= 3, "the DM, the invite and the receipt: \(conversation.map { ($0.sequence, $0.body.count) })")
        #expect(Set((direct + fromAlice.filter { $0.room == general }).map(\.body.count)) == [smallest], "\(fromAlice.map(\.body.count))")
        #expect(conversation.allSatisfy { SealedBody.buckets.contains($0.body.count - SymmetricKey.overhead) })
        // Eve reads the public line, as any member may, and nothing else.
        let publicKey = Self.network.publicRoomKey(roomName: RoomName.general.value)
        #expect(fromAlice.filter { $0.room == general }.allSatisfy { (try? SealedBody.open($0, key: publicKey)) != nil })
        #expect(conversation.allSatisfy { (try? SealedBody.open($0, key: publicKey)) == nil })

        await a.quit(); await b.quit()
        _ = try? await listening.value
        withExtendedLifetime(dirs) {}
    }

    @Test("a peer on an older link (version 2, envelope version 1 only) is sent no version-2 envelope; the node counts what it held back")
    func olderLink() async throws {
        let (dir, node, port) = try await target()
        let old = try HostilePeer(identity: try SigningKey.generate(), network: Self.network, messages: [.clock(entries: [], full: true)], version: .v2)
        let listening = Task { try await old.attack(port: port, timeout: 60) }
        #expect(await node.wait { $0["type"] == "peer_up" } != nil)
        node.send("a post the old peer cannot read")
        #expect(await counterReaches(node, "envelopes_too_new_for_link", "1"))
        #expect(old.envelopesHeard.allSatisfy { $0.version == 1 })
        #expect(old.lock.withLock { old.closed } == nil, "the link stays up")
        await node.quit()
        _ = try? await listening.value
        withExtendedLifetime(dir) {}
    }
}
