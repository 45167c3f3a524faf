import Crypto

/// A link as the replicator knows it: a small number the shell picks.
public typealias LinkID = Int

/// Vector-clock replication between linked nodes, as a pure state machine:
/// no sockets, timers or database inside (STYLE.md §1). The shell feeds it
/// events and performs the actions it returns; time and randomness come in.
///
/// - On link-up each side sends its full clock; each then sends, per author in
///   sequence order, what the other's clock lacks (`.sendStored`).
/// - New envelopes (own or received) are pushed to every link whose known
///   clock lacks them. Duplicates are dropped by (author, sequence) against
///   the local clock and what is already being verified, before any
///   signature or decryption work.
/// - A periodic clock delta per link repairs whatever was lost; a peer's
///   full clock replaces what we believed of it, so a peer that lost its
///   database gets everything back.
/// - An envelope past a gap makes the replicator request the gap from the
///   link it came from.
/// - A link that keeps sending envelopes that fail verification is dropped.
public struct Replicator {
    public enum Action: Equatable, Sendable {
        case send(LinkID, GossipMessage)
        /// Send `link` the stored envelopes of `author` with sequences `from...through`, in order, in batches.
        case sendStored(LinkID, author: PublicKey, from: UInt64, through: UInt64)
        /// Verify these (signature, chain) and store them; answer with `stored`.
        case verifyAndStore(LinkID, [CarriedEnvelope])
        case disconnect(LinkID, reason: String)
    }

    /// Seconds between clock exchanges on a link (with up to 25% jitter).
    public static let exchangeInterval = 15.0
    /// Envelopes that failed verification a link may send before it is dropped.
    public static let invalidLimit = 16
    /// Most envelopes waiting for verification at once (more are dropped and
    /// fetched again later through the clock exchange).
    public static let pendingLimit = 100_000
    /// Envelopes per `sendStored` batch message.
    public static let batchSize = 256

    struct Link {
        var known: VectorClock
        var lastSent: VectorClock
        var nextExchange: Double
        var invalid = 0
        var exchanges = 0
    }

    /// Every this many periodic exchanges, the whole clock goes instead of a
    /// delta, so an assumption about the peer that went wrong (a lost push)
    /// is corrected even when nothing changed on its side.
    public static let fullClockEvery = 4

    public let me: PublicKey
    /// Author → highest contiguous sequence held here.
    public private(set) var clock: VectorClock
    private var links: [LinkID: Link] = [:]
    /// (author, sequence) handed out for verification and not yet answered.
    private var pending: Set<Dependency> = []
    private var random: any RandomNumberGenerator

    public init(me: PublicKey, clock: VectorClock, random: some RandomNumberGenerator) {
        self.me = me
        self.clock = clock
        self.random = random
    }

    public var linkIDs: [LinkID] { links.keys.sorted() }

    /// What we believe `link` holds.
    public func knownClock(of link: LinkID) -> VectorClock? { links[link]?.known }

    private mutating func jittered(_ now: Double) -> Double {
        now + Self.exchangeInterval * Double.random(in: 0.75...1.0, using: &random)
    }

    // MARK: events

    public mutating func linkUp(_ link: LinkID, now: Double) -> [Action] {
        links[link] = Link(known: VectorClock(), lastSent: clock, nextExchange: jittered(now))
        return [.send(link, .clock(entries: entries(of: clock), full: true))]
    }

    public mutating func linkDown(_ link: LinkID) {
        links[link] = nil
    }

    public mutating func clockReceived(_ link: LinkID, entries: [Dependency], full: Bool) -> [Action] {
        guard var l = links[link] else { return [] }
        if full {
            // A full clock is the truth about the peer, even if it went back.
            l.known = VectorClock(Dictionary(entries.map { ($0.author, $0.sequence) }, uniquingKeysWith: max))
        } else {
            // What the peer reports replaces what we assumed (a push may have been lost).
            for e in entries { l.known[e.author] = e.sequence }
        }
        var actions: [Action] = []
        for (author, ours) in clock.entries.sorted(by: { $0.key < $1.key }) where ours > l.known[author] {
            actions.append(.sendStored(link, author: author, from: l.known[author] + 1, through: ours))
            l.known[author] = ours
        }
        links[link] = l
        return actions
    }

    public mutating func requestReceived(_ link: LinkID, ranges: [GossipRequest]) -> [Action] {
        guard links[link] != nil else { return [] }
        return ranges.compactMap { r in
            let last = min(clock[r.author], r.from &+ max(r.count, 1) &- 1)
            guard r.from >= 1, r.from <= last else { return nil }
            return .sendStored(link, author: r.author, from: r.from, through: last)
        }
    }

    /// Envelopes from a link: the ones already held or already being checked
    /// are dropped here, before any verification.
    public mutating func envelopesReceived(_ link: LinkID, _ batch: [CarriedEnvelope]) -> [Action] {
        guard var l = links[link] else { return [] }
        var fresh: [CarriedEnvelope] = []
        for c in batch {
            let e = c.envelope
            // The sender holds it: remember, so we do not push it back.
            l.known[e.author] = max(l.known[e.author], e.sequence)
            let key = Dependency(author: e.author, sequence: e.sequence)
            guard e.sequence > clock[e.author], !pending.contains(key), pending.count < Self.pendingLimit,
                  c.hops < CarriedEnvelope.maximumHops else { continue }
            pending.insert(key)
            fresh.append(c)
        }
        links[link] = l
        return fresh.isEmpty ? [] : [.verifyAndStore(link, fresh)]
    }

    /// The shell's answer to `verifyAndStore`: what was stored, how the
    /// clock moved, and how many failed verification.
    public mutating func stored(from link: LinkID?, checked: [CarriedEnvelope], inserted: [CarriedEnvelope], invalid: Int,
                                newClock: [Dependency]) -> [Action] {
        for c in checked { pending.remove(Dependency(author: c.envelope.author, sequence: c.envelope.sequence)) }
        for d in newClock { clock[d.author] = max(clock[d.author], d.sequence) }
        var actions: [Action] = []
        if let link, var l = links[link] {
            l.invalid += invalid
            links[link] = l
            if l.invalid > Self.invalidLimit {
                links[link] = nil
                actions.append(.disconnect(link, reason: "\(l.invalid) envelopes failed verification"))
            } else {
                // Held past a gap: ask the same link for what is missing.
                var ranges: [GossipRequest] = []
                var maxSeen: [PublicKey: UInt64] = [:]
                for c in inserted { maxSeen[c.envelope.author] = max(maxSeen[c.envelope.author] ?? 0, c.envelope.sequence) }
                for (author, seen) in maxSeen.sorted(by: { $0.key < $1.key }) where seen > clock[author] + 1 {
                    ranges.append(GossipRequest(author: author, from: clock[author] + 1, count: seen - clock[author] - 1))
                }
                if !ranges.isEmpty { actions.append(.send(link, .request(ranges))) }
            }
        }
        actions += push(inserted.map { CarriedEnvelope(hops: $0.hops &+ 1, envelope: $0.envelope) }, except: link)
        return actions
    }

    /// This node posted (already stored durably).
    public mutating func localPost(_ envelope: Envelope) -> [Action] {
        clock[envelope.author] = max(clock[envelope.author], envelope.sequence)
        return push([CarriedEnvelope(hops: 0, envelope: envelope)], except: nil)
    }

    /// Time passes: clock deltas to links whose exchange is due.
    public mutating func tick(now: Double) -> [Action] {
        var actions: [Action] = []
        for id in links.keys.sorted() {
            guard var l = links[id], now >= l.nextExchange else { continue }
            l.exchanges += 1
            if l.exchanges % Self.fullClockEvery == 0 {
                actions.append(.send(id, .clock(entries: entries(of: clock), full: true)))
            } else {
                let delta = entries(of: clock).filter { $0.sequence != l.lastSent[$0.author] }
                actions.append(.send(id, .clock(entries: delta, full: false)))
            }
            l.lastSent = clock
            l.nextExchange = jittered(now)
            links[id] = l
        }
        return actions
    }

    // MARK: helpers

    private mutating func push(_ batch: [CarriedEnvelope], except: LinkID?) -> [Action] {
        guard !batch.isEmpty else { return [] }
        var actions: [Action] = []
        for id in links.keys.sorted() where id != except {
            guard var l = links[id] else { continue }
            let lacking = batch.filter { $0.envelope.sequence > l.known[$0.envelope.author] && $0.hops < CarriedEnvelope.maximumHops }
            guard !lacking.isEmpty else { continue }
            for c in lacking { l.known[c.envelope.author] = max(l.known[c.envelope.author], c.envelope.sequence) }
            links[id] = l
            actions.append(.send(id, .envelopes(lacking)))
        }
        return actions
    }

    private func entries(of clock: VectorClock) -> [Dependency] {
        clock.entries.map { Dependency(author: $0.key, sequence: $0.value) }.sorted { $0.author < $1.author }
    }
}
