import Dispatch
import Foundation
import Glibc
import Gossip

/// `peernode relay`: a node with no UI that stores and forwards everything
/// on its network (ciphertext it cannot read included), serves `/healthz`
/// and `/metrics` on `--metrics-listen` (loopback by default), and logs
/// instead of printing.
/// SIGTERM/SIGINT stop it cleanly (exit 0); SIGHUP reopens the log file.
func runRelay(_ options: Options, environment: [String: String]) throws {
    let log = try Logger(format: options.logFormat == "json" ? .json : .plain, path: options.logFile)
    let node = try Node(options: options, environment: environment)
    // The relay's own history is not waited for (a relay posts nothing else); a
    // relay whose database was lost should be started once without --nick.
    if let wanted = options.nick, node.nick != wanted, node.ownHistoryIsKnown {
        try node.post(try Nick(wanted).value, kind: .nick, in: .general)
    }
    raiseDescriptorLimit(log)
    let network = try NetworkNode(node: node, room: .general, presenter: RelayLogPresenter(log: log), log: log, relay: true)
    network.maximumStore = options.maxStore.flatMap(CommandLineSpec.parseSize)
    network.applyLimits(options)
    network.metricsPeerLabels = options.metricsPeerLabels
    try network.start(listen: options.listen, peers: options.peers, discovery: try discoveryConfiguration(options))
    let metrics = try network.startMetrics(listen: options.metricsListen)
    log.info("relay ready", ["id": node.me.hex, "listen": network.listenAddress, "metrics": metrics ?? "", "data_dir": node.directory.path,
                             "max_store": options.maxStore ?? "none"])

    let queue = DispatchQueue(label: "peernode.signals")
    let done = DispatchSemaphore(value: 0)
    var sources: [DispatchSourceSignal] = []
    for number in [SIGTERM, SIGINT, SIGHUP] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler { @Sendable in
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
            network.loop.execute { network.stopAccepting() }
            // Close frames and what was queued before them go out; then exit 0.
            Thread.sleep(forTimeInterval: RelayTiming.closeGrace)
            network.finishStore()
            log.info("stopped")
            done.signal()
        }
        source.resume()
        sources.append(source)
    }
    let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "peernode.tick"))
    timer.schedule(deadline: .now() + 1, repeating: 1)
    timer.setEventHandler { @Sendable in network.loop.execute { network.tick() } }
    timer.resume()
    done.wait()
    timer.cancel()
    for source in sources { source.cancel() }
}

/// Hundreds of links need more descriptors than the usual soft limit of 1,024.
func raiseDescriptorLimit(_ log: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
        log.warning("cannot raise the descriptor limit", ["soft": String(limit.rlim_cur)])
    }
}

enum RelayTiming {
    /// Seconds a stopping relay gives its links to flush and close.
    static let closeGrace = 0.5
}

/// A relay shows nothing: links going up and down are logged (the relay's
/// own start and stop are logged by `runRelay`).
struct RelayLogPresenter: Presenter {
    let log: Logger

    func present(_ events: [NodeEvent]) {
        for event in events {
            switch event {
            case let .peerUp(person, address):
                log.info("link up", ["peer": person.key.hex, "nick": person.nick?.unsanitized ?? "", "addr": address])
            case let .peerDown(key, reason):
                log.info("link down", ["peer": key.hex, "reason": reason?.description ?? ""])
            default:
                break
            }
        }
    }
}
