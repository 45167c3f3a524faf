import Foundation
import OverlaySimulation

/// `peernode-bench overlay [NODES AUTHORS MESSAGES]`: the whole-LAN
/// simulation (docs/SCALE.md) with the overlay, beside the full mesh of
/// earlier builds measured the same way (fewer messages: each floods).
func runScaleSimulation(nodes: Int, authors: Int, messages: Int, meshMessages: Int) {
    print("")
    print("whole-LAN simulation (pure cores, seeded; docs/SCALE.md)")
    var overlay = ScaleRun.Settings()
    overlay.nodes = nodes
    overlay.authors = authors
    overlay.messages = messages
    let started = now()
    var result = ScaleRun.run(overlay)
    result.seconds = now() - started
    for line in result.lines { print(line) }
    var mesh = overlay
    mesh.maximumLinks = 0
    mesh.messages = meshMessages
    mesh.warmup = 0
    let meshStarted = now()
    var flood = ScaleRun.run(mesh)
    flood.seconds = now() - meshStarted
    for line in flood.lines { print(line) }
    print(String(format: "overlay / full mesh: full sends per message %.4f, wire bytes per message per node %.4f",
                 result.fullSendsPerMessage / max(1, flood.fullSendsPerMessage),
                 result.bytesPerMessagePerNode / max(1, flood.bytesPerMessagePerNode)))
    print(String(format: "aims: duplicates per node per message ≤ 0.2: %@ (%.3f); worst hops ≤ ceil(log2 n) + 2: %@ (%d); delivered to all: %@",
                 result.duplicatesPerNodePerMessage <= 0.2 ? "met" : "NOT met", result.duplicatesPerNodePerMessage,
                 result.hopWorst <= overlay.hopAim ? "met" : "NOT met", result.hopWorst,
                 result.missed == 0 && result.healMissed == 0 ? "met" : "NOT met"))
}
