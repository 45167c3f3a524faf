import Foundation
import TestSupport
import Testing

@Suite("Discovery: nodes find each other by multicast", .serialized)
struct DiscoveryNodeTests {
    @Test("three nodes on one host find each other over loopback (--multicast-if 127.0.0.1) and chat")
    func loopback() async throws {
        // A group port of our own, so no other node on this machine is heard.
        let group = "239.255.73.73:\(Int.random(in: 20_000..<30_000))"
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let nodes = try dirs.map { try NodeProcess(dir: $0.path, ["--multicast", group, "--multicast-if", "127.0.0.1"], discovery: true) }
        for n in nodes { #expect(await started(n)) }
        let ids = Set(nodes.map(\.id))
        for n in nodes {
            #expect(await eventually(10) { peersUp(n) == ids.subtracting([n.id]) }, "\(n.id.prefix(8)) sees \(peersUp(n).count) of 2")
        }
        for (i, n) in nodes.enumerated() { n.send("hello from \(i)") }
        for n in nodes {
            #expect(await eventually(10) { messageCounts(n).count == 3 })
        }
        nodes[0].send("/stats")
        let stats = await nodes[0].wait { $0["type"] == "stats" }
        #expect(Int(stats?["discovery_announce_sent"] ?? "0") ?? 0 >= 1)
        #expect(Int(stats?["discovery_drop_own"] ?? "0") ?? 0 >= 1, "our own datagrams come back and are dropped")
        for n in nodes { await n.quit() }
    }
}

/// Resident memory of a process in KiB (from /proc), or nil.
func residentKiB(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
}

extension DiscoveryNodeTests {
    @Test("a flood of garbage, foreign and oversized datagrams is dropped and counted; nodes still find each other; memory stays bounded")
    func flood() async throws {
        let port = Int.random(in: 30_000..<40_000)
        let group = "239.255.73.73:\(port)"
        // A flooder written elsewhere (Python): random bytes, datagrams that look like
        // ours but are sealed with no key we know, and oversized ones, for 6 seconds.
        let flooder = try Child("/usr/bin/python3", ["-c", """
            import os, socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            end, n = time.time() + 6, 0
            while time.time() < end:
                for d in (os.urandom(n % 600), b"PNDA\\x01" + os.urandom(147), os.urandom(1400)):
                    s.sendto(d, ("239.255.73.73", \(port)))
                n += 1
                if n % 64 == 0: time.sleep(0.001)
            """])
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let nodes = try dirs.map { try NodeProcess(dir: $0.path, ["--multicast", group, "--multicast-if", "127.0.0.1"], discovery: true) }
        for n in nodes { #expect(await started(n)) }
        let before = residentKiB(nodes[0].pid) ?? 0
        #expect(await eventually(10) { peersUp(nodes[0]) == [nodes[1].id] && peersUp(nodes[1]) == [nodes[0].id] }, "linked during the flood")
        // The flood is read and dropped by reason (not merely ignored): wait for the counters to say so.
        #expect(await counterAtLeast(nodes[0], "discovery_drop_foreign_network", 1_001))
        #expect(await counterAtLeast(nodes[0], "discovery_drop_oversized", 1_001))
        let after = residentKiB(nodes[0].pid) ?? 0
        #expect(after - before < 20_000, "resident memory grew from \(before) to \(after) KiB during the flood")
        await flooder.exited()
        for n in nodes { await n.quit() }
    }
}

@Suite("The lab: several hosts in network namespaces", .serialized)
struct LabTests {
    @Test("four hosts find each other by discovery alone, converge, survive a cut link, and a host on another network sees no one")
    func lab() async throws {
        let lab: NetLab
        do {
            lab = try await NetLab(hosts: 5)
        } catch {
            Issue.record("the namespace lab could not be built (it needs root and iproute2): \(error)")
            return
        }
        defer { lab.tearDown() }
        let dirs = (0..<5).map { _ in TemporaryDirectory() }
        let nodes = try (1...4).map { try lab.node($0, dir: dirs[$0 - 1].path) }
        let stranger = try lab.node(5, dir: dirs[4].path, ["--network", "elsewhere"])
        for n in nodes + [stranger] { #expect(await started(n)) }
        let ids = Set(nodes.map(\.id))

        // Discovery only: every node links to the three others within a few seconds.
        for n in nodes {
            #expect(await eventually(15) { peersUp(n) == ids.subtracting([n.id]) }, "host sees \(peersUp(n).count) of 3")
        }
        for (i, n) in nodes.enumerated() { n.send("before the cut \(i)") }
        for n in nodes { #expect(await eventually(15) { messageCounts(n).count == 4 }) }

        // Host 4 is unplugged; the others go on chatting, and so does host 4 alone.
        try await lab.cut(4)
        for (i, n) in nodes.enumerated() { n.send("during the cut \(i)") }
        // The three still connected have each other's new messages: they were
        // flowing, and none of them reached host 4.
        for n in nodes[0..<3] { #expect(await eventually(15) { messageCounts(n).count == 7 }, "the others chat on: \(messageCounts(n).count) of 7") }
        #expect(messageCounts(nodes[3]).count == 5, "host 4 has only its own new message")
        try await lab.restore(4)
        for n in nodes {
            #expect(await eventually(60) { messageCounts(n).count == 8 }, "converged after the cut: \(messageCounts(n).count) of 8")
            #expect(messageCounts(n).values.allSatisfy { $0 == 1 }, "each message shown once")
        }
        let reference = Set(messageCounts(nodes[0]).keys)
        for n in nodes { #expect(Set(messageCounts(n).keys) == reference) }

        // The host on another network key saw nobody, and nobody saw it.
        #expect(peersUp(stranger).isEmpty)
        for n in nodes { #expect(!peersUp(n).contains(stranger.id)) }
        stranger.send("/stats")
        let stats = await stranger.wait { $0["type"] == "stats" }
        #expect(Int(stats?["discovery_drop_foreign_network"] ?? "0") ?? 0 >= 1, "it heard the others' datagrams and could not open them")
        for n in nodes + [stranger] { await n.quit() }
    }

    @Test("an interface that comes up after the node started is joined without a restart (a laptop joining Wi-Fi)")
    func interfaceComesUp() async throws {
        let lab: NetLab
        do {
            lab = try await NetLab(hosts: 2)
        } catch {
            Issue.record("the namespace lab could not be built (it needs root and iproute2): \(error)")
            return
        }
        defer { lab.tearDown() }
        try await lab.interfaceDown(2)
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try lab.node(1, dir: dirs[0].path)
        // Listening on 0.0.0.0 works with the interface down; discovery has nothing to join yet.
        let b = try lab.node(2, dir: dirs[1].path)
        #expect(await started(a))
        #expect(await started(b))
        // Node 1 announces on its interface (and queries): had node 2 heard, it would answer or dial.
        #expect(await counterAtLeast(a, "discovery_query_sent", 1))
        #expect(await counterAtLeast(a, "discovery_announce_sent", 1))
        #expect(peersUp(a).isEmpty && peersUp(b).isEmpty)
        try await lab.interfaceUp(2)
        #expect(await eventually(10) { peersUp(a) == [b.id] && peersUp(b) == [a.id] })
        await a.quit(); await b.quit()
    }
}

