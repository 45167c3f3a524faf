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
    /// Adds (`-I`) or removes (`-D`) the rule that refuses new connections to `port` on loopback.
    static func refuse(_ port: UInt16, _ action: String) throws -> Finished {
        try runToEndBlocking("/usr/sbin/iptables", [action, "OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", String(port), "--syn", "-j", "REJECT"])
    }

    @Test("""
        alice and carol cannot link (iptables refuses their ports): carol's /get of alice's 8 MiB file ends whole through \
        the relay, which did not hold it when first asked and fetched it itself; carol's only link was the relay
        """)
    func relayAlone() async throws {
        try #require(geteuid() == 0, "needs root for iptables (CI runs as root)")
        let ports = [try freeLoopbackPort(), try freeLoopbackPort()]
        for port in ports {
            let added = try Self.refuse(port, "-I")
            try #require(added.status == 0, "iptables could not refuse port \(port): \(added.stderr)")
        }
        defer { for port in ports { _ = try? Self.refuse(port, "-D") } }
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path)
        let url = "ws://" + (try #require(await relay.ready())["listen"] ?? "")
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", url], listen: "127.0.0.1:\(ports[0])")
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", url], listen: "127.0.0.1:\(ports[1])")
        #expect(await started(a))
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
}
