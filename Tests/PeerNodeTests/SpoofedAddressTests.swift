import Crypto
import Discovery
import Foundation
import Reactor
import TestSupport
import Testing

/// Issue 13, finding 11: a member announcing its own identity at a third
/// party's address made every node dial that address once per backoff.
@Suite("Hostile members: an announcement naming another machine's address", .serialized)
struct SpoofedAddressTests {
    @Test("finding 11: a member announces itself at another node's address; a node dials there once and holds the address (discovery_misdirected): a second identity announced there is not dialled; the node that lives there still links")
    func spoofedAddress() async throws {
        let group = "239.255.73.73:\(Int.random(in: 40_000..<50_000))"
        let discovery = ["--multicast", group, "--multicast-if", "127.0.0.1"]
        let (victimDir, targetDir) = (TemporaryDirectory(), TemporaryDirectory())
        // The victim lives at the address; it does not announce yet.
        let victim = try NodeProcess(dir: victimDir.path, ["--nick", "victim"])
        #expect(await started(victim))
        let victimPort = try #require(victim.url.split(separator: ":").last.flatMap { UInt16($0) })
        let target = try NodeProcess(dir: targetDir.path, ["--nick", "target"] + discovery, discovery: true)
        #expect(await started(target))
        // The member: real discovery services, each signed by a fresh key of its own, naming the victim's port on this host.
        let groupPort = try #require(UInt16(group.split(separator: ":")[1]))
        // Each runs on a loop of its own, as in a node; shutting the loop down stops it.
        func member() throws -> (EventLoop, DiscoveryService, PublicKey) {
            let key = try SigningKey.generate()
            let loop = try EventLoop()
            let service = try DiscoveryService(
                configuration: .init(group: "239.255.73.73", port: groupPort, interface: "127.0.0.1"),
                signer: key, network: HostilePeer.lan, linkPort: victimPort, loop: loop, onEvent: { _ in })
            try service.start()
            loop.start()
            return (loop, service, key.publicKey)
        }
        let (first, firstService, _) = try member()
        defer { first.shutdown(); withExtendedLifetime(firstService) {} }
        #expect(await counterReaches(target, "unexpected_identity", "1", timeout: 60), "the first dial reaches the victim")
        #expect(await counterReaches(target, "discovery_misdirected", "1"))
        // A second identity at the same address (identities are free): found, and not dialled there.
        let (second, secondService, secondID) = try member()
        defer { second.shutdown(); withExtendedLifetime(secondService) {} }
        #expect(await eventually(60, interval: .milliseconds(500)) {
            target.send("/peers")
            return target.events.value.contains { $0["type"] == "peer" && $0["id"] == secondID.hex }
        }, "the second identity is found")
        // Its dial's turn comes (at once or within discoveredDialDelay) and is skipped: counted, not made.
        #expect(await counterAtLeast(target, "dial_skipped_held", 1), "the second identity's dial was put off")
        target.send("/stats")
        let stats = await target.wait { $0["type"] == "stats" && $0["dial_skipped_held"] != nil }
        #expect(stats?["unexpected_identity"] == "1", "dialled the victim again for another identity: \(stats ?? [:])")
        // The victim announcing itself at its own address is still dialled (or dials): they link.
        await victim.quit()
        let back = try NodeProcess(dir: victimDir.path, ["--nick", "victim"] + discovery, discovery: true, listen: "127.0.0.1:\(victimPort)")
        #expect(await started(back))
        #expect(await eventually(20) { peersUp(target).contains(back.id) }, "the real node at the held address links")
        await back.quit()
        await target.quit()
    }
}
