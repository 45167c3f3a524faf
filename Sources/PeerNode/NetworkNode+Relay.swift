import Crypto
import Foundation
import Gossip
import NodeCore
import WebSocket

/// What a relay adds: `GET /healthz` and `GET /metrics` on their own
/// address (`--metrics-listen`, loopback by default: the link port answers
/// anyone on the LAN), the store-size limit, and a clean stop. All of it
/// runs on the loop.
extension NetworkNode {
    /// Where `/healthz` and `/metrics` are served unless `--metrics-listen` says.
    static let defaultMetricsListen = "127.0.0.1:7734"

    /// Serves `/healthz` and `/metrics` on `wanted` (HOST:PORT); returns the
    /// address bound. A WebSocket upgrade there is refused (no path is served).
    func startMetrics(listen wanted: String?) throws -> String? {
        let address = wanted ?? Self.defaultMetricsListen
        guard let (host, port) = PeerAddress.split(hostPort: address) else { throw NodeError.badAddress(option: "--metrics-listen", needs: "HOST:PORT", got: address) }
        let server = WebSocketServer(loop: loop, configuration: WebSocketServer.Configuration(paths: []),
                                     callbacks: WebSocketCallbacks(), httpHandler: { @Sendable [self] request in self.http(request) })
        do {
            let bound = try server.listen(host: host, port: port)
            metricsServer = server
            return "\(host):\(bound)"
        } catch {
            // The default port taken (a second relay on this machine) is not fatal.
            if wanted != nil { throw NodeError.cannotBind(serving: "serve metrics", address: address, reason: "\(error)") }
            log.warning("not serving /healthz and /metrics (\(address): \(error))")
            return nil
        }
    }

    /// `/healthz` (JSON) and `/metrics` (Prometheus text format 0.0.4).
    func http(_ request: HTTPRequest) -> HTTPResponse? {
        switch request.path {
        case "/healthz":
            let body = JSONEvents.line([
                "status": .string(storeFull ? "store_full" : "ok"), "id": .string(node.me.hex),
                "links": .number(UInt64(linkedPeers.count)), "envelopes": .number(UInt64(readLogged("the envelope count") { try node.store.envelopeCount() } ?? 0)),
                "uptime_seconds": .number(UInt64(max(0, monotonic() - started))),
            ])
            return HTTPResponse(status: 200, contentType: "application/json", body: Array((body + "\n").utf8))
        case "/metrics":
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(metrics().utf8))
        default:
            return nil
        }
    }

    /// Remote identities with a link up, one per peer.
    var linkedPeers: [LinkID: PublicKey] { table.linkedPeers }

    func metrics() -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int)]) {
            lines.append("# HELP peernode_\(name) \(help)")
            lines.append("# TYPE peernode_\(name) \(type)")
            for s in samples { lines.append("peernode_\(name)\(s.labels) \(s.value)") }
        }
        let peers = linkedPeers
        metric("links", "gauge", "Links up now.", [("", peers.count)])
        metric("peers_known", "gauge", "Peers known: linked, or found by discovery.",
               [("", Set(peers.values).union(table.dialers.values.compactMap { $0.retired ? nil : $0.remote }).count)])
        // A count that cannot be read is left out, not reported as 0.
        metric("envelopes_stored", "gauge", "Envelopes in the store.", readLogged("the envelope count") { try node.store.envelopeCount() }.map { [("", $0)] } ?? [])
        metric("store_bytes", "gauge", "Bytes of the database on disk.", [("", Int(clamping: node.store.bytesOnDisk))])
        metric("envelopes_relayed_total", "counter", "Envelopes sent to peers.", [("", counters[.envelopesSent])])
        metric("seals_split_total", "counter", "Fan-outs whose links' seals were made on all the cores at once.", [("", counters[.sealsSplit])])
        metric("envelopes_duplicate_total", "counter", "Envelopes a link pushed that were held already (tree push prunes such links).", [("", counters[.envelopesDuplicate])])
        metric("tree_messages_total", "counter", "Tree push: ids announced on lazy links, prunes and grafts, sent and received.",
               [(Counter.ihaveSent, "ihave", "sent"), (.ihaveReceived, "ihave", "received"), (.pruneSent, "prune", "sent"),
                (.pruneReceived, "prune", "received"), (.graftSent, "graft", "sent"), (.graftReceived, "graft", "received")]
                .map { (labels: "{kind=\"\($0.1)\",direction=\"\($0.2)\"}", value: counters[$0.0]) })
        let overlay = core.overlay
        metric("overlay_peers", "gauge", "The overlay's views: neighbours linked, peers in reserve, links kept for --peer.",
               [("{view=\"active\"}", overlay.membership.active.count), ("{view=\"passive\"}", overlay.membership.passive.count),
                ("{view=\"kept\"}", overlay.pinned.count)])
        metric("bytes_received_total", "counter", "Bytes received on links.", [("", counters[.bytesIn])])
        metric("bytes_sent_total", "counter", "Bytes sent on links.", [("", counters[.bytesOut])])
        var drops = Counter.drops.map { (labels: "{reason=\"\($0.rawValue)\"}", value: counters[$0]) }
        for (key, value) in (discovery?.counters ?? [:]).sorted(by: { $0.key < $1.key }) where key.hasPrefix("discovery_drop_") {
            drops.append((labels: "{reason=\"discovery_\(key.dropFirst("discovery_drop_".count))\"}", value: value))
        }
        metric("drops_total", "counter", "Refused or dropped input, by reason.", drops)
        // Sync lag: envelopes we hold that a linked peer is not known to hold.
        let clock = replicator.clock
        var lag: [(labels: String, value: Int)] = []
        if metricsPeerLabels {
            for (id, remote) in peers.sorted(by: { $0.value < $1.value }) {
                let missing = clock.count(beyond: replicator.knownClock(of: id) ?? VectorClock())
                lag.append((labels: "{peer=\"\(remote.hex)\"}", value: Int(clamping: missing)))
            }
        } else {
            // Without peer labels: the largest lag of any linked peer.
            let worst = peers.keys.map { clock.count(beyond: replicator.knownClock(of: $0) ?? VectorClock()) }.max() ?? 0
            lag.append((labels: "", value: Int(clamping: worst)))
        }
        metric("sync_lag_envelopes", "gauge", "Envelopes this node holds that a linked peer is not known to hold (the largest, or per peer with --metrics-peer-labels).", lag)
        metric("uptime_seconds", "gauge", "Seconds since start.", [("", Int(max(0, monotonic() - started)))])
        lines.append("# HELP peernode_stage_seconds Where a message's time goes in this node, by stage (docs/SCALE.md); quantiles over the last \(StageTimes.window) runs.")
        lines.append("# TYPE peernode_stage_seconds summary")
        for (stage, s) in core.stages.summaries {
            let label = "stage=\"\(stage.rawValue)\""
            lines.append("peernode_stage_seconds{\(label),quantile=\"0.5\"} \(s.median)")
            lines.append("peernode_stage_seconds{\(label),quantile=\"0.99\"} \(s.p99)")
            lines.append("peernode_stage_seconds_sum{\(label)} \(s.total)")
            lines.append("peernode_stage_seconds_count{\(label)} \(s.count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Relay with `--max-store`: stop taking envelopes from others at the
    /// limit (logged once each way); they are offered again later.
    func checkStoreSize() {
        guard let limit = maximumStore else { return }
        let full = node.store.bytesOnDisk >= limit
        if full != storeFull {
            storeFull = full
            if full {
                log.warning("store full: refusing envelopes from others", ["bytes": String(node.store.bytesOnDisk), "limit": String(limit)])
            } else {
                log.info("store has room again", ["bytes": String(node.store.bytesOnDisk)])
            }
        }
    }

    /// `/stats`: links, then every counter that moved, by name.
    func stats() -> NodeEvent {
        var all = counters.byName.merging(discovery?.counters ?? [:]) { a, _ in a }
        all.merge(unitCounts) { a, _ in a }
        // The loop's own clock: its once-a-second turns, and the waits that ended with no event (an idle node's wake-ups).
        all["node_ticks"] = ticksRun
        all["loop_idle_wakes"] = loop.idleWakes
        return .stats(links: linkedPeers.count, counters: all.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) },
                      stages: core.stages.summaries)
    }

    /// What the units refused or failed, by counter name (`/stats`), those that moved.
    var unitCounts: [String: Int] {
        let node = self.node
        let all = ["bad_nick": node.refusedNicks, "edit_refused": node.messageLife.refusedEdits, "reaction_refused": node.reactions.refused,
                   "device_refused": node.devices.refusedClaims, "revoke_refused": node.devices.refusedRevocations,
                   "revoked_refused": node.devices.refusedRevoked, "revoked_filing_failed": node.devices.refusedFilingFailures,
                   "store_read_failed": node.storeFailures.count, "room_post_refused": node.privateRooms.refusedRoomPosts,
                   "rekey_refused": node.conversations.refusedRekeys, "membership_refused": node.privateRooms.refusedMembership,
                   "file_bad_chunk": node.files.badChunks, "file_asks_waited": node.files.waitingAsks.waitedCount,
                   "file_asks_waited_out": node.files.waitingAsks.waitedOutCount]
        return all.filter { $0.value > 0 }
    }
}
