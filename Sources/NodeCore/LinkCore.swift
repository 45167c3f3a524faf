import Crypto
import Gossip
import NetworkText

/// The node's links and what travels on them, pure (STYLE.md §1): each
/// link's Noise session and gossip chunks, the link table (tie-break,
/// backoff, diallers), replication, and the counters of what happened.
/// Bytes, link events and the time go in (`handle`); what the shell must do
/// comes out (`Effect`): bytes to write, links to close, addresses to dial,
/// batches to verify and store, peers to show up or down, lines to log.
/// The shell owns the sockets, the store and the screen.
public struct LinkCore {
    /// What the core keeps of one open connection.
    struct Link {
        var session: LinkSession
        /// The version agreed in the WebSocket handshake.
        let version: LinkProtocol
        /// Where it came from or went to (for log lines).
        let address: String
        var chunker = GossipChunker()
    }

    public enum Input {
        /// A connection's WebSocket is open (dialled by `dialer`, or
        /// accepted), with the Noise session the shell made for it.
        case opened(LinkID, dialer: LinkTable.DialerID?, session: LinkSession, version: LinkProtocol, address: String)
        /// Bytes (one WebSocket message) arrived on a link.
        case received(LinkID, [UInt8])
        /// A link closed, with the reason its peer gave.
        case closed(LinkID, reason: PeerText)
        /// A dial did not become a link.
        case dialFailed(LinkTable.DialerID)
        /// A link is up (`Effect.up`): replication starts on it, with what
        /// was remembered of its peer.
        case replicate(LinkID, memory: PeerClocks?)
        /// Send a gossip message on a link (catch-up batches the shell read).
        case send(LinkID, GossipMessage)
        /// Envelopes of a batch `verifyAndStore` asked for that verified and
        /// continue their authors' chains in the store: forwarded now, before
        /// they are stored (`stored` follows, and pushes nothing twice).
        case verified([CarriedEnvelope])
        /// A batch `verifyAndStore` asked for was verified and stored:
        /// `inserted` are new, `invalid` failed verification, `newClock`
        /// is where their authors' chains stand now.
        case stored(from: LinkID?, checked: [CarriedEnvelope], inserted: [CarriedEnvelope], invalid: Int, newClock: [Dependency])
        /// We signed and stored an envelope of our own.
        case posted(Envelope)
        /// Discovery found `peer` at `host:port` (`listening`: we accept links).
        case found(PublicKey, host: String, port: UInt16, listening: Bool)
        /// Discovery has not heard `peer` for its expiry.
        case expired(PublicKey)
        /// `peer` was blocked.
        case blocked(PublicKey)
        /// Once a second: timeouts, clock exchanges, redials.
        case tick
        /// Send a typing notice (ours, or one passed on) on every link
        /// that speaks them, but `except`.
        case typing(TypingNotice, except: LinkID?)
        /// Send presence beacons (ours, passed on, or those held for a new link) on the links `to` names that speak them.
        case presence([PresenceBeacon], to: Recipients)
    }

    /// Which links an input goes to.
    public enum Recipients: Equatable, Sendable {
        case all
        case allBut(LinkID)
        case only(LinkID)

        func includes(_ id: LinkID) -> Bool {
            switch self {
            case .all: true
            case let .allBut(except): id != except
            case let .only(wanted): id == wanted
            }
        }
    }

    /// How the shell closes a link (the WebSocket close code it sends).
    public enum Closing: Equatable, Sendable {
        /// 1000: the link lost a tie-break.
        case normal
        /// 1008: the peer broke a rule.
        case policyViolation
    }

    public enum Effect: Equatable, Sendable {
        /// Write these bytes on the link (one binary WebSocket message).
        case transmit(LinkID, [UInt8])
        case close(LinkID, Closing, reason: String)
        /// Open a connection for this dialler; report it with `opened`, or `dialFailed`.
        case dial(LinkTable.DialerID, host: String, port: UInt16)
        /// The link carries `peer` now (`announce`: no link carried it just
        /// before; `nick`: what it claimed in its handshake). Answer with `replicate`.
        case up(LinkID, PublicKey, announce: Bool, nick: String?)
        /// No link carries `peer` any more (with the reason its last link gave).
        case peerDown(PublicKey, reason: PeerText?)
        /// Read `from...through` of `author` from the store and send it on
        /// the link as the socket drains (`send`).
        case catchUp(LinkID, author: PublicKey, from: UInt64, through: UInt64)
        /// Verify these envelopes' signatures and store them; answer with `stored`.
        case verifyAndStore(LinkID, [CarriedEnvelope])
        /// Keep what `peer` declared, for its next link.
        case remember(PublicKey, PeerClocks)
        /// `peer` holds our own messages through `sequence`.
        case ownStored(UInt64, by: PublicKey)
        /// A line for the operator's log (with the counter's name of a refusal).
        case warning(String, reason: String?)
        /// A typing notice arrived on a link (not yet checked: `TypingBoard`, then its signature).
        case typing(TypingNotice, from: LinkID)
        /// A presence beacon arrived on a link (not yet checked: `PresenceBoard`, then its signature).
        case presence(PresenceBeacon, from: LinkID)
        /// A file message arrived on a link of version 7 or later, from `peer` (`FileMessage`; checked by the files unit).
        case file(FileMessage, from: LinkID, peer: PublicKey)
    }

    /// The close reason of a link that lost the tie-break: the other side
    /// keeps the peer up for `LinkTable.duplicateGrace`.
    public static let duplicateReason = "duplicate link"

    public let me: PublicKey
    public internal(set) var table: LinkTable
    public internal(set) var replicator: Replicator
    public private(set) var counters = Counters()
    /// Who we keep links to (`LinkCore+Overlay.swift`).
    public internal(set) var overlay: Overlay
    var links: [LinkID: Link] = [:]
    /// Where the time goes (`StageTimes`): the shell's stages, and Noise and
    /// decoding here when `stopwatch` is set (the node's monotonic clock;
    /// tests leave it nil and nothing is timed).
    public var stages = StageTimes()
    public var stopwatch: (@Sendable () -> Double)?
    /// Runs `count` independent jobs at once, one a core, returning when all
    /// are done (the shell's `DispatchQueue.concurrentPerform`, with `count`
    /// its cores); nil (tests, one core): every seal on the loop. A batch
    /// forwarded to at least `sealsSplitFrom` links, `splitSealBytes` in
    /// all, has their seals split into that many runs of links. Paced at
    /// 14,300 messages/s to 50 links, p99 77 → 54 ms in alternated runs
    /// (docs/SCALE.md).
    public var inParallel: (count: Int, run: @Sendable (_ count: Int, _ job: @Sendable (Int) -> Void) -> Void)?

    public init(me: PublicKey, clock: VectorClock, overlay: Overlay.Configuration = Overlay.Configuration(), random: some RandomNumberGenerator) {
        self.me = me
        table = LinkTable(me: me, random: random)
        replicator = Replicator(me: me, clock: clock, random: random)
        self.overlay = Overlay(me: me, configuration: overlay, random: random)
    }

    /// `--push-rate`: envelopes per second a link may push (and bring when
    /// asked); the burst stays the same number of seconds of the rate.
    public mutating func limitPushes(perSecond rate: Double) {
        replicator.pushBudget = (burst: rate * Replicator.pushBurst / Replicator.pushRate, perSecond: rate)
        replicator.pullBudget = replicator.pushBudget
    }

    /// `--max-links` (and a relay's larger bound), before any link.
    public mutating func configureOverlay(_ configuration: Overlay.Configuration, random: some RandomNumberGenerator) {
        overlay = Overlay(me: me, configuration: configuration, random: random)
    }

    /// The port we accept links on, told to peers in membership messages.
    public mutating func listens(on port: UInt16) { overlay.configuration.port = port }

    /// `--peer`: a dialler that tries at the first tick.
    public mutating func addPeer(host: String, port: UInt16) { table.addPeer(host: host, port: port) }

    public mutating func count(_ counter: Counter, by n: Int = 1) { counters.add(counter, n) }

    /// The version agreed on `link` in its WebSocket handshake.
    public func version(of link: LinkID) -> LinkProtocol? { links[link]?.version }
    /// The cipher an established link runs.
    public func cipher(of link: LinkID) -> NoiseCipher? { links[link]?.session.cipher }

    public mutating func handle(_ input: Input, now: Double) -> [Effect] {
        var out: [Effect] = []
        switch input {
        case let .opened(id, dialer, fresh, version, address):
            links[id] = Link(session: fresh, version: version, address: address)
            table.opened(id, dialer: dialer)
            if dialer != nil { step(id, now: now, into: &out) { $0.start() } }
        case let .received(id, bytes):
            count(.bytesIn, by: bytes.count)
            step(id, now: now, into: &out, timed: true) { $0.receive(bytes) }
        case let .closed(id, reason):
            let remote = remote(of: id)
            guard links.removeValue(forKey: id) != nil else { break }
            replicator.linkDown(id)
            let duplicate = reason.unsanitized == Self.duplicateReason
            follow(table.closed(id, reason: reason, duplicate: duplicate, now: now), now: now, into: &out)
            if !duplicate { overlayClosed(id, remote: remote, now: now, into: &out) }
        case let .dialFailed(d):
            follow(table.dialFailed(d, now: now), now: now, into: &out)
        case let .replicate(id, memory):
            // A link that lost a tie-break meanwhile carries nobody: nothing to replicate.
            guard let link = links[id], table.links[id]?.remote != nil else { break }
            follow(replicator.linkUp(id, now: now, memory: memory, version: link.version), now: now, into: &out)
        case let .send(id, message):
            send(message, on: id, now: now, into: &out)
        case let .verified(ahead):
            follow(replicator.verifiedAhead(ahead), now: now, into: &out)
        case let .stored(from, checked, inserted, invalid, newClock):
            follow(replicator.stored(from: from, checked: checked, inserted: inserted, invalid: invalid, newClock: newClock, now: now),
                      now: now, into: &out)
        case let .posted(envelope):
            follow(replicator.localPost(envelope), now: now, into: &out)
        case let .found(peer, host, port, listening):
            if overlay.configuration.bounded {
                overlayFound(peer, host: host, port: port, now: now, into: &out)
            } else {
                follow(table.found(peer, host: host, port: port, listening: listening, now: now), now: now, into: &out)
            }
        case let .expired(peer):
            table.expired(peer)
            overlayExpired(peer, now: now, into: &out)
        case let .blocked(peer):
            overlay.discovered[peer] = nil
            membership(.unreachable(peer), now: now, into: &out)
            follow(table.block(peer), now: now, into: &out)
        case .tick:
            follow(replicator.tick(now: now), now: now, into: &out)
            for id in links.keys.sorted() { step(id, now: now, into: &out) { $0.tick(now: now) } }
            follow(table.tick(now: now), now: now, into: &out)
            overlayTick(now: now, into: &out)
        case let .typing(notice, except):
            for (id, link) in links.sorted(by: { $0.key < $1.key }) where id != except && link.version.speaksTyping && table.links[id]?.remote != nil {
                send(.typing(notice), on: id, now: now, into: &out)
            }
        case let .presence(beacons, to):
            for (id, link) in links.sorted(by: { $0.key < $1.key }) where to.includes(id) && link.version.speaksPresence && table.links[id]?.remote != nil {
                for beacon in beacons { send(.presence(beacon), on: id, now: now, into: &out) }
            }
        }
        return out
    }

    // MARK: inside

    /// Runs `step` on a link's session and does what it decided.
    /// `timed`: a message received, whose opening and decoding go into
    /// `stages` if its session was established (a transport message).
    mutating func step(_ id: LinkID, now: Double, into out: inout [Effect], timed: Bool = false,
                       _ body: (inout LinkSession) -> [LinkSession.Action]) {
        var watch = timed ? stopwatch : nil
        let opening = watch?()
        // In place: a copy of the link out of the table and back would retain and
        // release each of its session's many references on every message.
        var established = false
        guard let actions = links[id]?.session.apply({ established = $0.isEstablished; return body(&$0) }) else { return }
        if !established { watch = nil }
        if let watch, let opening { stages.record(.noise, watch() - opening) }
        act(on: actions, of: id, now: now, into: &out, watch: watch)
    }

    /// Whether `id` is an open link. Asked without taking the link out of
    /// the table: a copy (`links[id] != nil`) retains and releases each of
    /// its session's references, and the fan-out asks for every link.
    func isLink(_ id: LinkID) -> Bool { links.index(forKey: id) != nil }

    /// What a link's session gave: bytes to send, a handshake done, a chunk to read, a failure.
    mutating func act(on actions: [LinkSession.Action], of id: LinkID, now: Double, into out: inout [Effect],
                              watch: (@Sendable () -> Double)?) {
        for action in actions {
            guard isLink(id) else { return }
            switch action {
            case let .send(bytes):
                count(.bytesOut, by: bytes.count)
                out.append(.transmit(id, bytes))
            case let .established(remote):
                follow(table.established(id, remote: remote, now: now), now: now, into: &out)
            case let .deliver(chunk):
                do {
                    let decoding = watch?()
                    if let whole = try links[id]?.chunker.add(chunk) ?? nil {
                        let message = try GossipMessage.decode(whole)
                        gossip(message, from: id, now: now, into: &out)
                        if let watch, let decoding, case .envelopes = message { stages.record(.decode, watch() - decoding) }
                    }
                } catch {
                    count(.badGossipMessage)
                    out.append(.close(id, .policyViolation, reason: "bad gossip message: \(error)"))
                }
            case let .close(failure):
                let address = links[id]?.address ?? "?"
                count(Counter(failure))
                if case let .unexpectedIdentity(_, got) = failure { follow(table.misdirected(id, answered: got, now: now), now: now, into: &out) }
                out.append(.warning("link from \(address) refused: \(failure)", reason: failure.counterName))
                out.append(.close(id, .policyViolation, reason: failure.description))
            }
        }
    }

    /// Does what the link table decided.
    mutating func follow(_ effects: [LinkTable.Effect], now: Double, into out: inout [Effect]) {
        for effect in effects {
            switch effect {
            case let .dial(d, host, port):
                out.append(.dial(d, host: host, port: port))
            case let .close(id, .duplicate):
                out.append(.close(id, .normal, reason: Self.duplicateReason))
            case let .close(id, .blocked):
                out.append(.close(id, .policyViolation, reason: "blocked"))
            case let .up(id, remote, announce):
                out.append(.up(id, remote, announce: announce, nick: links[id]?.session.remoteNick))
                overlayUp(id, remote: remote, now: now, into: &out)
            case let .released(peer):
                overlayReleased(peer, now: now, into: &out)
            case let .down(id):
                replicator.linkDown(id)
            case let .peerDown(remote, reason):
                out.append(.peerDown(remote, reason: reason))
            case let .count(counter):
                count(counter)
            case let .misdirected(address, announced, answered, until):
                out.append(.warning("\(address) was announced for \(announced?.shortFingerprint ?? "?") but \(answered.shortFingerprint) answered; "
                    + "not dialled there for \(Int(until - now)) s", reason: nil))
            }
        }
    }

    private mutating func gossip(_ message: GossipMessage, from id: LinkID, now: Double, into out: inout [Effect]) {
        switch message {
        case let .clock(entries, full): follow(replicator.clockReceived(id, entries: entries, full: full, now: now), now: now, into: &out)
        case let .envelopes(batch): follow(replicator.envelopesReceived(id, batch, now: now), now: now, into: &out)
        case let .request(ranges): follow(replicator.requestReceived(id, ranges: ranges), now: now, into: &out)
        case let .clockSince(base, entries):
            follow(replicator.clockSinceReceived(id, base: base, entries: entries, now: now), now: now, into: &out)
        case .fullClockWanted:
            count(.fullClockWantedReceived)
            follow(replicator.fullClockWanted(id), now: now, into: &out)
        case let .overlay(message):
            overlayReceived(message, on: id, now: now, into: &out)
        case let .ihave(entries):
            count(.ihaveReceived)
            follow(replicator.ihaveReceived(id, entries: entries, now: now), now: now, into: &out)
        case let .prune(authors):
            count(.pruneReceived, by: authors.count)
            replicator.pruneReceived(id, authors: authors)
        case let .graft(authors):
            count(.graftReceived, by: authors.count)
            replicator.graftReceived(id, authors: authors)
        case let .typing(notice):
            guard links[id]?.version.speaksTyping == true else { return count(.typingDropped) }
            count(.typingReceived)
            out.append(.typing(notice, from: id))
        case let .presence(beacon):
            guard links[id]?.version.speaksPresence == true else { return count(.presenceDropped) }
            count(.presenceReceived)
            out.append(.presence(beacon, from: id))
        case let .file(message):
            guard let version = links[id]?.version, version.speaksFiles, let remote = table.links[id]?.remote else { return count(.fileMessageDropped) }
            if case .want(_, _, _, .some) = message, !version.namesFileOffers { return count(.fileMessageDropped) }
            if case .chunk = message { count(.fileChunksReceived) }
            out.append(.file(message, from: id, peer: remote))
        case let .stored(entries):
            follow(replicator.storedReceived(id, entries: entries, now: now), now: now, into: &out)
            if let remote = table.links[id]?.remote, let mine = entries.first(where: { $0.author == me }) {
                out.append(.ownStored(mine.sequence, by: remote))
            }
        }
    }

    /// Does what replication decided.
    private mutating func follow(_ actions: [Replicator.Action], now: Double, into out: inout [Effect]) {
        // A batch pushed to many links is encoded and chunked once (each link still seals its own).
        var encoded: EncodedBatch?
        // The links the batch in `encoded` goes to, sent together when the next action is another's.
        var fanOut: [LinkID] = []
        for action in actions {
            if case let .send(id, .envelopes(batch)) = action {
                if encoded?.holds(batch) != true {
                    if let encoded, !fanOut.isEmpty { send(encoded, on: fanOut, now: now, into: &out) }
                    fanOut = []
                    encoded = EncodedBatch(batch)
                }
                fanOut.append(id)
                continue
            }
            if let encoded, !fanOut.isEmpty {
                send(encoded, on: fanOut, now: now, into: &out)
                fanOut = []
            }
            switch action {
            case .send(_, .envelopes):
                break  // taken above
            case let .send(id, message):
                send(message, on: id, now: now, into: &out)
            case let .sendStored(id, author, from, through):
                if links[id] != nil { out.append(.catchUp(id, author: author, from: from, through: through)) }
            case let .verifyAndStore(id, batch):
                out.append(.verifyAndStore(id, batch))
            case let .disconnect(id, reason):
                count(.disconnectedInvalid)
                out.append(.close(id, .policyViolation, reason: reason))
            case let .pushesLimited(id, n):
                count(.pushRateLimited, by: n)
                count(.disconnectedFlood)
                out.append(.close(id, .policyViolation, reason: "pushing faster than \(Int(replicator.pushBudget.perSecond)) envelopes/s"))
            case let .pendingFull(_, n):
                count(.pendingFull, by: n)
            case let .clockEntriesIgnored(_, n):
                count(.clockEntriesIgnored, by: n)
            case let .heldBack(_, n):
                count(.envelopesTooNewForLink, by: n)
            case let .duplicates(_, n):
                count(.envelopesDuplicate, by: n)
            case let .remember(id, clocks):
                if let remote = table.links[id]?.remote { out.append(.remember(remote, clocks)) }
            }
        }
        if let encoded, !fanOut.isEmpty { send(encoded, on: fanOut, now: now, into: &out) }
    }

    /// Encodes, counts and chunks a gossip message, and seals each chunk
    /// in the link's Noise session.
    mutating func send(_ message: GossipMessage, on id: LinkID, now: Double, into out: inout [Effect]) {
        // A batch goes out in messages of at most `batchBytes` (large bodies add up).
        if case let .envelopes(batch) = message { return send(EncodedBatch(batch), on: id, now: now, into: &out) }
        let encoded = message.encoded
        switch message {
        case let .clock(_, full): countClock(full ? .clockFullSent : .clockDeltaSent, bytes: encoded.count)
        case .clockSince: countClock(.clockSinceSent, bytes: encoded.count)
        case .fullClockWanted: countClock(.fullClockWantedSent, bytes: encoded.count)
        case .envelopes: break  // counted by part, above
        case .ihave: count(.ihaveSent)
        case let .prune(authors): count(.pruneSent, by: authors.count)
        case let .graft(authors): count(.graftSent, by: authors.count)
        case .typing: count(.typingSent)
        case .presence: count(.presenceSent)
        case let .file(.want(_, _, chunks, _)): count(.fileChunksWanted, by: chunks.count)
        case .file(.chunk): count(.fileChunksSent)
        case .file(.none): break
        case let .request(ranges): count(.envelopesRequested, by: ranges.reduce(0) { $0 + Int(clamping: $1.count) })
        case .stored, .overlay: break
        }
        for chunk in GossipChunker.chunks(encoded) {
            guard links[id] != nil else { return }
            step(id, now: now, into: &out) { $0.send(chunk) }
        }
    }

    private mutating func countClock(_ kind: Counter, bytes: Int) {
        count(kind)
        count(.clockBytesSent, by: bytes)
    }
}
