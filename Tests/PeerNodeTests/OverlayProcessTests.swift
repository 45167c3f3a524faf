import Foundation
import TestSupport
import Testing

/// The overlay with real processes, in its short form: `make bench` runs
/// scripts/bench-overlay.py with 12, 24, 32 and 64 nodes (docs/SCALE.md).
@Suite("Overlay: real nodes on one host", .serialized)
struct OverlayProcessTests {
    @Test("16 nodes by loopback multicast: at most 6 neighbours each (links still being set up apart), one overlay, every message to every node; 4 killed at once: every survivor still gets every message, links heal into one overlay")
    func sixteen() async throws {
        let r = try await runToEnd("/usr/bin/python3", [FaultTests.scripts + "/bench-overlay.py", PeerNodeProcess.binary, "16", "--check"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("16 nodes (--max-links 6): links per node max"), "\(r.stdout)")
        #expect(r.stdout.contains("delivered to all: yes") && r.stdout.contains("delivered to every survivor: yes"), "\(r.stdout)")
    }
}
