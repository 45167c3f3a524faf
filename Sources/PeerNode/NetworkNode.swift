import CMalloc
import Crypto
import Discovery
import Foundation
import Gossip
import NodeCore
import NetworkText
import Store
import WebSocket

/// The networked node: links (WebSocket + Noise), replication, and what the
/// user sees. Everything here runs on one event-loop thread (WebSocket
/// callbacks, ticks, and stdin lines are all handed to that loop), which is
/// what makes the unchecked `Sendable` sound.
final class NetworkNode: @unchecked Sendable {
    struct Link {
        let connection: WebSocketConnection
        var session: LinkSession
        /// The version agreed in the WebSocket handshake.
        let version: LinkProtocol
        var chunker = GossipChunker()
        var remote: PublicKey?
        let dialed: Bool
        let dialer: Int?
        /// When the handshake finished (monotonic seconds).
        var since: Double?
        /// Smoothed round-trip time (seconds), from WebSocket pings.
        var roundTrip: Double?
        /// The probe in flight: its number (the ping's payload) and when it left.
        var probe: (number: UInt32, sentAt: Double)?
        var lastProbe = 0.0
        /// Stored envelopes still to send, paced by the socket (`pumpCatchUp`).
        var catchUp: [CatchUpRange] = []
    }

    struct Dialer {
        var host: String
        var port: UInt16
        var attempt = 0
        var nextTry = 0.0
        var connecting = false
        /// Learned at the first handshake (or known from discovery): lets a
        /// redial be skipped while linked, and refuses anyone else.
        var remote: PublicKey?
        /// Made for a peer that discovery found; retired when it expires.
        var discovered = false
        var retired = false
    }

    /// Bytes that may wait unsent on one link before its peer counts as not
    /// reading and the link is closed. Catch-up is paced (1 MiB window), so
    /// this is about live pushes only.
    static let linkSendQueue = 8 << 20

    /// Reconnect backoff: 0.5 s doubling up to 30 s, with ±25 % jitter.
    static let backoffBase = 0.5
    static let backoffCap = 30.0
    /// Default listen address (the contract).
    static let defaultListen = "0.0.0.0:7733"
    /// Largest WebSocket message on a link: one Noise message.
    static let maximumLinkMessage = 65_535

    let node: Node
    let loop: EventLoop
    let out: Output
    let json: Bool
    let session: ChatSession
    var replicator: Replicator
    var links: [LinkID: Link] = [:]
    private var linkOf: [ObjectIdentifier: LinkID] = [:]
    private var nextLink = 1
    var dialers: [Dialer] = []
    var lastShown: Int64
    var server: WebSocketServer?
    var discovery: DiscoveryService?
    private(set) var listenAddress = ""
    /// The port links are accepted on (0: none), as discovery announces it.
    private(set) var listenPort: UInt16 = 0
    /// What happened, by name: refusals and failures by reason, clock
    /// messages by kind and their bytes (`/stats` shows them).
    var counters: [String: Int] = [:]
    private var random = SystemRandomNumberGenerator()
    /// Read by link handshakes (possibly on another thread), changed by /block.
    let blocked = BlockList()
    /// Peers whose link the other side closed as a duplicate: their other
    /// link is on its way, so `peer_down` waits until this deadline.
    private var pendingDown: [PublicKey: Double] = [:]
    static let duplicateGrace = 5.0
    static let duplicateReason = "duplicate link"

    /// Receipts to send: room → state → author → highest sequence delivered/read.
    var receiptsOwed: [RoomID: [Receipt.State: [PublicKey: UInt64]]] = [:]
    var lastReceiptSent: [RoomID: Double] = [:]
    /// What peers acknowledged of our messages, per peer, room and state: the highest sequence.
    var acknowledged: [Acknowledgement: UInt64] = [:]
    struct Acknowledgement: Hashable {
        let peer: PublicKey
        let room: RoomID
        let state: Receipt.State
    }
    var syncProgress = SyncProgress()
    /// When a link last brought bytes, and when background work last ran (monotonic seconds).
    var lastLinkTraffic = 0.0
    var lastBackgroundWork = 0.0
    /// Links quiet this long: background work may run.
    static let quietPeriod = 0.25
    /// Background work runs at least this often, however busy the links.
    static let backgroundDeferral = 10.0
    /// Freed memory goes back to the system at most this often, when quiet.
    static let memoryTrimInterval = 30.0
    var lastMemoryTrim = 0.0
    /// Our own messages up to here are stored by at least one peer.
    var storedThrough: UInt64 = 0
    /// The sequence of our last text or action per room (for the prompt's mark).
    var lastOwnPost: [RoomName: UInt64] = [:]
    /// `--max-per-address`: connections accepted at once from one IP address.
    var maximumConnectionsPerAddress = WebSocketServer.Configuration.defaultMaximumConnectionsPerAddress
    /// A nick from the command line not yet posted: this identity may have
    /// posted before from a database that is gone, so it waits until a
    /// linked peer's clock shows our history is back (or the user posts).
    var pendingNick: String?
    /// Whether peers' claims to hold more of our messages than we do are
    /// borne out (`NetworkNode+Sync.swift`).
    var ownClaimsWatch = OwnHistoryClaims()
    /// Addresses where a dial for a discovered peer reached another
    /// identity: until when, and who answered (`NetworkNode+Discovery.swift`).
    var misdirected: [String: (until: Double, answered: PublicKey)] = [:]
    /// Per-peer clocks not written yet, and when they last were (`savePeerClocks`).
    var unsavedPeerClocks: [PublicKey: PeerClocks] = [:]
    /// Relay: the server of `/healthz` and `/metrics`, and whether its samples name peers.
    var metricsServer: WebSocketServer?
    var metricsPeerLabels = false
    var lastPeerClockSave = 0.0
    /// Told the prompt when it changes on a tick (the terminal session).
    var promptChanged: (@Sendable (String) -> Void)?
    private var lastPrompt = ""
    /// Read receipts go out only when a person looks (a terminal), unless `/set receipts off`.
    var sendsReadReceipts = false
    let log: Logger
    /// A relay shows nothing and logs instead (see `NetworkNode+Relay.swift`).
    let relay: Bool
    /// Relay: the database size at which envelopes from others are refused.
    var maximumStore: UInt64?
    var storeFull = false
    let started = ProcessInfo.processInfo.systemUptime

    init(node: Node, room: RoomName, json: Bool, out: Output, log: Logger, relay: Bool = false) throws {
        self.node = node
        self.json = json
        self.out = out
        self.log = log
        self.relay = relay
        loop = try EventLoop()
        session = try ChatSession(node: node, room: room)
        replicator = Replicator(me: node.me, clock: try node.store.vectorClock(), random: SystemRandomNumberGenerator())
        lastShown = node.store.lastDeliveryNumber
        blocked.set(try node.store.blockedIdentities())
        node.postingGate = { [weak self] in
            guard let self else { return }
            try ensureOwnHistoryIsBack()
            // What we sign ourselves is no proof of anyone's claim.
            ownClaimsWatch.signing(replicator.clock[node.me] + 1)
        }
    }

    // MARK: start

    /// `--max-per-address` and `--push-rate` (already checked by the parser).
    func applyLimits(_ options: Options) {
        if let limit = options.maxPerAddress.flatMap({ Int($0) }) { maximumConnectionsPerAddress = limit }
        if let rate = options.pushRate.flatMap({ Double($0) }) {
            // The burst stays the same number of seconds of the rate as by default.
            replicator.pushBudget = (burst: rate * Replicator.pushBurst / Replicator.pushRate, perSecond: rate)
            // What a link brings when asked goes no faster: one rate for all it brings.
            replicator.pullBudget = replicator.pushBudget
        }
    }

    func start(listen: String?, peers: [String], discovery: DiscoveryService.Configuration? = nil) throws {
        let wanted = listen ?? Self.defaultListen
        guard let (host, port) = Self.split(hostPort: wanted) else { throw NodeError(description: "--listen needs HOST:PORT, got \(wanted)") }
        var configuration = WebSocketServer.Configuration(
            paths: ["/peernode/1"], subprotocols: LinkProtocol.subprotocols, requireSubprotocol: true,
            limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, maximumSendQueue: Self.linkSendQueue, acceptsText: false))
        // Runs on the loop, as everything here does.
        configuration.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        configuration.onRefused = { @Sendable [self] _ in count("too_many_connections_from_address") }
        let server = WebSocketServer(
            loop: loop,
            configuration: configuration,
            callbacks: callbacks(dialer: nil))
        do {
            let bound = try server.listen(host: host, port: port)
            listenAddress = "\(host):\(bound)"
            listenPort = UInt16(bound)
            self.server = server
        } catch {
            // The default port taken (a second node on this machine) is not fatal.
            if listen != nil { throw NodeError(description: "cannot listen on \(wanted): \(error)") }
            log.warning("not accepting links (\(wanted): \(error))")
        }
        for peer in peers {
            guard let (h, p) = Self.parse(peerURL: peer) else { throw NodeError(description: "--peer needs ws://HOST:PORT, got \(peer)") }
            dialers.append(Dialer(host: h, port: p))
        }
        if let discovery { startDiscovery(discovery, listening: self.server != nil) }
        loop.start()
        loop.execute { [self] in
            if relay {
                // A relay says nothing on stdout; it logs.
            } else if json {
                out.line(JSONEvents.line(["type": .string("ready"), "id": .string(node.me.hex), "nick": .string(node.nick ?? ""), "listen": .string(listenAddress)]))
            } else {
                do { for l in try session.greeting() { out.line(l) } } catch { out.line("error: \(error)") }
                lastShown = node.store.lastDeliveryNumber
            }
            tick()
        }
    }

    // MARK: links

    func callbacks(dialer: Int?) -> WebSocketCallbacks {
        WebSocketCallbacks(
            onOpen: { [self] c in opened(c, dialer: dialer) },
            onMessage: { [self] c, m in
                guard case let .binary(bytes) = m, let id = linkOf[ObjectIdentifier(c)] else { return }
                receive(bytes, on: id)
            },
            onPong: { [self] c, payload in
                if let id = linkOf[ObjectIdentifier(c)] { pongArrived(payload, on: id) }
            },
            onClose: { [self] c, info in closed(c, reason: info.reason) },
            onHandshakeFailure: { [self] c, error in
                count("websocket_handshake_failed")
                log.warning("link to \(c.remoteAddress) failed: \(error)")
                if let dialer { redialLater(dialer) }
            })
    }

    func opened(_ c: WebSocketConnection, dialer: Int?) {
        let expected = dialer.flatMap { dialers[$0].remote }
        let blocked = self.blocked
        // Both ends required a subprotocol we offered, so this only fails on a bug.
        guard let version = LinkProtocol(subprotocol: c.subprotocol) else {
            c.close(code: .protocolError, reason: "no link version agreed")
            return
        }
        guard let session = try? LinkSession(
            initiator: dialer != nil, identity: node.identity, networkKey: node.network, now: monotonic(),
            expectedRemote: expected, isBlocked: { blocked.contains($0) }, nick: node.nick ?? pendingNick, version: version) else {
            c.close(code: .internalError, reason: "cannot start the link handshake")
            return
        }
        let id = nextLink
        nextLink += 1
        links[id] = Link(connection: c, session: session, version: version, remote: nil, dialed: dialer != nil, dialer: dialer)
        linkOf[ObjectIdentifier(c)] = id
        if dialer != nil { apply(links[id]?.session.start() ?? [], on: id) }
    }

    func receive(_ bytes: [UInt8], on id: LinkID) {
        count("bytes_in", by: bytes.count)
        lastLinkTraffic = monotonic()
        guard var link = links[id] else { return }
        let actions = link.session.receive(bytes)
        links[id] = link
        apply(actions, on: id)
    }

    func apply(_ actions: [LinkSession.Action], on id: LinkID) {
        for action in actions {
            guard let link = links[id] else { return }
            switch action {
            case let .send(bytes):
                count("bytes_out", by: bytes.count)
                link.connection.send(.binary(bytes))
            case let .established(remote):
                established(id, remote: remote)
            case let .deliver(chunk):
                guard var l = links[id] else { return }
                do {
                    let whole = try l.chunker.add(chunk)
                    links[id] = l
                    if let whole { gossip(try GossipMessage.decode(whole), from: id) }
                } catch {
                    count("bad_gossip_message")
                    link.connection.close(code: .policyViolation, reason: "bad gossip message: \(error)")
                }
            case let .close(failure):
                count(failure.counterName)
                if case let .unexpectedIdentity(_, got) = failure, let d = link.dialer { misdirectedDial(d, answered: got, now: monotonic()) }
                log.warning("link from \(link.connection.remoteAddress) refused: \(failure)", ["reason": failure.counterName])
                link.connection.close(code: .policyViolation, reason: failure.description)
            }
        }
    }

    func established(_ id: LinkID, remote: PublicKey) {
        guard var link = links[id] else { return }
        // A dialler learns who answers, so it can skip redials while linked.
        if let d = link.dialer {
            dialers[d].remote = remote
            dialers[d].attempt = 0
        }
        // One link per pair: keep the connection dialled by the smaller id.
        var alreadyAnnounced = pendingDown.removeValue(forKey: remote) != nil
        if let (otherID, other) = links.first(where: { $0.key != id && $0.value.remote == remote }) {
            alreadyAnnounced = true
            let dialer = { (l: Link) -> PublicKey in l.dialed ? self.node.me : remote }
            let keepNew = dialer(link) < dialer(other) || (dialer(link) == dialer(other) && id > otherID)
            let loser = keepNew ? otherID : id
            links[loser]?.remote = nil
            replicator.linkDown(loser)
            links[loser]?.connection.close(code: .normal, reason: Self.duplicateReason)
            if !keepNew { return }
        }
        link.remote = remote
        link.since = monotonic()
        links[id] = link
        probeRoundTrip(on: id, now: link.since ?? 0)
        discovery?.setLinked(remote, true)
        if alreadyAnnounced {
            // The peer stays up: only the connection under it changed.
        } else if relay {
            log.info("link up", ["peer": remote.hex, "nick": link.session.remoteNick ?? "", "addr": link.connection.remoteAddress])
        } else {
            // The nick from its messages if we have them, else the one it claimed in the handshake.
            var nicks = node.nicks
            if nicks[remote] == nil, let claimed = link.session.remoteNick { nicks[remote] = PeerText(claimed) }
            if json {
                out.line(JSONEvents.line(["type": .string("peer_up"), "id": .string(remote.hex), "nick": .text(nicks[remote] ?? PeerText("")), "addr": .string(link.connection.remoteAddress)]))
            } else {
                out.line("-- linked to \(Renderer(nicks: nicks).label(remote)) at \(link.connection.remoteAddress)")
            }
        }
        // What we remember of this peer makes the clock exchange cost what changed.
        perform(replicator.linkUp(id, now: monotonic(), memory: peerClocks(of: remote), version: link.version))
    }

    func closed(_ c: WebSocketConnection, reason: PeerText) {
        guard let id = linkOf.removeValue(forKey: ObjectIdentifier(c)), let link = links.removeValue(forKey: id) else { return }
        if let remote = link.remote {
            replicator.linkDown(id)
            if reason.unsanitized == Self.duplicateReason {
                // The peer kept our other link, which is still being set up here.
                if !links.values.contains(where: { $0.remote == remote }) { pendingDown[remote] = monotonic() + Self.duplicateGrace }
            } else if !links.values.contains(where: { $0.remote == remote }) {
                discovery?.setLinked(remote, false)
                if relay {
                    log.info("link down", ["peer": remote.hex, "reason": reason.description])
                } else if json { out.line(JSONEvents.line(["type": .string("peer_down"), "id": .string(remote.hex)])) } else { out.line("-- link to \(remote.shortFingerprint) closed: \(reason)") }
            }
        }
        if let d = link.dialer { redialLater(d) }
    }

    func redialLater(_ d: Int) {
        dialers[d].connecting = false
        let delay = min(Self.backoffCap, Self.backoffBase * pow(2, Double(dialers[d].attempt)))
        dialers[d].attempt = min(dialers[d].attempt + 1, 16)
        dialers[d].nextTry = monotonic() + delay * Double.random(in: 0.75...1.25, using: &random)
    }

    func dial(_ d: Int) {
        if let remote = dialers[d].remote, links.values.contains(where: { $0.remote == remote }) {
            dialers[d].nextTry = monotonic() + Self.backoffCap
            return
        }
        if let until = heldUntil(d, now: monotonic()) {
            dialers[d].nextTry = until
            return
        }
        dialers[d].connecting = true
        do {
            _ = try WebSocketClient.connect(
                host: dialers[d].host, port: dialers[d].port, path: "/peernode/1",
                configuration: .init(subprotocols: LinkProtocol.subprotocols, requireSubprotocol: true,
                                     limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, maximumSendQueue: Self.linkSendQueue, acceptsText: false)),
                callbacks: callbacks(dialer: d), loop: loop)
        } catch {
            redialLater(d)
        }
    }

    /// Verification runs off the loop thread, one batch after another (so
    /// batches are stored in the order they came), while the loop goes on
    /// reading, storing and showing: the two overlap on a two-core machine.
    /// A small batch with nothing ahead of it in the verifier (live traffic)
    /// is verified on the loop thread: two thread hops cost more than it does.
    let verifier = DispatchQueue(label: "peernode.verify")
    var batchesVerifying = 0
    static let inlineVerifyLimit = 8

    func tick() {
        let now = monotonic()
        checkStoreSize()
        // Background work (the search index, receipts: each a write, a receipt
        // also an fsync) waits for a quiet moment on the links, so it does not
        // hold up messages passing through; it waits no longer than
        // `backgroundDeferral`.
        if now - lastLinkTraffic >= Self.quietPeriod || now - lastBackgroundWork >= Self.backgroundDeferral {
            lastBackgroundWork = now
            if !relay { _ = try? node.indexNewMessages() }
            sendReceipts(now: now)
        }
        // After a burst (a catch-up, a flood, a peer that stopped reading) the
        // allocator keeps the freed memory; give it back once things are quiet.
        if now - lastLinkTraffic >= Self.quietPeriod, now - lastMemoryTrim >= Self.memoryTrimInterval {
            lastMemoryTrim = now
            _ = malloc_trim(0)
        }
        if let promptChanged {
            let current = prompt()
            if current != lastPrompt {
                lastPrompt = current
                promptChanged(current)
            }
        }
        for (remote, deadline) in pendingDown where now >= deadline {
            pendingDown[remote] = nil
            if !links.values.contains(where: { $0.remote == remote }) {
                if json { out.line(JSONEvents.line(["type": .string("peer_down"), "id": .string(remote.hex)])) } else { out.line("-- link to \(remote.shortFingerprint) closed") }
            }
        }
        perform(replicator.tick(now: now))
        savePeerClocks(now: now)
        watchOwnClaims(now: now)
        markOwnHistoryKnownIfSafe()
        postPendingNickIfSafe()
        for id in links.keys.sorted() {
            guard var link = links[id] else { continue }
            let actions = link.session.tick(now: now)
            links[id] = link
            apply(actions, on: id)
            if link.remote != nil, now - link.lastProbe >= Self.roundTripProbeInterval { probeRoundTrip(on: id, now: now) }
        }
        for d in dialers.indices where !dialers[d].connecting && !dialers[d].retired && now >= dialers[d].nextTry {
            dial(d)
        }
    }

    /// At a clean exit, after the links closed: the WAL folded into the
    /// database file (on the loop, which owns the store). Waits for it.
    func finishStore() {
        let finished = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            savePeerClocks(now: monotonic(), force: true)
            node.store.checkpointForExit()
            finished.signal()
        }
        _ = finished.wait(timeout: .now() + 10)
    }

    /// Closes every link cleanly (1001).
    func closeAll() {
        for link in links.values { link.connection.close(code: .goingAway, reason: "node quitting") }
    }

    func monotonic() -> Double { ProcessInfo.processInfo.systemUptime }
}
