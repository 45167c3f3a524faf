import Crypto
import Discovery
import Foundation

/// Discovery feeds the link layer: a peer found on the LAN gets a dialler
/// that expects its identity; one that expires loses it. One link per pair:
/// the node with the smaller id dials at once, the other only after
/// `discoveredDialDelay` (in case the smaller cannot reach it), and the
/// link-level tie-break removes any duplicate.
extension NetworkNode {
    /// Seconds the node with the larger id waits before dialling a peer it found.
    static let discoveredDialDelay = 2.0

    func startDiscovery(_ configuration: DiscoveryService.Configuration, listening: Bool) {
        do {
            let service = try DiscoveryService(
                configuration: configuration, signer: node.identity, network: node.network,
                linkPort: listening ? listenPort : 0,
                onEvent: { [self] action in loop.execute { [self] in discovered(action) } })
            discovery = service
            service.start()
        } catch {
            // Discovery is a convenience: without it, --peer links still work.
            FileHandle.standardError.write(Data("peernode: LAN discovery is off: \(error)\n".utf8))
        }
    }

    func stopDiscovery() {
        discovery?.stop()
    }

    private func discovered(_ action: DiscoveryCore.Action) {
        let now = monotonic()
        switch action {
        case let .found(peer, host, port):
            guard port != 0, !blocked.contains(peer) else { return }
            let first = node.me < peer || listenPort == 0 ? now : now + Self.discoveredDialDelay
            if let d = dialers.firstIndex(where: { $0.discovered && $0.remote == peer }) {
                let moved = dialers[d].host != host || dialers[d].port != port
                dialers[d].host = host
                dialers[d].port = port
                if dialers[d].retired || moved {
                    dialers[d].retired = false
                    dialers[d].attempt = 0
                    dialers[d].nextTry = first
                }
            } else if !dialers.contains(where: { $0.remote == peer }) {
                // A --peer dialler that already knows this identity needs no second one.
                dialers.append(Dialer(host: host, port: port, nextTry: first, remote: peer, discovered: true))
            }
            // Due now: dial at once rather than at the next once-a-second tick.
            if let d = dialers.firstIndex(where: { $0.discovered && $0.remote == peer }),
               !dialers[d].connecting, !dialers[d].retired, dialers[d].nextTry <= now {
                dial(d)
            }
        case let .expired(peer):
            for d in dialers.indices where dialers[d].discovered && dialers[d].remote == peer { dialers[d].retired = true }
        case .send:
            break
        }
    }
}

/// A member can announce its own identity from a spoofed source address (or
/// with another machine's port), and every node would then dial that third
/// party once per backoff, for as long as the member kept announcing. A dial
/// for a discovered peer that reaches another identity therefore holds the
/// address: for `misdirectedHold` nobody but the identity that answered
/// there is dialled at it, however many identities are announced there.
/// The one that answered still is, so a member cannot keep a node from
/// dialling a real peer by naming its address.
extension NetworkNode {
    /// Seconds an address stays held after a misdirected dial.
    static let misdirectedHold = 600.0
    /// Held addresses remembered at once (the one held longest ago goes first).
    static let maximumMisdirected = 1_024

    /// What a hold is keyed by: host and port.
    private func address(of d: Int) -> String { "\(dialers[d].host):\(dialers[d].port)" }

    func misdirectedDial(_ d: Int, answered: PublicKey, now: Double) {
        guard dialers.indices.contains(d), dialers[d].discovered else { return }
        let address = address(of: d)
        if misdirected[address] == nil, misdirected.count >= Self.maximumMisdirected,
           let oldest = misdirected.min(by: { $0.value.until < $1.value.until })?.key {
            misdirected[oldest] = nil
        }
        misdirected[address] = (now + Self.misdirectedHold, answered)
        count("discovery_misdirected")
        log.warning("\(address) was announced for \(dialers[d].remote?.shortFingerprint ?? "?") but \(answered.shortFingerprint) answered; not dialled there for \(Int(Self.misdirectedHold)) s")
    }

    /// When a discovered dialler's address is held for it (nil: it may dial).
    func heldUntil(_ d: Int, now: Double) -> Double? {
        guard dialers[d].discovered else { return nil }
        let address = address(of: d)
        guard let hold = misdirected[address] else { return nil }
        guard hold.until > now else {
            misdirected[address] = nil
            return nil
        }
        return dialers[d].remote == hold.answered ? nil : hold.until
    }
}
