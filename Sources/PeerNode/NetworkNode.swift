import ChatText
import CMalloc
import Crypto
import Discovery
import Foundation
import Gossip
import NodeCore
import NetworkText
import Store
import Reactor
import WebSocket

/// The networked node: links (WebSocket + Noise), replication, and what the
/// user sees. Everything here runs on one event-loop thread (WebSocket
/// callbacks, ticks, and stdin lines are all handed to that loop), which is
/// what makes the unchecked `Sendable` sound.
final class NetworkNode: @unchecked Sendable {
    /// What the shell keeps of one open connection; its session, who it
    /// carries and its dialler are the core's (`core`).
    struct Link {
        let connection: WebSocketConnection
        /// Round-trip time, from WebSocket pings.
        var probe = RoundTripProbe()
        /// Stored envelopes still to send, paced by the socket (`pumpCatchUp`).
        var catchUp = CatchUpQueue()
        /// Chunk asks from the peer still to answer, paced by the socket (`pumpFiles`).
        var fileWants: [(root: [UInt8], chunks: [UInt64])] = []
    }

    /// Bytes that may wait unsent on one link before its peer counts as not
    /// reading and the link is closed. Catch-up is paced (`CatchUpQueue.window`, 1 MiB), so
    /// this is about live pushes only.
    static let linkSendQueue = 8 << 20

    /// Seconds between two runs of `tick`.
    static let tickInterval = 1.0
    /// Default listen address (the contract).
    static let defaultListen = "0.0.0.0:7733"
    /// Largest WebSocket message on a link: one Noise message.
    static let maximumLinkMessage = 65_535

    let node: Node
    let loop: EventLoop
    /// Where what happens is shown: the terminal, `--json`, or a relay's log.
    let presenter: any Presenter
    let session: ChatSession
    /// The links' sessions, who each carries, the diallers, the tie-break,
    /// backoff, replication and counters (pure; this class does its effects).
    var core: LinkCore
    var replicator: Replicator { core.replicator }
    var table: LinkTable { core.table }
    /// What happened: refusals and failures by reason, clock messages by
    /// kind and their bytes (`/stats` shows them).
    var counters: Counters { core.counters }
    var links: [LinkID: Link] = [:]
    var linkOf: [ObjectIdentifier: LinkID] = [:]
    var nextLink = 1
    var lastShown: Int64
    /// `--peer` addresses whose failure the terminal has said (`linkFailed`), until they link.
    var unlinkedPeerAddresses: Set<String> = []
    /// At a terminal: its windows (`TerminalWindows`). The person reads what is shown in the open window: its read
    /// mark follows (its unread count in `/rooms` and on the page stays 0). Scripts and the page say what they read.
    var windows: TerminalWindows?
    /// `--json`: `/history`, `/search`, `/mentions` and `/rooms` answer as events (`ScriptAnswer`), not chat lines.
    var answersScripts = false
    /// What the person typed that waits for their answer before anything goes.
    enum Held {
        /// A multi-line paste (`pasted`): y sends its lines.
        case paste([String])
        /// A line that is only files' paths, as a terminal pastes files dropped on it (`droppedFile`).
        case drop(paths: [String], line: String)
    }
    var held: Held?
    var caughtUp = false  // once said (`NodeEvent.caughtUp`): what is shown after is live
    /// Which links a person is told of (`LinkLines`; scripts and a relay's log are told of all).
    var linkLines = LinkLines()
    var server: WebSocketServer?
    var discovery: DiscoveryService?
    private(set) var listenAddress = ""
    /// The port links are accepted on (0: none), as discovery announces it.
    private(set) var listenPort: UInt16 = 0
    /// Read by link handshakes (possibly on another thread), changed by /block.
    let blocked = BlockList()
    /// Receipts owed, and how far our own messages have got (pure).
    let receipts: Receipts
    var syncProgress = SyncProgress()
    /// Rooms with news since the person last had them open (the act list).
    var activity = Activity()
    /// Who is typing where, and when ours last went (`Units/Typing`).
    let typing: Typing
    /// Who is online network-wide, and what ours says (`Units/Presence`).
    let presence: Presence
    /// Room names in `/rooms` order (the act list's numbers), read again
    /// from the store when `roomOrderStale` and the act list is not empty.
    var roomOrder: [String] = []
    var roomOrderStale = true
    /// When a link last brought bytes, and when background work last ran (monotonic seconds).
    var lastLinkTraffic = 0.0
    var lastBackgroundWork = 0.0
    var lastMemoryTrim = 0.0
    var lastRoomRotationCheck = 0.0
    /// Rooms that needed a new key from our account at the last check (`rekeyRooms`).
    var rekeyNeededAtLastCheck: Set<RoomID> = []
    /// Discovery as started (`/device add` announces on the same group), and the code offered, while one is.
    var discoveryConfiguration: DiscoveryService.Configuration?
    private(set) lazy var deviceAdd = DeviceAddService(loop: loop)
    /// The newest of our own envelopes sent on the links (`flushOwn`).
    var sentOwnUpTo: UInt64 = 0
    /// When the next purge may run (monotonic seconds).
    var nextErasurePurge = 0.0
    /// `--max-per-address`: connections accepted at once from one IP address.
    var maximumConnectionsPerAddress = WebSocketServer.Configuration.defaultMaximumConnectionsPerAddress
    /// The link ciphers offered and accepted, preferred first: AES-256-GCM
    /// where this CPU runs it, then ChaCha20-Poly1305 (`--link-cipher`).
    var linkCiphers = NoiseCipher.linkPreference
    /// Whether a post of ours may go now, and the startup nick that waits
    /// until it may: this identity may have posted before from a database
    /// that is gone (pure; `NetworkNode+Sync.swift` feeds it).
    var ownHistory: OwnHistoryGate
    /// Per-peer clocks not written yet, and when they last were (`savePeerClocks`).
    var unsavedPeerClocks: [PublicKey: PeerClocks] = [:]
    /// Relay: the server of `/healthz` and `/metrics`, and whether its samples name peers.
    var metricsServer: WebSocketServer?
    var metricsPeerLabels = false
    /// Peers whose clocks were written within `peerClockSaveInterval`, and when.
    var peerClockSavedAt: [PublicKey: Double] = [:]
    /// Told the prompt when it changes on a tick (the terminal session).
    var promptChanged: (@Sendable (String) -> Void)?
    private var lastPrompt = ""
    let log: Logger
    /// A relay shows nothing and logs instead (see `NetworkNode+Relay.swift`).
    let relay: Bool
    /// Relay: the database size at which envelopes from others are refused.
    var maximumStore: UInt64?
    /// `--auto-get`: files offered by others up to its size are fetched by themselves, within its hour's budget.
    var autoGet: AutoGetBudget?
    var storeFull = false
    let started = ProcessInfo.processInfo.systemUptime
    /// The last fsync of our own envelopes failed (`syncOwn`), and was said.
    var ownSyncFailing = false

    /// `pendingNick`: a nick from the command line that waits until a post may go.
    /// `sendsReadReceipts`: read receipts go out (a person looks at a terminal, unless `/set receipts off`).
    init(node: Node, room: RoomName, presenter: any Presenter, log: Logger, relay: Bool = false,
         pendingNick: String? = nil, sendsReadReceipts: Bool = false) throws {
        self.node = node
        self.presenter = presenter
        self.log = log
        self.relay = relay
        loop = try EventLoop()
        session = try ChatSession(node: node, room: room)
        core = LinkCore(me: node.me, clock: try node.store.vectorClock(), random: SystemRandomNumberGenerator())
        lastShown = node.store.lastDeliveryNumber
        // A relay shows nothing (`showDeliveries`), so it holds no deliveries to show.
        if relay { node.store.holdsRecentDeliveries = false }
        // Nor does it read a message by its id: it keeps no index of them (a node makes it again).
        do {
            // Where the index changed (once), the memory the pass took is handed back before the links come.
            if try node.store.indexesMessageIDs(!relay) { _ = malloc_trim(0) }
        } catch {
            // Not needed to run (a lookup by id scans without it): said, not fatal.
            node.storeFailures.failed("indexing messages by id", error)
        }
        receipts = Receipts(me: node.me, sendsRead: sendsReadReceipts, repository: .init(store: node.store), envelopes: node, poster: node,
                            failures: node.storeFailures)
        typing = Typing(identity: node.identity)
        presence = Presence(identity: node.identity, relay: relay)
        ownHistory = OwnHistoryGate(pendingNick: pendingNick, machineStoppedAt: node.ownDurability.unsure ? started : nil)
        blocked.set(try node.store.blockedIdentities())
        core.stopwatch = { monotonicNow() }
        // A batch forwarded to many links (a relay's fan-out) is sealed on every core.
        if SignatureCheck.cores > 1 { core.inParallel = (SignatureCheck.cores, { count, job in DispatchQueue.concurrentPerform(iterations: count, execute: job) }) }
        loop.turnEnded = { [unowned self] woke, flushed in
            // Ours signed in the turn (a receipt, a membership change) are on the disk before the next;
            // a post whose row follows the loop's wait (`sendOwn`) is written then, with the rest.
            if !ownRowAfterWait, node.store.ownUnsynced || node.ownIntent.pending != nil { syncOwn() }
            guard storedThisTurn else { return }
            storedThisTurn = false
            core.stages.record(.turn, flushed - woke)
        }
        node.postingGate = { [weak self] in
            guard let self else { return }
            try ensureOwnHistoryIsBack()
            // What we sign ourselves is no proof of anyone's claim.
            ownHistory.signing(replicator.clock[node.me] + 1)
        }
    }

    // MARK: start

    func start(listen: String?, peers: [String], discovery: DiscoveryService.Configuration? = nil) throws {
        discoveryConfiguration = discovery
        let wanted = listen ?? Self.defaultListen
        guard let (host, port) = PeerAddress.split(hostPort: wanted) else { throw NodeError.badAddress(option: "--listen", needs: "HOST:PORT", got: wanted) }
        var configuration = WebSocketServer.Configuration(
            paths: ["/peernode/1"], subprotocols: LinkTerms.subprotocols(ciphers: linkCiphers), requireSubprotocol: true,
            limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, maximumSendQueue: Self.linkSendQueue, acceptsText: false))
        // Runs on the loop, as everything here does.
        configuration.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        configuration.onRefused = { @Sendable [self] _ in count(.tooManyConnectionsFromAddress) }
        let server = WebSocketServer(
            loop: loop,
            configuration: configuration,
            callbacks: callbacks(dialer: nil))
        do {
            let bound = try server.listen(host: host, port: port)
            listenAddress = "\(host):\(bound)"
            listenPort = UInt16(bound)
            core.listens(on: listenPort)
            self.server = server
        } catch {
            // The default port taken (a second node on this machine) is not fatal.
            if listen != nil { throw NodeError.cannotBind(serving: "listen", address: wanted, reason: "\(error)") }
            log.warning("not accepting links (\(wanted): \(error)): this node dials its peers but none can dial it; another node on this machine may hold the port: start this one with --listen 0.0.0.0:\(port &+ 1)")
        }
        for peer in peers {
            guard let (h, p) = PeerAddress.parse(peerURL: peer) else { throw NodeError.badAddress(option: "--peer", needs: "ws://HOST:PORT", got: peer) }
            core.addPeer(host: h, port: p)
        }
        if let discovery { startDiscovery(discovery, listening: self.server != nil) }
        loop.start()
        loop.execute { [self] in
            if !relay {
                emit(.greeting(session.greeting()))
                lastShown = node.store.lastDeliveryNumber
            }
            sentOwnUpTo = node.store.contiguous(of: node.me)
            // What a sealing cut short by the last stop left goes; fetches it cut short go on.
            resumeFiles()
            emit(.ready(id: node.me, nick: node.nick, listen: listenAddress))
            // A revocation signed while the node was down (`peernode device revoke`) still gets its new keys.
            conversationKeysChanged()
            tick()
            // Timeouts, clock exchanges, receipts and redials, once a second.
            loop.every(Self.tickInterval) { [self] in tick() }
        }
    }

    func receive(_ bytes: [UInt8], on id: LinkID) {
        lastLinkTraffic = monotonic()
        let handed = monotonicNow()
        core.stages.record(.receive, handed - max(loop.wokeAt, lastReceiveDone))
        feed(.received(id, bytes))
        lastReceiveDone = monotonicNow()
    }

    /// Hands the core an event and does what it decided. An event that
    /// comes while effects are being done (a link up starts replication, a
    /// batch stored at once answers) waits until they all are: effects may
    /// carry bytes already sealed for a link, and a Noise transport must see
    /// its messages in the order they were sealed.
    func feed(_ input: LinkCore.Input) {
        inputs.append(input)
        guard !feeding else { return }
        feeding = true
        var next = 0
        while next < inputs.count {
            let input = inputs[next]
            next += 1
            perform(core.handle(input, now: monotonic()))
        }
        inputs.removeAll(keepingCapacity: true)
        feeding = false
        // Catch-up reads as the socket takes what it sent, so it runs once
        // nothing else waits (`queueCatchUp`).
        let due = catchUpDue
        catchUpDue = []
        for id in due.sorted() { pumpCatchUp(id) }
    }

    /// When the last link message was done with (`receive`'s stage starts
    /// at the later of this and the loop's wake).
    private var lastReceiveDone = 0.0
    /// A batch was stored this loop turn: the turn is timed (`StageTimes.Stage.turn`).
    var storedThisTurn = false
    /// Our post was sent and its row, fsync and line wait for the loop's next wake (`sendOwn`).
    var ownRowAfterWait = false
    /// Once-a-second turns run (`tick`), for `/stats`: the node's own clock.
    var ticksRun = 0

    /// Inputs waiting for the effects being done (`feed`).
    private var inputs: [LinkCore.Input] = []
    private(set) var feeding = false
    /// Links with catch-up queued while effects were being done.
    var catchUpDue: Set<LinkID> = []

    /// Does what the core decided.
    func perform(_ effects: [LinkCore.Effect]) {
        for effect in effects {
            switch effect {
            case let .transmit(id, bytes):
                links[id]?.connection.send(.binary(bytes))
            case let .close(id, closing, reason):
                links[id]?.connection.close(code: closing == .normal ? .normal : .policyViolation, reason: reason)
            case let .dial(d, host, port):
                dial(d, host: host, port: port)
            case let .up(id, remote, announce, nick):
                linkUp(id, remote: remote, announce: announce, nick: nick)
            case let .peerDown(remote, reason):
                discovery?.setLinked(remote, false)
                let event = NodeEvent.peerDown(remote, reason: reason, person: node.people[remote])
                emit(answersScripts || relay ? [event] : linkLines.down(event, remote: remote, reason: reason))
            case let .catchUp(id, author, from, through):
                queueCatchUp(id, author: author, from: from, through: through)
            case let .verifyAndStore(id, batch):
                verifyAndStore(batch, from: id)
            case let .remember(remote, clocks):
                // Saved with the others at most every `peerClockSaveInterval`.
                unsavedPeerClocks[remote] = clocks
            case let .ownStored(sequence, remote):
                emit(receipts.stored(through: sequence, by: remote, shown: presenter.showsReceipts))
            case let .warning(line, reason?):
                log.warning(line, ["reason": reason])
            case let .warning(line, nil):
                log.warning(line)
            case let .typing(notice, from):
                typingArrived(notice, from: from)
            case let .presence(beacon, from):
                presenceArrived(beacon, from: from)
            case let .file(message, from, peer):
                fileArrived(message, from: from, peer: peer)
            }
        }
    }

    /// A link carries `remote` now (`announce`: it was not up just before).
    func linkUp(_ id: LinkID, remote: PublicKey, announce: Bool, nick: String?) {
        guard let link = links[id] else { return }
        let now = monotonic()
        // The first probe waits a second: what a new link does first (the
        // clock exchange, a catch-up) would be timed with it.
        links[id]?.probe.lastProbe = now
        discovery?.setLinked(remote, true)
        for d in table.dialers.values where d.remote == remote { unlinkedPeerAddresses.remove(d.address) }
        // The nick from its messages if we have them, else the one it claimed in the handshake.
        let person = node.people[remote].claiming(nick.map(PeerText.init))
        let older = core.version(of: id).map { linkLines.older(person, node: remote, version: $0) } ?? []
        if announce {
            let event = NodeEvent.peerUp(person, address: link.connection.remoteAddress, node: remote, device: node.devices.name(of: remote),
                                         subprotocol: LinkTerms(subprotocol: link.connection.subprotocol)?.subprotocol ?? "")
            // At the terminal, said with its link line (which waits while the link is not settled).
            emit(answersScripts || relay ? [event] + older : linkLines.up([event] + older, remote: remote, settled: linkView(id, remote: remote).isSettled))
        } else if !older.isEmpty {
            emit(older)
        }
        // What we remember of this peer makes the clock exchange cost what changed.
        feed(.replicate(id, memory: peerClocks(of: remote)))
        // Who is online, as far as we know, ours first.
        feed(.presence(presence.beaconsForNewLink(now: now, wall: Node.now()), to: .only(id)))
    }

    func closed(_ c: WebSocketConnection, reason: PeerText) {
        guard let id = linkOf.removeValue(forKey: ObjectIdentifier(c)), links.removeValue(forKey: id) != nil else { return }
        feed(.closed(id, reason: reason))
        presence.linkDown(id)
        // What it was asked for goes to the other links.
        node.files.waitingAsks.dropped(id)
        if !node.files.fetch.roots.isEmpty { assignFiles(node.files.fetch.linkDown(id, links: fileLinks, now: monotonic())) }
    }

    func dial(_ d: LinkTable.DialerID, host: String, port: UInt16) {
        do {
            _ = try WebSocketClient.connect(
                host: host, port: port, path: "/peernode/1",
                configuration: .init(subprotocols: LinkTerms.subprotocols(ciphers: linkCiphers), requireSubprotocol: true,
                                     limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, maximumSendQueue: Self.linkSendQueue, acceptsText: false)),
                callbacks: callbacks(dialer: d), loop: loop)
        } catch {
            feed(.dialFailed(d))
        }
    }

    /// Verification runs off the loop thread, one batch after another (so
    /// batches are stored in the order they came), while the loop goes on
    /// reading, storing and showing: the two overlap on a two-core machine.
    /// A small batch with nothing ahead of it in the verifier (live traffic)
    /// is verified on the loop thread: two thread hops cost more than it does.
    let verifier = DispatchQueue(label: "peernode.verify")
    let verifyPipe = VerifyPipe()  // what waits for the verifier: all of it verified together (`drainVerifyPipe`)
    let fileWorker = DispatchQueue(label: NetworkNode.fileWorkerLabel)  // files' chunks written and opened (NetworkNode+Files)
    /// Files sealed for `/send`, and files opened into their folders or their held chunks read back for `/get`
    /// (seconds for a large one): queues of the node's own, each given a thread when it has work, never
    /// waiting for a place in the shared pool (`DispatchQueue.global()`) behind whatever else holds it.
    let fileSealer = DispatchQueue(label: "peernode.files.seal")
    let fileOpener = DispatchQueue(label: "peernode.files.open")
    var batchesVerifying = 0
    static let inlineVerifyLimit = 8
    /// Batches back from the verifier, not yet stored: those that came back
    /// while the loop was busy are stored together, in one transaction
    /// (`storeVerified`), up to `maximumVerifiedPerStore` envelopes.
    var verifiedWaiting: [VerifiedBatch] = []
    /// A batch back from the verifier: the link it came on, its envelopes, and whether each verified.
    typealias VerifiedBatch = (link: LinkID, envelopes: [CarriedEnvelope], valid: [Bool])
    static let maximumVerifiedPerStore = 1_024
    /// A relay's verified batches waiting for their transaction.
    var commitGroup = RelayCommitGroup()
    /// Batches that arrived this turn, verified and stored at its end (`storeArrivals`).
    var arrivals: [(LinkID, [CarriedEnvelope])] = []
    lazy var turnEnd = TurnEnd { [unowned self] in storeArrivals() }

    /// What the loop runs at the end of a turn, once scheduled (`EventLoop.scheduleFlush`).
    final class TurnEnd: Flushable {
        var scheduled = false
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
        func flush() { body() }
    }

    /// Seconds a stopping node waits for its links to finish closing.
    static let closeGrace = 2.0
    private var stopping = false
    /// Run once when the node stops, before its links close (the API's clients are told).
    var onStop: [() -> Void] = []
    /// Run at the end of each once-a-second turn (`tick`): a service's own
    /// periodic look rides on it instead of waking the node at times of its own.
    var onTick: [() -> Void] = []

    /// Stops (on the loop): no new links, discovery silent, every link
    /// closed cleanly (1001). Once they have finished closing (at most
    /// `closeGrace`), the peer clocks are saved and the WAL folded into the
    /// database file; then `done` runs.
    func stop(then done: @escaping @Sendable () -> Void) {
        // A second signal while stopping changes nothing.
        guard !stopping else { return }
        stopping = true
        // A post's row, or what was shown and waits for its store, is written before anything closes.
        loop.settle()
        // What a relay holds for its next commit is stored, and its links told, before they close.
        storeAllHeld()
        server?.stop()
        server = nil
        metricsServer?.stop()
        metricsServer = nil
        discovery?.stop()
        for hook in onStop { hook() }
        onStop = []
        for link in links.values { link.connection.close(code: .goingAway, reason: "node quitting") }
        let deadline = monotonic() + Self.closeGrace
        var waiting: TimerID?
        let finish = { [self] in
            guard links.isEmpty || monotonic() >= deadline else { return }
            if let waiting { loop.cancel(waiting) }
            waiting = nil
            savePeerClocks(now: monotonic(), force: true)
            syncOwn()
            do { try node.ownDurability.recordCleanStop() } catch { log.warning("recording the clean stop failed: \(error)") }
            node.store.checkpointForExit()
            done()
        }
        guard !links.isEmpty else { return finish() }
        waiting = loop.every(0.01, finish)
    }

    /// A store read whose failure must not stop what asked for it (a tick,
    /// a status line, an answer already given): the failure is logged with
    /// `what`, and nil returned.
    func readLogged<T>(_ what: String, _ body: () throws -> T) -> T? {
        do { return try body() } catch {
            // Counted and said with the next output (`emit`), which logs it too.
            node.storeFailures.failed("reading \(what)", error)
            return nil
        }
    }

    /// Hands events to the presenter, as one batch.
    func emit(_ events: NodeEvent...) { emit(events) }

    func emit(_ events: [NodeEvent]) {
        // A store failure that a path which cannot throw met is said with the next output (`StoreFailures`).
        var events = events
        if let failure = node.storeFailures.take() {
            // In --json the error event is the script's and the log the operator's (a relay has only its
            // log); at a terminal, or a pipe read as text, both reach the same person: the words once.
            if answersScripts || relay { log.warning(failure) }
            events.insert(.failed(failure), at: 0)
        }
        // What a private-room change said on the side (who could not be invited).
        for notice in node.privateRooms.takeNotices() { events.append(.failed(notice)) }
        guard !events.isEmpty else { return }
        presenter.present(events)
    }

    func monotonic() -> Double { ProcessInfo.processInfo.systemUptime }

    /// At a terminal: the prompt again if it changed (each tick, and as
    /// soon as the act list may have).
    func refreshPrompt() {
        guard let promptChanged else { return }
        // The room list is read again only while the act list has something to number.
        if roomOrderStale, !activity.unseen.isEmpty, let order = readLogged("the room list", { try windowOrder() }) {
            roomOrder = order
            roomOrderStale = false
        }
        if let windows, windows.completerStale { windows.completerChanged(completer()) }
        let current = prompt()
        if current != lastPrompt {
            lastPrompt = current
            promptChanged(current)
        }
    }
}
