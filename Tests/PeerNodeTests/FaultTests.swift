import Foundation
import TestSupport
import Testing

/// The fault scripts of issue 7 in their short form (`make soak` runs the
/// long form): scripts/crash-loop.py, scripts/file-crash-loop.py,
/// scripts/relay-file-crash-loop.py and scripts/disk-full.py against the built binary. Each prints its figures; a failure shows them.
@Suite("Faults: kill -9 and a full disk", .serialized)
struct FaultTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts").standardized.path
    /// Kill -9 cycles in `make test` (`make soak` runs 100).
    static let shortCycles = 12

    @Test("kill -9 at random moments, node and relay: nothing reported is lost, integrity_check passes, everyone converges",
          arguments: ["node", "relay"])
    func killLoop(mode: String) async throws {
        let r = try await runToEnd("/usr/bin/python3", [Self.scripts + "/crash-loop.py", PeerNodeProcess.binary, String(Self.shortCycles), mode])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let figures = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(figures?["cycles"] as? Int == Self.shortCycles)
        #expect(figures?["lost_after_kill"] as? Int == 0 && figures?["lost_at_peer"] as? Int == 0, "\(r.stdout)")
        #expect(figures?["integrity_failures"] as? Int == 0, "\(r.stdout)")
        // Messages really flowed (a loop that posted nothing would prove nothing).
        let reported = (figures?["victim_messages_reported"] ?? figures?["messages_reported"]) as? Int ?? 0
        #expect(reported > 100, "\(r.stdout)")
    }

    @Test("kill -9 at random moments while a 128 MiB file is fetched: it goes on by itself at each start, ends whole and checked, one file in the folder and no temporary one, integrity_check passes after every kill")
    func fileKillLoop() async throws {
        let r = try await runToEnd("/usr/bin/python3", [Self.scripts + "/file-crash-loop.py", PeerNodeProcess.binary, String(Self.shortCycles), "128"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let figures = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect((figures?["failures"] as? [String])?.isEmpty == true, "\(r.stdout)")
        #expect(figures?["folder"] as? [String] == ["backup.img"], "\(r.stdout)")
        // Killed before it ended at least once (a fetch that ended before the first kill would prove nothing).
        #expect((figures?["cycles"] as? Int ?? 0) >= 1, "\(r.stdout)")
    }

    @Test("kill -9 of a relay fetching a 32 MiB file handed to it, at random points of each fetch: it ends holding the file whole, alice's sealed chunks byte for byte, nothing else left in its files folder, no part kept past a start")
    func relayFileKillLoop() async throws {
        // Short and small: each cycle fetches the file anew and erases (overwrites and syncs) the part before.
        let r = try await runToEnd("/usr/bin/python3", [Self.scripts + "/relay-file-crash-loop.py", PeerNodeProcess.binary, String(Self.shortCycles / 4), "32"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let figures = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(figures?["whole"] as? Bool == true && figures?["identical"] as? Bool == true, "\(r.stdout)")
        #expect((figures?["left"] as? [String])?.isEmpty == true, "\(r.stdout)")
        // Killed mid-fetch at least once (a fetch that ended before the first kill would prove nothing).
        #expect((figures?["kills"] as? Int ?? 0) >= 1, "\(r.stdout)")
    }

    @Test("a full disk: posts refused with a clear reason, no crash, nothing lost, resumes when space is back; read-only data directory refused (root: tmpfs)")
    func diskFull() async throws {
        try #require(geteuid() == 0, "needs root to mount a tmpfs (CI runs as root)")
        let r = try await runToEnd("/usr/bin/python3", [Self.scripts + "/disk-full.py", PeerNodeProcess.binary])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("disk full and read-only: no crash, nothing lost"), "\(r.stdout)")
    }
}

@Suite("Soak in the namespace lab")
struct LabSoakTests {
    @Test("the lab's delay and loss work: 80 ms shows in a TCP round trip, 100% loss lets no datagram through, 30% about 30%, off restores both (root)")
    func impairment() async throws {
        try #require(geteuid() == 0, "needs root for network namespaces (CI runs as root)")
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/impair-check.py"])
        #expect(r.status == 0 && r.stdout.contains("impair: delay and loss applied and removed"), "\(r.stdout)\(r.stderr)")
    }

    @Test("8 hosts post for 20 s while hosts are cut, interfaces go down, links get delay and loss, and nodes restart; then identical histories, nothing lost, no forks, causal order (root)")
    func labSoak() async throws {
        try #require(geteuid() == 0, "needs root for network namespaces (CI runs as root)")
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/lab-soak.py", PeerNodeProcess.binary, "8", "20"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("lab soak: identical histories, nothing lost"), "\(r.stdout)\(r.stderr)")
        // Every kind of fault happened at least once.
        for figure in ["\"cuts\": ", "\"ifdown\": ", "\"impaired\": ", "\"restarts\": "] {
            #expect(r.stdout.contains(figure) && !r.stdout.contains(figure + "0,"), "\(figure) \(r.stdout)")
        }
    }
}

@Suite("The wire carries no plaintext")
struct CaptureTests {
    @Test("tcpdump on loopback while nicks, rooms, messages, a DM and a private room are exchanged: none of their text is captured (root)")
    func noPlaintext() async throws {
        try #require(geteuid() == 0, "needs root for tcpdump (CI runs as root)")
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/capture-check.py", PeerNodeProcess.binary])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("is on the wire") && !r.stdout.contains("FAILED"), "\(r.stdout)")
    }
}

@Suite("Abusive peers")
struct AbuseTests {
    @Test("slowloris: 400 silent or half-open connections from one address; at most 64 held, the rest refused and counted, all closed by the handshake timeout; a new node still links; chat goes on")
    func slowloris() async throws {
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/slowloris.py", PeerNodeProcess.binary, "400"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("slowloris: bounded, refused, timed out"), "\(r.stdout)")
    }

    @Test("slow consumer: a peer that stops reading while 45 MiB come its way is dropped; the node stays bounded and responsive; the peer gets everything when it reads again")
    func slowConsumer() async throws {
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/abuse.py", PeerNodeProcess.binary, "slow-consumer", "800"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("slow consumer: dropped, bounded, caught up"), "\(r.stdout)")
    }

    @Test("slow stdout reader: nobody reads a --json node's events while 4,000 messages of 3 KB arrive (12 MB, past Output.maximumUnwrittenBytes); it keeps reading commands and gossiping, counts the lines it dropped, and stops cleanly when stdout closes")
    func slowReader() async throws {
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/abuse.py", PeerNodeProcess.binary, "slow-reader", "4000"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("slow reader: A kept running, counted what it dropped, and stopped cleanly when stdout closed"), "\(r.stdout)")
    }

    @Test("flood: a peer posting as fast as it can for 5 s; another peer's messages still arrive, none lost, memory bounded")
    func flood() async throws {
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/abuse.py", PeerNodeProcess.binary, "flood", "5"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("flood: A stayed responsive; nothing lost"), "\(r.stdout)")
    }
}
