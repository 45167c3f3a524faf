import Foundation
import Glibc
import TestSupport
import Testing

/// Two nodes that cannot link to each other at all: each one's listening
/// port on loopback refused by iptables, so the relay is their only path
/// (linked to the same relay, they otherwise learn each other's address from
/// it and link directly, and a file then never passes through the relay).
@Suite("A file through a relay alone", .serialized)
struct RelayOnlyFileTests {
    /// Two loopback ports nobody can connect to (iptables refuses new
    /// connections to them) until the value is released: for two nodes to
    /// listen on, so they can dial a relay but not each other. Needs root.
    final class ApartPorts {
        let ports: [UInt16]

        init() throws {
            try #require(geteuid() == 0, "needs root for iptables (CI runs as root)")
            ports = [try freeLoopbackPort(), try freeLoopbackPort()]
            for port in ports {
                let added = try Self.refuse(port, "-I")
                try #require(added.status == 0, "iptables could not refuse port \(port): \(added.stderr)")
            }
        }

        deinit { for port in ports { _ = try? Self.refuse(port, "-D") } }

        /// Adds (`-I`) or removes (`-D`) the rule that refuses new connections to `port` on loopback.
        static func refuse(_ port: UInt16, _ action: String) throws -> Finished {
            try runToEndBlocking("/usr/sbin/iptables", [action, "OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", String(port), "--syn", "-j", "REJECT"])
        }
    }

    /// Ports kept apart, data folders for three, a relay, and alice (on the first port) linked to it.
    func aliceAndRelay() async throws -> (apart: ApartPorts, dirs: [TemporaryDirectory], relay: RelayProcess, url: String, a: NodeProcess) {
        let apart = try ApartPorts()
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let url = "ws://" + (try #require(await relay.ready())["listen"] ?? "")
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", url], listen: "127.0.0.1:\(apart.ports[0])")
        #expect(await started(a))
        return (apart, dirs, relay, url, a)
    }

    @Test("""
        alice and carol cannot link (iptables refuses their ports): carol's /get of alice's 8 MiB file ends whole through \
        the relay, which did not hold it when first asked and fetched it itself; carol's only link was the relay
        """)
    func relayAlone() async throws {
        let (apart, dirs, relay, url, a) = try await aliceAndRelay()
        let ports = apart.ports
        defer { withExtendedLifetime(apart) {} }
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", url], listen: "127.0.0.1:\(ports[1])")
        #expect(await started(c))
        #expect(await a.wait { $0["type"] == "peer_up" } != nil)
        #expect(await c.wait { $0["type"] == "peer_up" } != nil)
        let files = FileTransferTests()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let file = try files.randomFile(source, "photos.tar", size: 8 << 20)
        a.send("/send \(file.path)")
        let offer = try #require(await c.wait(timeout: 60) { $0["type"] == "file" })
        let done = await files.get(c, try #require(offer["n"]), into: into.path, timeout: 90)
        #expect(done?["type"] == "file_done" && files.hash(of: into.path + "/photos.tar") == file.hash, "\(done ?? [:]) \(c.recent(5))")
        // The relay fetched it to serve it, and carol never linked to alice.
        let held = (try? FileManager.default.contentsOfDirectory(atPath: dirs[0].path + "/files")) ?? []
        #expect(held.contains(offer["root"] ?? "?"), "the relay fetched the file to serve it: \(held)")
        let linked = c.events.value.filter { $0["type"] == "peer_up" }.compactMap { $0["id"] }
        #expect(!linked.contains(a.id), "carol linked to alice directly: \(linked)")
        for node in [a, c] { await node.quit() }
        _ = await relay.terminate()
    }

    @Test("""
        a file is handed to the relay when it is offered: alice offers two, the relay fetches both from her once it \
        holds their offers; she deletes one (the relay erases its copy) and quits; carol, who comes later and reaches \
        nobody but the relay, fetches the other whole
        """)
    func handedToTheRelay() async throws {
        let (apart, dirs, relay, url, a) = try await aliceAndRelay()
        let ports = apart.ports
        defer { withExtendedLifetime(apart) {} }
        #expect(await a.wait { $0["type"] == "presence" && $0["state"] == "relay" } != nil, "the relay's presence: \(a.recent(4))")
        let files = FileTransferTests()
        let source = TemporaryDirectory(), into = TemporaryDirectory()
        let kept = try files.randomFile(source, "minutes.pdf", size: 3 << 20)
        let taken = try files.randomFile(source, "draft.doc", size: 2 << 20)
        a.send("/send \(kept.path)")
        let keptOffer = try #require(await a.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "minutes.pdf" })
        a.send("/send \(taken.path)")
        let takenOffer = try #require(await a.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "draft.doc" })
        // The relay holds both whole, asked by nobody but itself: a file's tree is written beside its chunks once the last has come.
        let relayFiles = { (try? FileManager.default.contentsOfDirectory(atPath: dirs[0].path + "/files")) ?? [] }
        let trees = [keptOffer, takenOffer].map { ($0["root"] ?? "?") + ".tree" }
        #expect(await eventually(60) { trees.allSatisfy(relayFiles().contains) }, "the relay holds both files whole: \(relayFiles()) \(a.recent(4))")
        // A delete of the offer reaches the relay's copy: it was bound to the offer's envelope.
        a.send("/delete \(try #require(takenOffer["n"]))")
        #expect(await eventually(30) { !relayFiles().contains { $0.hasPrefix(takenOffer["root"] ?? "?") } }, "\(relayFiles())")
        #expect(await a.quit() == 0)
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", url], listen: "127.0.0.1:\(ports[1])")
        #expect(await started(c))
        let offer = try #require(await c.wait(timeout: 60) { $0["type"] == "file" && $0["name"] == "minutes.pdf" })
        let done = await files.get(c, try #require(offer["n"]), into: into.path, timeout: 60)
        #expect(done?["type"] == "file_done" && files.hash(of: into.path + "/minutes.pdf") == kept.hash, "\(done ?? [:]) \(c.recent(5))")
        await c.quit()
        _ = await relay.terminate()
    }
}

