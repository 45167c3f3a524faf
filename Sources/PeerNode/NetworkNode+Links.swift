import Crypto
import Discovery
import Foundation
import Gossip
import NetworkText
import NodeCore
import WebSocket

/// Links as they open: the WebSocket callbacks, the Noise session a new
/// connection starts with, and discovery feeding the link table
/// (`LinkTable.found`): a peer found on the LAN gets a dialler that
/// expects its identity; one that expires loses it.
extension NetworkNode {
    // MARK: links

    func callbacks(dialer: LinkTable.DialerID?) -> WebSocketCallbacks {
        WebSocketCallbacks(
            onOpen: { [self] c in opened(c, dialer: dialer) },
            onMessage: { [self] c, m in
                guard case let .binary(bytes) = m, let id = linkOf[ObjectIdentifier(c)] else { return }
                receive(bytes, on: id)
            },
            onPong: { [self] c, payload in
                if let id = linkOf[ObjectIdentifier(c)] { links[id]?.probe.pong(payload, now: monotonic()) }
            },
            onClose: { [self] c, info in closed(c, reason: info.reason) },
            onHandshakeFailure: { [self] c, error in
                count(.websocketHandshakeFailed)
                linkFailed(c.remoteAddress, dialer: dialer, error: "\(error)")
                if let dialer { feed(.dialFailed(dialer)) }
            })
    }

    /// A connection that never became a link. Scripts and a relay's log are
    /// told of each; a person at a terminal only of a `--peer` address they
    /// gave, once until it links (its redials, and peers that discovery found,
    /// are counted in /stats, not printed into the chat).
    func linkFailed(_ address: String, dialer: LinkTable.DialerID?, error: String) {
        guard windows != nil else { return log.warning("link to \(address) failed: \(error)") }
        guard let dialer, let d = table.dialers[dialer], !d.discovered, !d.oneShot, unlinkedPeerAddresses.insert(d.address).inserted else { return }
        emit(.chatLines(["-- cannot link to \(TerminalText.sanitize(d.address)) (--peer): \(TerminalText.sanitize(error)); trying again in the background"]))
    }

    func opened(_ c: WebSocketConnection, dialer: LinkTable.DialerID?) {
        let blocked = self.blocked
        // Never a link, so its close is not reported: the dialler tries again.
        func refuse(_ code: CloseCode, _ reason: String) {
            c.close(code: code, reason: reason)
            if let dialer { feed(.dialFailed(dialer)) }
        }
        // Both ends required a subprotocol we offered, so this only fails on a bug.
        guard let terms = LinkTerms(subprotocol: c.subprotocol), linkCiphers.contains(terms.cipher) else {
            return refuse(.protocolError, "no link version agreed")
        }
        let version = terms.version
        let session: LinkSession
        do {
            session = try LinkSession(
                initiator: dialer != nil, identity: node.identity, networkKey: node.network, now: monotonic(),
                expectedRemote: table.expectedRemote(of: dialer), isBlocked: { blocked.contains($0) }, nick: node.nick ?? ownHistory.pendingNick ?? presence.nick, version: version,
                cipher: terms.cipher)
        } catch {
            log.warning("cannot start the link handshake with \(c.remoteAddress): \(error)")
            return refuse(.internalError, "cannot start the link handshake")
        }
        let id = nextLink
        nextLink += 1
        links[id] = Link(connection: c)
        linkOf[ObjectIdentifier(c)] = id
        feed(.opened(id, dialer: dialer, session: session, version: version, address: c.remoteAddress))
    }

    // MARK: discovery

    func startDiscovery(_ configuration: DiscoveryService.Configuration, listening: Bool) {
        do {
            let service = try DiscoveryService(
                configuration: configuration, signer: node.identity, network: node.network,
                linkPort: listening ? listenPort : 0, loop: loop,
                onEvent: { [self] action in discovered(action) })
            // Before the loop starts (`start` calls this first): nothing else touches it yet.
            try service.start()
            discovery = service
        } catch {
            // Discovery is a convenience: without it, --peer links still work.
            printError("LAN discovery is off: \(error)")
        }
    }

    private func discovered(_ action: DiscoveryCore.Action) {
        switch action {
        case let .found(peer, host, port):
            guard !blocked.contains(peer) else { return }
            feed(.found(peer, host: host, port: port, listening: listenPort != 0))
        case let .expired(peer):
            feed(.expired(peer))
        case .send:
            break
        }
    }

    // MARK: limits

    /// `--max-per-address`, `--push-rate`, `--max-links` and `--link-cipher` (already checked by the parser).
    func applyLimits(_ options: Options) {
        if options.linkCipher == CommandLineSpec.chaChaPolyOnly { linkCiphers = [.chaChaPoly] }
        if let limit = options.maxPerAddress.flatMap({ Int($0) }) { maximumConnectionsPerAddress = limit }
        if let rate = options.pushRate.flatMap({ Double($0) }) { core.limitPushes(perSecond: rate) }
        var overlay = Overlay.Configuration()
        if relay {
            overlay.maximumLinks = Overlay.relayLinks
            overlay.maximumPinned = Overlay.relayPinned
        }
        if let links = options.maxLinks.flatMap({ Int($0) }) { overlay.maximumLinks = links }
        core.configureOverlay(overlay, random: SystemRandomNumberGenerator())
    }

    // MARK: presence (`Presence`)

    /// Ours, when due, to every link (at each tick).
    func sendPresence(now: Double) {
        if let beacon = presence.ours(now: now, wall: Node.now()) { feed(.presence([beacon], to: .all)) }
    }

    /// `/away REASON`, `/back`, `/quit REASON`: ours changes and goes out now.
    func setPresence(_ state: PresenceBeacon.State, reason: String) {
        if let beacon = presence.set(state, reason: reason, now: monotonic(), wall: Node.now()) { feed(.presence([beacon], to: .all)) }
    }

    /// A beacon a link brought: checked, passed on to every other link, and
    /// said (a `presence` event; a line at the terminal when someone quit with a reason).
    func presenceArrived(_ beacon: PresenceBeacon, from link: LinkID) {
        let arrival = presence.arrived(beacon, from: link, now: monotonic(), wall: Node.now())
        if arrival.dropped { count(.presenceDropped) }
        if arrival.repeated { count(.presenceRepeated) }
        if let next = arrival.passOn { feed(.presence([next], to: .allBut(link))) }
        guard !relay, arrival.changed, !blocked.contains(beacon.device) else { return }
        let account = node.people.account(beacon.device)
        guard account != node.account else { return }
        emit(.presence(node.people[account], device: beacon.device, beacon: beacon))
    }
}
