import NodeCore
import OverlaySimulation
import Testing

/// The whole-LAN simulation (docs/SCALE.md) in its short form: the same
/// code `peernode-bench overlay` runs with 1,000 nodes, 10,000 authors and
/// 1,000,000 messages (`make bench`).
@Suite("Scale: a thousand simulated nodes with bounded links and tree push")
struct ScaleSimulationTests {
    @Test("1,000 nodes, 300 authors, 3,000 messages: everyone gets everything, at most 6 links, a tree once settled (no duplicate), few hops; 20 % killed at once heal and still get everything")
    func thousand() {
        var settings = ScaleRun.Settings()
        settings.nodes = 1_000
        settings.authors = 300
        settings.messages = 3_000
        settings.healRate = 10
        let r = ScaleRun.run(settings)
        #expect(r.missed == 0, "\(r.lines.joined(separator: "\n"))")
        #expect(r.maximumDegree <= Overlay.defaultLinks)
        #expect(r.minimumDegree >= 3)
        #expect(r.asymmetric == 0)
        #expect(r.duplicatesPerNodePerMessage <= 0.2)
        #expect(r.fullSendsPerMessage <= Double(settings.nodes - 1) * 1.01, "a spanning tree sends n − 1")
        #expect(settings.hopAim == 12)
        #expect(r.hopWorst <= settings.hopAim, "ceil(log2 1000) + 2")
        #expect(r.killed == 200)
        #expect(r.linksBackAfter != nil && r.degreeWhileHealing <= Overlay.defaultLinks)
        #expect(r.healMissed == 0)
        #expect((r.worstDeliveryWhileHealing ?? .infinity) < 10)
    }

    @Test("the full mesh of earlier builds, measured the same way, sends (n − 1)² per message and about n − 2 duplicates to each node")
    func mesh() {
        var settings = ScaleRun.Settings()
        settings.nodes = 100
        settings.authors = 10
        settings.messages = 10
        settings.warmup = 0
        settings.maximumLinks = 0
        let r = ScaleRun.run(settings)
        #expect(r.missed == 0)
        #expect(r.fullSendsPerMessage == Double(99 * 99))
        #expect(r.duplicatesPerNodePerMessage > 97)
    }
}
