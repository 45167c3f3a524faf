import Dispatch
import Foundation
import Glibc
import Gossip
import Reactor

/// `peernode relay`: a node with no UI that stores and forwards everything
/// on its network (ciphertext it cannot read included), serves `/healthz`
/// and `/metrics` on `--metrics-listen` (loopback by default), and logs
/// instead of printing.
/// SIGTERM/SIGINT stop it cleanly (exit 0); SIGHUP reopens the log file.
func runRelay(_ options: Options, environment: [String: String]) throws {
    // Before any thread starts, so that only the loop's signalfd sees them.
    try EventLoop.blockSignals(relaySignals)
    let log = try Logger(format: options.logFormat == "json" ? .json : .plain, path: options.logFile)
    let node = try Node(options: options, environment: environment)
    node.ownDurability.startRunning()
    // A relay's name is presence, not history: its beacons carry it, and it
    // posts nothing, so it is no room's member (docs/DECISIONS.md, "Presence").
    let name = try options.nick.map { try Nick($0).value }
    raiseDescriptorLimit(log)
    let network = try NetworkNode(node: node, room: .general, presenter: RelayLogPresenter(log: log), log: log, relay: true)
    network.presence.nick = name
    network.maximumStore = options.maxStore.flatMap(CommandLineSpec.parseSize)
    // Files others fetch through the relay: 1 GB unless said (docs/PROTOCOL.md §16).
    node.files.maximumHeld = options.maxFiles == "0" ? 0 : options.maxFiles.flatMap(CommandLineSpec.parseSize) ?? Files.relayDefaultQuota
    network.applyLimits(options)
    network.metricsPeerLabels = options.metricsPeerLabels
    let done = DispatchSemaphore(value: 0)
    // Before the loop starts (nothing else touches it yet); handled on the loop.
    try network.loop.onSignals(relaySignals) { number in
        if number == SIGHUP {
            do {
                try log.reopen()
                log.info("log reopened")
            } catch {
                log.warning("\(error)")
            }
            return
        }
        log.info("stopping", ["signal": number == SIGTERM ? "TERM" : "INT"])
        // Close frames and what was queued before them go out; then exit 0.
        network.stop {
            log.info("stopped")
            done.signal()
        }
    }
    try network.start(listen: options.listen, peers: options.peers, discovery: try discoveryConfiguration(options))
    let metrics = try network.startMetrics(listen: options.metricsListen)
    log.info("relay ready", ["id": node.me.hex, "listen": network.listenAddress, "metrics": metrics ?? "", "data_dir": node.directory.path,
                             "max_store": options.maxStore ?? "none"])
    done.wait()
}

/// SIGTERM and SIGINT stop a relay cleanly; SIGHUP reopens its log file.
let relaySignals = [SIGTERM, SIGINT, SIGHUP]

/// Hundreds of links need more descriptors than the usual soft limit of 1,024.
func raiseDescriptorLimit(_ log: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
        log.warning("cannot raise the descriptor limit", ["soft": String(limit.rlim_cur)])
    }
}

/// A relay shows nothing: links going up and down are logged (the relay's
/// own start and stop are logged by `runRelay`).
struct RelayLogPresenter: Presenter {
    let log: Logger

    func present(_ events: [NodeEvent]) {
        for event in events {
            switch event {
            case let .peerUp(person, address, node, _, subprotocol):
                log.info("link up", ["peer": node.hex, "account": person.key.hex, "nick": person.nick?.unsanitized ?? "", "addr": address,
                                     "link": subprotocol])
            case let .peerDown(key, reason, _):
                log.info("link down", ["peer": key.hex, "reason": reason?.description ?? ""])
            case let .olderPeer(_, node, version):
                log.info("older peer: what is signed now is held back from it", ["peer": node.hex, "link_version": "\(version)"])
            default:
                break
            }
        }
    }
}
