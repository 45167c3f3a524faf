import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// What one device of an account changes, the others follow (issue 18,
/// docs/PROTOCOL.md §15, "Following across devices").
@Suite("Following across devices", .serialized)
struct FollowingDevicesTests {
    @Test("rooms joined and left, a private room made or accepted, trust marks and blocks set on the desktop are done on the laptop; bob reads none of it")
    func follows() async throws {
        let three = try await DeviceAccountTests.AliceTwiceAndBob()
        let (desktop, laptop, bob) = (three.desktop, three.laptop, three.bob)
        let alice = desktop.id, bobID = bob.id
        let stranger = try SigningKey.generate().publicKey.hex

        func followed(_ change: String, _ about: String) async -> Bool {
            await laptop.wait { $0["type"] == "followed" && $0["change"] == change && $0["about"] == about } != nil
        }
        desktop.send("/join #later")
        #expect(await followed("joined", "#later"), "\(laptop.recent(6))")
        desktop.send("/trust \(bobID)")
        #expect(await followed("trusted", bobID), "\(laptop.recent(6))")
        desktop.send("/block \(stranger)")
        #expect(await followed("blocked", stranger), "\(laptop.recent(6))")
        desktop.send("/private #mine")
        #expect(await followed("made_private", "#mine"), "\(laptop.recent(6))")
        laptop.send("/join #mine")
        laptop.send("from the laptop in #mine")
        #expect(await desktop.wait { $0["text"] == "from the laptop in #mine" && $0["room"] == "#mine" } != nil, "\(desktop.recent(6))")

        bob.send("/private #team")
        bob.send("/invite \(alice) #team")
        #expect(await laptop.wait { $0["type"] == "invite" && $0["room"] == "#team" } != nil, "\(laptop.recent(6))")
        // The desktop answers what it holds: the relay may bring it the invite after the laptop (a loaded machine).
        #expect(await desktop.wait { $0["type"] == "invite" && $0["room"] == "#team" } != nil, "\(desktop.recent(6))")
        // Bob says something in #team while the invite waits; his next line in #general, once the laptop shows it,
        // says the laptop holds the first (an author's messages come in order), sealed to a room it cannot read yet.
        bob.send("said while the invite waited")
        bob.send("/join #general")
        bob.send("marker after it")
        #expect(await laptop.wait { $0["text"] == "marker after it" } != nil, "\(laptop.recent(6))")
        #expect(!laptop.events.value.contains { $0["text"] == "said while the invite waited" })
        desktop.send("/accept #team")
        #expect(await laptop.wait { $0["type"] == "followed" && $0["change"] == "accepted" } != nil, "\(laptop.recent(6))")
        // Following the desktop's accept shows it, as the laptop's own /accept would have.
        #expect(await laptop.wait { $0["text"] == "said while the invite waited" && $0["room"] == "#team" } != nil, "\(laptop.recent(6))")
        // An /accept typed there too is told the room is joined already, not that no invite waits.
        laptop.send("/accept #team")
        #expect(await laptop.wait { $0["type"] == "error" && ($0["error"] ?? "").hasPrefix("you are in #team already") } != nil, "\(laptop.recent(4))")
        laptop.send("/join #team")
        laptop.send("the laptop is in #team")
        #expect(await bob.wait { $0["text"] == "the laptop is in #team" && $0["room"] == "#team" } != nil, "\(bob.recent(6))")

        desktop.send("/join #later")
        desktop.send("/part")
        #expect(await followed("parted", "#later"), "\(laptop.recent(6))")
        #expect(!bob.events.value.contains { $0["type"] == "followed" })
        for n in [desktop, laptop, bob] { _ = await n.quit() }

        // Kept on the laptop.
        let marks = try await runToEnd("/usr/bin/sqlite3", [three.laptopDir.path + "/peernode.db",
                                                             "SELECT 't', hex(key) FROM trusted UNION ALL SELECT 'b', hex(key) FROM blocked;"]).stdout.lowercased()
        #expect(marks.contains("t|" + bobID) && marks.contains("b|" + stranger), "\(marks)")
        withExtendedLifetime(three) {}
    }
}
