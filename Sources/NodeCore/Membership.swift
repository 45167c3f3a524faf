/// Who this node keeps links to, in the manner of HyParView (Leitão,
/// Pereira, Rodrigues 2007), pure (STYLE.md §1): a small *active* view of
/// peers it is linked to (at most `Configuration.activeSize`, whatever the
/// size of the LAN) and a larger *passive* view of peers it knows of,
/// refreshed by shuffles and used to heal the active view at once when a
/// link drops. Messages, link news and the time go in (`handle`); messages
/// to send, links to open and close come out (`Effect`).
///
/// `Peer` is whatever names a peer and says how to reach it (the node uses
/// its identity and address; the simulator a number). Everything a peer
/// sends is bounded: a walk's length is capped, a shuffle's list is cut at
/// `maximumShufflePeers`, and the passive view never grows past its size.
public struct Membership<Peer: Hashable & Comparable & Sendable> {
    public struct Configuration: Sendable {
        /// Links kept at most (and aimed for).
        public var activeSize = 6
        /// Peers known but not linked, kept at most.
        public var passiveSize = 36
        /// How far a join walks (active random walk length).
        public var activeWalk: UInt8 = 6
        /// At which step of the walk the joining peer is also put in the passive view.
        public var passiveWalk: UInt8 = 3
        /// Peers of each view sent in one shuffle.
        public var shuffleActive = 3
        public var shufflePassive = 4
        /// How far a shuffle walks before it is answered (1: the neighbour
        /// it is sent to answers; the node's setting, since a reply goes
        /// back over the link it came on).
        public var shuffleWalk: UInt8 = 6
        /// Seconds between two shuffles (±25 %).
        public var shuffleInterval = 10.0
        /// Seconds a neighbour request may go unanswered.
        public var requestTimeout = 5.0
        public init() {}
    }

    public enum Message: Equatable, Sendable {
        /// A new peer asks to join through us (its first link).
        case join
        /// `peer` joins; take it, or pass it on (`ttl` steps left).
        case forwardJoin(Peer, ttl: UInt8)
        /// Be linked with me (`urgent`: I have no link left; must be taken).
        case neighbor(urgent: Bool)
        case neighborReply(accepted: Bool)
        /// I drop our link (`alive`: I am not going away; keep me as passive).
        case disconnect(alive: Bool)
        /// A sample of `origin`'s views, walking `ttl` more steps.
        case shuffle(origin: Peer, ttl: UInt8, peers: [Peer])
        case shuffleReply(peers: [Peer])
    }

    public enum Input: Sendable {
        /// Join the overlay through `contact` (a `--peer`, or one discovery found).
        case join(Peer)
        /// A peer we may link to later (discovery, `--peer`).
        case known(Peer)
        case received(Message, from: Peer)
        /// A link failed or a message could not be delivered: `peer` is gone.
        case unreachable(Peer)
        case tick
    }

    public enum Effect: Equatable, Sendable {
        /// Send `message` to `peer` (over its link, or a connection made for it).
        case send(Peer, Message)
        /// `peer` joined the active view: keep a link to it.
        case link(Peer)
        /// `peer` left the active view: close its link.
        case unlink(Peer)
    }

    /// Peers taken from one shuffle at most: a longer list is cut (and counted).
    public var maximumShufflePeers: Int { configuration.shuffleActive + configuration.shufflePassive + 1 }

    public let me: Peer
    public let configuration: Configuration
    public private(set) var active: Set<Peer> = []
    public private(set) var passive: Set<Peer> = []
    /// A neighbour request in flight: when it was sent, and whether urgently
    /// (a request asked again, on a new connection after a tie-break, is
    /// asked as it was first).
    public struct Request: Sendable, Equatable {
        public let sent: Double
        public let urgent: Bool
    }
    /// Neighbour requests in flight.
    public private(set) var requested: [Peer: Request] = [:]
    /// Where each peer is: the host its link comes from, or the address it
    /// was named with (set by the caller before a message about it; the
    /// node uses the IPv4 host, the simulator none). Kept for peers in
    /// either view and peers asked; a peer without one counts as a host of
    /// its own.
    public var hosts: [Peer: String] = [:]
    /// The peers of `requested` asked urgently.
    public var urgentlyRequested: Set<Peer> { Set(requested.filter(\.value.urgent).keys) }
    /// When a node short of links last asked urgently (`urgency`).
    private var lastUrgentRequest = -Double.infinity
    /// Peers that refused a request: not asked again until `requestTimeout` passed.
    private var refusedAt: [Peer: Double] = [:]
    /// Shuffle entries refused because a list was too long or named us.
    public private(set) var refusedEntries = 0
    /// The peers sent in the last shuffle: the first evicted when the reply comes.
    private var lastShuffleSent: [Peer] = []
    private var nextShuffle: Double?
    /// A join was sent (once; after that the passive view heals the active one).
    private var joined = false
    private var random: any RandomNumberGenerator

    public init(me: Peer, configuration: Configuration = Configuration(), random: some RandomNumberGenerator) {
        self.me = me
        self.configuration = configuration
        self.random = random
    }

    public mutating func handle(_ input: Input, now: Double) -> [Effect] {
        var out: [Effect] = []
        switch input {
        case let .join(contact):
            guard contact != me else { break }
            joined = true
            addActive(contact, into: &out)
            out.append(.send(contact, .join))
        case let .known(peer):
            guard peer != me else { break }
            if active.isEmpty && requested.isEmpty && !joined {
                // The first peer we hear of is our way in: a join walks the
                // overlay and finds us links where there is room.
                joined = true
                addActive(peer, into: &out)
                out.append(.send(peer, .join))
            } else {
                // Kept in reserve; the active view fills from it at the next
                // tick, from everything heard by then. Filling at once would
                // link every node to the first peers it hears, and on a LAN
                // everyone hears the same announcements in the same order: the
                // overlay would grow in the order nodes announce, a long chain.
                addPassive([peer])
            }
        case let .received(message, from):
            guard from != me else { break }
            received(message, from: from, now: now, into: &out)
        case let .unreachable(peer):
            requested[peer] = nil
            passive.remove(peer)
            if active.remove(peer) != nil { out.append(.unlink(peer)) }
            fill(now: now, into: &out)
        case .tick:
            for (peer, request) in requested where now - request.sent >= configuration.requestTimeout {
                requested[peer] = nil
                passive.remove(peer)
            }
            refusedAt = refusedAt.filter { now - $0.value < configuration.requestTimeout }
            hosts = hosts.filter { active.contains($0.key) || requested[$0.key] != nil || passive.contains($0.key) }
            fill(now: now, into: &out)
            if let due = nextShuffle, now < due { break }
            if nextShuffle != nil { shuffle(into: &out) }
            nextShuffle = now + configuration.shuffleInterval * Double.random(in: 0.75...1.25, using: &random)
        }
        return out
    }

    // MARK: inside

    private mutating func received(_ message: Message, from: Peer, now: Double, into out: inout [Effect]) {
        switch message {
        case .join:
            addActive(from, into: &out)
            for peer in active.sorted() where peer != from {
                out.append(.send(peer, .forwardJoin(from, ttl: configuration.activeWalk)))
            }
        case let .forwardJoin(peer, ttl):
            guard peer != me else { break }
            let ttl = min(ttl, configuration.activeWalk)
            if ttl == 0 || active.count <= 1 {
                integrate(peer, now: now, into: &out)
                return
            }
            if ttl == configuration.passiveWalk { addPassive([peer]) }
            if let next = pick(from: active.filter { $0 != from && $0 != peer }) {
                out.append(.send(next, .forwardJoin(peer, ttl: ttl - 1)))
            } else {
                integrate(peer, now: now, into: &out)
            }
        case let .neighbor(urgent):
            if active.contains(from) {
                out.append(.send(from, .neighborReply(accepted: true)))
            } else if urgent || active.count < configuration.activeSize {
                addActive(from, into: &out)
                out.append(.send(from, .neighborReply(accepted: true)))
            } else {
                out.append(.send(from, .neighborReply(accepted: false)))
            }
        case let .neighborReply(accepted):
            let asked = requested.removeValue(forKey: from) != nil
            guard accepted else {
                refusedAt[from] = now
                fill(now: now, into: &out)
                break
            }
            if asked {
                addActive(from, into: &out)
            } else if !active.contains(from) {
                // A late yes (our request timed out, or we linked and dropped it
                // meanwhile): the peer holds us as active now; tell it we do not,
                // or it keeps a link we will never use.
                out.append(.send(from, .disconnect(alive: true)))
            }
        case let .disconnect(alive):
            guard active.remove(from) != nil else { break }
            out.append(.unlink(from))
            if alive { addPassive([from]) }
            fill(now: now, into: &out)
        case let .shuffle(origin, ttl, peers):
            guard origin != me else { break }
            let ttl = min(ttl, configuration.activeWalk)
            if ttl > 1, active.count > 1, let next = pick(from: active.filter { $0 != from && $0 != origin }) {
                out.append(.send(next, .shuffle(origin: origin, ttl: ttl - 1, peers: accepted(peers))))
                return
            }
            let taken = accepted(peers)
            let answer = Array(sample(passive.subtracting([origin]), count: taken.count))
            out.append(.send(origin, .shuffleReply(peers: answer)))
            addPassive(taken, evictingFirst: answer)
        case let .shuffleReply(peers):
            addPassive(accepted(peers), evictingFirst: lastShuffleSent)
            lastShuffleSent = []
        }
    }

    /// A peer's list cut at `maximumShufflePeers`, without us.
    private mutating func accepted(_ peers: [Peer]) -> [Peer] {
        let kept = Array(peers.prefix(maximumShufflePeers)).filter { $0 != me }
        refusedEntries += peers.count - kept.count
        return kept
    }

    private mutating func addActive(_ peer: Peer, into out: inout [Effect]) {
        guard peer != me, !active.contains(peer) else { return }
        if active.count >= configuration.activeSize, let dropped = evictionChoice(making: peer) {
            active.remove(dropped)
            out.append(.send(dropped, .disconnect(alive: true)))
            out.append(.unlink(dropped))
            addPassive([dropped])
        }
        passive.remove(peer)
        requested[peer] = nil
        active.insert(peer)
        out.append(.link(peer))
    }

    /// The joiner a forward-join walk ended at. With room, it is linked at
    /// once; with a full view it is asked first (urgently, so a real joiner
    /// says yes) and a neighbour makes room only when it answers. A
    /// neighbour can name anyone in a forward-join: a made-up peer that never
    /// answers must not cost a real link.
    private mutating func integrate(_ peer: Peer, now: Double, into out: inout [Effect]) {
        guard peer != me, !active.contains(peer) else { return }
        if active.count < configuration.activeSize {
            addActive(peer, into: &out)
        } else {
            guard requested[peer] == nil else { return }
            requested[peer] = Request(sent: now, urgent: true)
        }
        out.append(.send(peer, .neighbor(urgent: true)))
    }

    private mutating func addPassive(_ peers: [Peer], evictingFirst preferred: [Peer] = []) {
        var evictable = preferred.filter { passive.contains($0) }
        for peer in peers where peer != me && !active.contains(peer) && !passive.contains(peer) {
            if passive.count >= configuration.passiveSize {
                let out = evictable.popLast() ?? pick(from: passive)
                if let out { passive.remove(out) }
            }
            passive.insert(peer)
        }
    }

    /// How many of `peers` each known host holds.
    private func places(of peers: Set<Peer>) -> [String: Int] {
        var places: [String: Int] = [:]
        for peer in peers {
            if let host = hosts[peer] { places[host, default: 0] += 1 }
        }
        return places
    }

    /// The peers of `candidates` whose hosts hold the fewest places among
    /// neighbours and peers asked (a peer with no host known: none).
    private func leastHeld(_ candidates: Set<Peer>) -> Set<Peer> {
        let places = places(of: active.union(requested.keys))
        guard !places.isEmpty else { return candidates }
        func weight(_ peer: Peer) -> Int { hosts[peer].flatMap { places[$0] } ?? 0 }
        let fewest = candidates.map(weight).min() ?? 0
        return candidates.filter { weight($0) == fewest }
    }

    /// The neighbour a full active view drops for `newcomer`: at random
    /// among those whose host holds the most places, the newcomer counted.
    /// Identities behind one address (free to make) so push out each other
    /// before anyone else; with every host holding one place, any neighbour.
    private mutating func evictionChoice(making newcomer: Peer) -> Peer? {
        let places = places(of: active.union([newcomer]))
        func weight(_ peer: Peer) -> Int { hosts[peer].flatMap { places[$0] } ?? 1 }
        let most = active.map(weight).max() ?? 1
        return pick(from: active.filter { weight($0) == most })
    }

    /// Asks passive peers to link while the active view (with requests in
    /// flight) is below its size: the reserve peers of hosts holding the
    /// fewest places (neighbours and peers asked) first, so a reserve filled
    /// with one machine's identities (shuffles are free to send) yields one
    /// of them, then peers elsewhere.
    private mutating func fill(now: Double, into out: inout [Effect]) {
        while active.count + requested.count < configuration.activeSize,
              let peer = pick(from: leastHeld(passive.filter { requested[$0] == nil && refusedAt[$0] == nil })) {
            let request = Request(sent: now, urgent: urgency(now: now))
            requested[peer] = request
            out.append(.send(peer, .neighbor(urgent: request.urgent)))
        }
    }

    /// Whether a request to link is urgent (taken even by a full peer, which
    /// drops a neighbour for it). With no link at all, as HyParView has it;
    /// with at most a third of the links, once per `requestTimeout` too: full
    /// peers refuse an ordinary request, and a node they all refuse would
    /// stay one or two links from being cut off. Once per timeout, so the
    /// neighbour it displaces, should it be short of links too, cannot set
    /// off a chain of displacements through the overlay at once.
    private mutating func urgency(now: Double) -> Bool {
        if active.isEmpty { return true }
        guard active.count <= configuration.activeSize / 3, now - lastUrgentRequest >= configuration.requestTimeout else { return false }
        lastUrgentRequest = now
        return true
    }

    private mutating func shuffle(into out: inout [Effect]) {
        guard let target = pick(from: active) else { return }
        let sent = [me] + sample(active.subtracting([target]), count: configuration.shuffleActive)
            + sample(passive, count: configuration.shufflePassive)
        lastShuffleSent = sent
        out.append(.send(target, .shuffle(origin: me, ttl: configuration.shuffleWalk, peers: sent)))
    }

    private mutating func pick(from set: Set<Peer>) -> Peer? {
        guard !set.isEmpty else { return nil }
        let sorted = set.sorted()
        return sorted[Int.random(in: 0..<sorted.count, using: &random)]
    }

    private mutating func sample(_ set: Set<Peer>, count: Int) -> [Peer] {
        var sorted = set.sorted()
        sorted.shuffle(using: &random)
        return Array(sorted.prefix(count))
    }
}
