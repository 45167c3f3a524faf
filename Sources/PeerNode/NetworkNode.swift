import Crypto
import Discovery
import Foundation
import Gossip
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
        var chunker = GossipChunker()
        var remote: PublicKey?
        let dialed: Bool
        let dialer: Int?
        /// When the handshake finished (monotonic seconds).
        var since: Double?
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

    /// Reconnect backoff: 0.5 s doubling up to 30 s, with ±25 % jitter.
    static let backoffBase = 0.5
    static let backoffCap = 30.0
    /// Default listen address (the issue's contract).
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
    private var lastShown: Int64
    var server: WebSocketServer?
    var discovery: DiscoveryService?
    private(set) var listenAddress = ""
    /// The port links are accepted on (0: none), as discovery announces it.
    private(set) var listenPort: UInt16 = 0
    /// What happened, by name: refusals and failures by reason, clock
    /// messages by kind and their bytes (`/stats` shows them).
    private(set) var counters: [String: Int] = [:]
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
    /// Our own messages up to here are stored by at least one peer.
    var storedThrough: UInt64 = 0
    /// The sequence of our last text or action per room (for the prompt's mark).
    var lastOwnPost: [RoomName: UInt64] = [:]
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
    }

    // MARK: start

    func start(listen: String?, peers: [String], discovery: DiscoveryService.Configuration? = nil) throws {
        let wanted = listen ?? Self.defaultListen
        guard let (host, port) = Self.split(hostPort: wanted) else { throw NodeError(description: "--listen needs HOST:PORT, got \(wanted)") }
        var handler: (@Sendable (HTTPRequest) -> HTTPResponse?)?
        if relay {
            handler = { @Sendable [self] request in self.http(request) }
        }
        let server = WebSocketServer(
            loop: loop,
            configuration: .init(paths: ["/peernode/1"], subprotocols: ["peernode.1"], requireSubprotocol: true,
                                 limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, acceptsText: false)),
            callbacks: callbacks(dialer: nil),
            httpHandler: handler)
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

    private func callbacks(dialer: Int?) -> WebSocketCallbacks {
        WebSocketCallbacks(
            onOpen: { [self] c in opened(c, dialer: dialer) },
            onMessage: { [self] c, m in
                guard case let .binary(bytes) = m, let id = linkOf[ObjectIdentifier(c)] else { return }
                receive(bytes, on: id)
            },
            onClose: { [self] c, info in closed(c, reason: info.reason) },
            onHandshakeFailure: { [self] c, error in
                count("websocket_handshake_failed")
                log.warning("link to \(c.remoteAddress) failed: \(error)")
                if let dialer { redialLater(dialer, after: "\(error)") }
            })
    }

    private func opened(_ c: WebSocketConnection, dialer: Int?) {
        let expected = dialer.flatMap { dialers[$0].remote }
        let blocked = self.blocked
        guard let session = try? LinkSession(
            initiator: dialer != nil, identity: node.identity, networkKey: node.network, now: monotonic(),
            expectedRemote: expected, isBlocked: { blocked.contains($0) }, nick: node.nick) else {
            c.close(code: .internalError, reason: "cannot start the link handshake")
            return
        }
        let id = nextLink
        nextLink += 1
        links[id] = Link(connection: c, session: session, remote: nil, dialed: dialer != nil, dialer: dialer)
        linkOf[ObjectIdentifier(c)] = id
        if dialer != nil { apply(links[id]?.session.start() ?? [], on: id) }
    }

    private func receive(_ bytes: [UInt8], on id: LinkID) {
        count("bytes_in", by: bytes.count)
        lastLinkTraffic = monotonic()
        guard var link = links[id] else { return }
        let actions = link.session.receive(bytes)
        links[id] = link
        apply(actions, on: id)
    }

    private func apply(_ actions: [LinkSession.Action], on id: LinkID) {
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
                log.warning("link from \(link.connection.remoteAddress) refused: \(failure)", ["reason": failure.counterName])
                link.connection.close(code: .policyViolation, reason: failure.description)
            }
        }
    }

    private func established(_ id: LinkID, remote: PublicKey) {
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
        discovery?.setLinked(remote, true)
        if alreadyAnnounced {
            // The peer stays up: only the connection under it changed.
        } else if relay {
            log.info("link up", ["peer": remote.hex, "nick": link.session.remoteNick ?? "", "addr": link.connection.remoteAddress])
        } else {
            // The nick from its messages if we have them, else the one it claimed in the handshake.
            var nicks = node.nicks
            if nicks[remote] == nil, let claimed = link.session.remoteNick { nicks[remote] = claimed }
            if json {
                out.line(JSONEvents.line(["type": .string("peer_up"), "id": .string(remote.hex), "nick": .string(nicks[remote] ?? ""), "addr": .string(link.connection.remoteAddress)]))
            } else {
                out.line("-- linked to \(Renderer(nicks: nicks).label(remote)) at \(link.connection.remoteAddress)")
            }
        }
        // What we remember of this peer makes the clock exchange cost what changed.
        let memory = (try? node.store.peerClocks(of: remote)) ?? nil
        perform(replicator.linkUp(id, now: monotonic(), memory: memory))
    }

    private func closed(_ c: WebSocketConnection, reason: String) {
        guard let id = linkOf.removeValue(forKey: ObjectIdentifier(c)), let link = links.removeValue(forKey: id) else { return }
        if let remote = link.remote {
            replicator.linkDown(id)
            if reason == Self.duplicateReason {
                // The peer kept our other link, which is still being set up here.
                if !links.values.contains(where: { $0.remote == remote }) { pendingDown[remote] = monotonic() + Self.duplicateGrace }
            } else if !links.values.contains(where: { $0.remote == remote }) {
                discovery?.setLinked(remote, false)
                if relay {
                    log.info("link down", ["peer": remote.hex, "reason": reason])
                } else if json { out.line(JSONEvents.line(["type": .string("peer_down"), "id": .string(remote.hex)])) } else { out.line("-- link to \(remote.shortFingerprint) closed: \(reason)") }
            }
        }
        if let d = link.dialer { redialLater(d, after: reason) }
    }

    private func redialLater(_ d: Int, after reason: String) {
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
        dialers[d].connecting = true
        do {
            _ = try WebSocketClient.connect(
                host: dialers[d].host, port: dialers[d].port, path: "/peernode/1",
                configuration: .init(subprotocols: ["peernode.1"], requireSubprotocol: true,
                                     limits: WebSocketLimits(maximumMessageSize: Self.maximumLinkMessage, acceptsText: false)),
                callbacks: callbacks(dialer: d), loop: loop)
        } catch {
            redialLater(d, after: "\(error)")
        }
    }

    // MARK: gossip

    private func gossip(_ message: GossipMessage, from id: LinkID) {
        switch message {
        case let .clock(entries, full): perform(replicator.clockReceived(id, entries: entries, full: full))
        case let .envelopes(batch): perform(replicator.envelopesReceived(id, batch))
        case let .request(ranges): perform(replicator.requestReceived(id, ranges: ranges))
        case let .clockSince(base, entries): perform(replicator.clockSinceReceived(id, base: base, entries: entries))
        case .fullClockWanted:
            count("full_clock_wanted_received")
            perform(replicator.fullClockWanted(id))
        case let .stored(entries):
            perform(replicator.storedReceived(id, entries: entries))
            if let remote = links[id]?.remote, let mine = entries.first(where: { $0.author == node.me }) {
                storedArrived(mine.sequence, by: remote)
            }
        }
    }

    private func send(_ message: GossipMessage, to id: LinkID) {
        let encoded = message.encoded
        switch message {
        case let .clock(_, full): countClock(full ? "clock_full_sent" : "clock_delta_sent", bytes: encoded.count)
        case .clockSince: countClock("clock_since_sent", bytes: encoded.count)
        case .fullClockWanted: countClock("full_clock_wanted_sent", bytes: encoded.count)
        case let .envelopes(batch): count("envelopes_sent", by: batch.count)
        case .request, .stored: break
        }
        for chunk in GossipChunker.chunks(encoded) {
            guard var link = links[id] else { return }
            let actions = link.session.send(chunk)
            links[id] = link
            apply(actions, on: id)
        }
    }

    func perform(_ actions: [Replicator.Action]) {
        for action in actions {
            switch action {
            case let .send(id, message):
                send(message, to: id)
            case let .sendStored(id, author, from, through):
                var next = from
                while next <= through, links[id] != nil {
                    let count = Int(min(UInt64(Replicator.batchSize), through - next + 1))
                    guard let batch = try? node.store.envelopes(from: author, startingAt: next, limit: count), !batch.isEmpty else { break }
                    send(.envelopes(batch.map { CarriedEnvelope(hops: 0, envelope: $0) }), to: id)
                    next = (batch.last?.sequence ?? through) + 1
                }
            case let .verifyAndStore(id, batch):
                verifyAndStore(batch, from: id)
            case let .disconnect(id, reason):
                count("disconnected_invalid")
                links[id]?.connection.close(code: .policyViolation, reason: reason)
            case let .remember(id, clocks):
                guard let remote = links[id]?.remote else { continue }
                do { try node.store.savePeerClocks(clocks, of: remote, at: Node.now()) } catch {
                    log.warning("saving the clock of \(remote.shortFingerprint) failed: \(error)")
                }
            }
        }
    }

    /// Verification runs off the loop thread, one batch after another (so
    /// batches are stored in the order they came), while the loop goes on
    /// reading, storing and showing: the two overlap on a two-core machine.
    /// A small batch with nothing ahead of it in the verifier (live traffic)
    /// is verified on the loop thread: two thread hops cost more than it does.
    private let verifier = DispatchQueue(label: "peernode.verify")
    private var batchesVerifying = 0
    static let inlineVerifyLimit = 8

    private func verifyAndStore(_ batch: [CarriedEnvelope], from id: LinkID) {
        if storeFull {
            // Refused, not lost: the clock exchange offers them again once there is room.
            count("store_full", by: batch.count)
            perform(replicator.stored(from: id, checked: batch, inserted: [], invalid: 0, newClock: []))
            return
        }
        if batchesVerifying == 0, batch.count <= Self.inlineVerifyLimit {
            store(Self.verified(batch), checked: batch, from: id)
            return
        }
        batchesVerifying += 1
        verifier.async { [self] in
            // The signature is checked here, on the bytes as they came, on every core.
            let valid = Self.verified(batch)
            loop.execute { [self] in
                batchesVerifying -= 1
                store(valid, checked: batch, from: id)
            }
        }
    }

    private func store(_ valid: [CarriedEnvelope], checked batch: [CarriedEnvelope], from id: LinkID) {
        if valid.count < batch.count { count("invalid_envelope", by: batch.count - valid.count) }
        var inserted: [CarriedEnvelope] = []
        var clock: [Dependency] = []
        do {
            let outcomes = try node.store.insert(valid.map(\.envelope), receivedAt: Node.now())
            for (c, o) in zip(valid, outcomes) {
                switch o {
                case .inserted: inserted.append(c)
                case .fork, .brokenChain: count("fork")
                case .duplicate: break
                }
            }
            // Only the authors of this batch can have moved.
            clock = Set(valid.map(\.envelope.author)).map { Dependency(author: $0, sequence: node.store.contiguous(of: $0)) }
        } catch {
            log.warning("storing failed: \(error)")
        }
        perform(replicator.stored(from: id, checked: batch, inserted: inserted, invalid: batch.count - valid.count, newClock: clock))
        showDeliveries()
    }

    /// The envelopes whose signatures verify, in order. Large batches are
    /// split across the machine's cores.
    static func verified(_ batch: [CarriedEnvelope]) -> [CarriedEnvelope] {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        guard batch.count >= 32, cores > 1 else {
            return batch.filter { (try? $0.envelope.verifySignature()) != nil }
        }
        let flags = UnsafeMutableBufferPointer<Bool>.allocate(capacity: batch.count)
        flags.initialize(repeating: false)
        defer { flags.deallocate() }
        let slice = (batch.count + cores - 1) / cores
        nonisolated(unsafe) let shared = flags
        DispatchQueue.concurrentPerform(iterations: cores) { part in
            let start = part * slice
            guard start < batch.count else { return }
            for i in start..<min(batch.count, start + slice) {
                // Each index is written by one iteration only.
                shared[i] = (try? batch[i].envelope.verifySignature()) != nil
            }
        }
        return batch.indices.filter { flags[$0] }.map { batch[$0] }
    }

    func count(_ reason: String, by n: Int = 1) {
        counters[reason, default: 0] += n
    }

    private func countClock(_ kind: String, bytes: Int) {
        count(kind)
        count("clock_bytes_sent", by: bytes)
    }

    /// `/stats`: one line (JSON or plain), counters sorted by name.
    private func showStats() {
        var pairs: [(String, JSONEvents.Value)] = [("type", .string("stats")), ("links", .number(UInt64(links.values.filter { $0.remote != nil }.count)))]
        let all = counters.merging(discovery?.counters ?? [:]) { a, _ in a }
        pairs += all.sorted { $0.key < $1.key }.map { ($0.key, .number(UInt64(max(0, $0.value)))) }
        if json {
            out.line(JSONEvents.line(pairs: pairs))
        } else {
            out.line("-- stats: " + pairs.dropFirst().map { key, value in
                if case let .number(n) = value { return "\(key)=\(n)" }
                return key
            }.joined(separator: " "))
        }
    }

    // MARK: the user

    /// Prints what was delivered since last time, in delivery (causal) order.
    private func showDeliveries() {
        guard !relay else { return }
        guard let fresh = try? node.store.delivered(after: lastShown) else { return }
        out.hold()
        defer { out.release() }
        for stored in fresh {
            lastShown = stored.delivery
            let e = stored.envelope
            node.observe(e)
            // A blocked identity's messages are kept (and relayed) but not shown.
            if blocked.contains(e.author) { continue }
            if node.roomName(e.room) == nil, let (peer, text) = node.direct(e) {
                showDirect(e, peer: peer, text: text)
                continue
            }
            if e.kind == .receipt {
                if e.author != node.me, let receipt = node.receipt(in: e) { receiptArrived(receipt, from: e.author, room: e.room) }
                continue
            }
            if e.kind == .invite {
                if e.author != node.me, let (peer, invite) = node.invite(in: e) { invited(by: peer, invite) }
                continue
            }
            guard let roomName = node.roomName(e.room), let text = node.plaintext(of: e) else { continue }
            owe(e, room: e.room, current: roomName == session.room)
            if json {
                guard e.kind == .text || e.kind == .action else { continue }
                out.line(JSONEvents.line(["type": .string("message"), "id": .string(e.id.hex), "author": .string(e.author.hex), "nick": .string(node.nicks[e.author] ?? ""), "seq": .number(e.sequence), "room": .string(roomName.value), "kind": .string(e.kind == .text ? "text" : "action"), "text": .string(text), "ts": .number(e.timestamp)]))
            } else {
                out.line(Renderer(nicks: node.nicks).line(e, room: roomName.value, text: text))
            }
        }
    }

    private func showDirect(_ e: Envelope, peer: PublicKey, text: String) {
        // A direct message is shown wherever the person is: it counts as read there.
        owe(e, room: e.room, current: true)
        let to = e.author == node.me ? peer : node.me
        if json {
            out.line(JSONEvents.line(["type": .string("message"), "id": .string(e.id.hex), "author": .string(e.author.hex), "nick": .string(node.nicks[e.author] ?? ""), "seq": .number(e.sequence), "kind": .string("dm"), "to": .string(to.hex), "text": .string(text), "ts": .number(e.timestamp)]))
        } else {
            let renderer = Renderer(nicks: node.nicks)
            out.line("[\(Renderer.clock(e.timestamp))] *\(renderer.label(e.author)) → \(renderer.label(to))* \(TerminalText.sanitize(text))")
        }
    }

    /// A line from stdin.
    func handleLine(_ line: String) -> Bool {
        switch ChatInput.parse(line) {
        case let .message(text): return post(text, kind: .text)
        case let .action(text): return post(text, kind: .action)
        case .quit: return false
        case .stats:
            showStats()
            return true
        case let .invite(who, room):
            do {
                let peer = try node.resolve(who)
                let e = try node.invite(peer, to: try RoomName(room))
                perform(replicator.localPost(e))
                if !json { out.line("-- invited \(Renderer(nicks: node.nicks).label(peer)) to \(TerminalText.sanitize(room))") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case let .set(key, value):
            do {
                try node.store.setSetting(key, value)
                sendsReadReceipts = value == "on"
                if !json { out.line("-- read receipts \(value)") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case .who, .peers, .sync:
            let parsed = ChatInput.parse(line)
            if json {
                if parsed == .sync {
                    let gaps = gaps()
                    out.line(JSONEvents.line(["type": .string("sync"), "complete": .string(gaps.isEmpty ? "yes" : "no"),
                                              "missing": .number(gaps.reduce(0) { $0 + $1.missing }), "authors": .number(UInt64(gaps.count))]))
                }
            } else {
                out.hold()
                for l in parsed == .who ? whoLines() : parsed == .peers ? peerLines() : syncLines() { out.line(l) }
                out.release()
            }
            return true
        case let .block(who, on):
            do {
                let key = try node.resolve(who)
                try node.store.setBlocked(key, on, at: Node.now())
                blocked.set(try node.store.blockedIdentities())
                if on {
                    for link in links.values where link.remote == key {
                        link.connection.close(code: .policyViolation, reason: "blocked")
                    }
                }
                if !json { out.line("-- \(on ? "blocked" : "unblocked") \(Renderer(nicks: node.nicks).label(key))") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case let .direct(who, text):
            do {
                try ensureOwnHistoryIsBack()
                let peer = try node.resolve(who)
                let e = try node.postDirect(text, to: peer)
                perform(replicator.localPost(e))
                showDeliveries()
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        default:
            let (lines, keepGoing) = session.handle(line)
            for l in lines {
                if json {
                    if l.hasPrefix("error: ") { out.line(JSONEvents.line(["type": .string("error"), "error": .string(String(l.dropFirst(7)))])) }
                } else {
                    out.line(l)
                }
            }
            lastShown = max(lastShown, node.store.lastDeliveryNumber)
            return keepGoing
        }
    }

    private func post(_ text: String, kind: Kind) -> Bool {
        do {
            try ensureOwnHistoryIsBack()
            let e = try node.post(text, kind: kind, in: session.room)
            lastOwnPost[session.room] = e.sequence
            perform(replicator.localPost(e))
            showDeliveries()
        } catch {
            out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
        }
        return true
    }

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
        for id in links.keys.sorted() {
            guard var link = links[id] else { continue }
            let actions = link.session.tick(now: now)
            links[id] = link
            apply(actions, on: id)
        }
        for d in dialers.indices where !dialers[d].connecting && !dialers[d].retired && now >= dialers[d].nextTry {
            dial(d)
        }
    }

    /// Closes every link cleanly (1001).
    func closeAll() {
        for link in links.values { link.connection.close(code: .goingAway, reason: "node quitting") }
    }

    func monotonic() -> Double { ProcessInfo.processInfo.systemUptime }
}
