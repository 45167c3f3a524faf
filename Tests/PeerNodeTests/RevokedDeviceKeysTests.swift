import Crypto
import Foundation
import Gossip
@testable import PeerNode
import TestSupport
import Testing

/// A revoked device reads nothing new (issue 18): the account key's
/// machine makes a new conversation key without it, peers seal direct
/// messages to that key, and the rooms the account is in get a new key.
@Suite("A revoked device reads nothing new", .serialized)
struct RevokedDeviceKeysTests {
    @Test("after /revoke laptop: bob's new room key and his direct messages open on alice's desktop and with nothing the laptop holds; what came before still opens on it")
    func revoked() async throws {
        let three = try await DeviceAccountTests.AliceTwiceAndBob()
        let (desktopDir, laptopDir, bobDir, relay) = (three.desktopDir, three.laptopDir, three.bobDir, three.relay)
        let (desktop, laptop, bob) = (three.desktop, three.laptop, three.bob)
        let alice = desktop.id, laptopID = laptop.id
        #expect(await bob.wait { $0["type"] == "device" && $0["device"] == laptopID } != nil, "\(bob.recent(5))")

        // Bob's private room, alice in it on both machines; a post and a DM before.
        bob.send("/private #plans")
        bob.send("/invite \(alice) #plans")
        for n in [desktop, laptop] {
            #expect(await n.wait { $0["type"] == "invite" && $0["room"] == "#plans" } != nil, "\(n.recent(5))")
            n.send("/accept #plans")
        }
        bob.send("before the revocation")
        bob.send("/msg alice a direct message before")
        for n in [desktop, laptop] {
            #expect(await n.wait { $0["text"] == "before the revocation" && $0["room"] == "#plans" } != nil, "\(n.recent(5))")
            #expect(await n.wait { $0["kind"] == "dm" && $0["text"] == "a direct message before" } != nil, "\(n.recent(5))")
        }

        // The desktop revokes the laptop: a new conversation key, then bob gives #plans a new key.
        desktop.send("/revoke laptop")
        #expect(await bob.wait { $0["type"] == "membership" && $0["room"] == "#plans" && $0["action"] == "rotate" } != nil, "\(bob.recent(8))")
        #expect(await desktop.wait { $0["type"] == "membership" && $0["room"] == "#plans" && $0["action"] == "rotate" } != nil, "\(desktop.recent(8))")
        bob.send("after the revocation")
        bob.send("/msg alice a direct message after")
        #expect(await desktop.wait { $0["text"] == "after the revocation" && $0["room"] == "#plans" } != nil, "\(desktop.recent(5))")
        #expect(await desktop.wait { $0["kind"] == "dm" && $0["text"] == "a direct message after" } != nil, "\(desktop.recent(5))")
        // The laptop holds them (bob's next line in #general shows there) and reads neither.
        bob.send("/join #general")
        bob.send("marker from bob")
        #expect(await laptop.wait { $0["text"] == "marker from bob" } != nil, "\(laptop.recent(5))")
        #expect(!laptop.events.value.contains { ($0["text"] ?? "").contains("after") && $0["author"] == bob.id })
        for n in [desktop, laptop, bob] { _ = await n.quit() }
        _ = await relay.terminate()

        // On the bytes: bob's envelopes, opened by a node on the laptop's data (every key it holds).
        let bobNode = try MessageLifeRulesTests().node(bobDir)
        let laptopNode = try MessageLifeRulesTests().node(laptopDir)
        let desktopNode = try MessageLifeRulesTests().node(desktopDir)
        var seen: [String: (laptop: Bool, desktop: Bool)] = [:]
        for stored in try bobNode.store.delivered(after: 0) {
            let e = stored.envelope
            guard e.author == bobNode.me, let opened = bobNode.open(e), opened.isMessage else { continue }
            let text = String(decoding: opened.content, as: UTF8.self)
            seen[text] = (laptopNode.open(e) != nil, desktopNode.open(e) != nil)
        }
        for text in ["before the revocation", "a direct message before"] {
            #expect(seen[text]?.laptop == true && seen[text]?.desktop == true, "\(text): \(String(describing: seen[text]))")
        }
        for text in ["after the revocation", "a direct message after"] {
            #expect(seen[text]?.laptop == false && seen[text]?.desktop == true, "\(text): \(String(describing: seen[text]))")
        }
        // And no room key in the laptop's database opens the post after.
        let laptopKeys = try await RoomRemovalTests.hexRows(laptopDir.path, "SELECT hex(key) FROM private_rooms UNION ALL SELECT hex(key) FROM room_keys;")
            .map { try SymmetricKey(bytes: $0) }
        let after = try bobNode.store.delivered(after: 0).map(\.envelope).filter { e in
            bobNode.open(e).map { String(decoding: $0.content, as: UTF8.self) == "after the revocation" } ?? false
        }
        #expect(after.count == 1 && !laptopKeys.isEmpty)
        // The relay carried #plans (posts and membership events) and reads none of it.
        let relayNode = try MessageLifeRulesTests().node(three.relayDir)
        let plans = try bobNode.privateRooms.privateRoom(named: try RoomName("#plans"))
        let carried = try bobNode.store.delivered(after: 0).map(\.envelope).filter { $0.room == plans }
        #expect(carried.contains { bobNode.open($0)?.kind == .membership } && carried.count >= 5)
        for e in carried {
            #expect(try relayNode.store.delivered(id: e.id) != nil, "the relay holds it")
            #expect(relayNode.open(e) == nil, "the relay reads nothing of #plans")
        }
        #expect(!after.contains { e in laptopKeys.contains { (try? BodyCipher.openAny(e, key: $0)) != nil } })
        withExtendedLifetime(three) {}
    }
}
