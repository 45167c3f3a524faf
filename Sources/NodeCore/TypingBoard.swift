import Crypto
import Gossip

/// Who is typing where (issue 17; docs/PROTOCOL.md §10, "Typing"), pure:
/// notices from links checked for age, replays and floods before anyone
/// pays for a signature check; how long each shows; and how often we send
/// our own. Times: `now` in monotonic seconds, `wall` in milliseconds since
/// 1970 (what notices carry).
public struct TypingBoard: Sendable {
    /// While the person types, one notice of ours per room at most this often.
    public static let sendInterval = 3.0
    /// A typer shows this long after its last notice (a little over two
    /// intervals, so one lost notice does not make it flicker).
    public static let shownFor = 7.0
    /// A notice signed further than this from our clock is refused (stale or from the future).
    public static let maximumSkew: UInt64 = 30_000
    /// Per typer and room, a notice sooner than this after the last one
    /// accepted is dropped (a typer's notices come every `sendInterval`).
    public static let minimumGap: UInt64 = 1_000
    /// Typer-and-room pairs remembered at once (a pair is kept 37 s after its
    /// last notice, for replays). When they are all held, a new pair takes
    /// the place of one brought by the link that brought the most, if its
    /// own link brought fewer; else it is dropped. So a flood of made-up
    /// typers costs nothing kept, and cannot crowd out typers on other links
    /// (one link at its 8 a second would otherwise hold all 256).
    public static let maximumTracked = 256
    /// Notices one link may bring per second; the rest are dropped.
    public static let maximumPerLinkPerSecond = 8
    /// Notices passed on to other links, node-wide: this many at once, then
    /// this many a second (honest typers send one per room every
    /// `sendInterval`, so about 100 people typing at once). Past it a notice
    /// is still shown here but goes no further: a member's made-up typers
    /// cannot make a node with many links (a relay) send each to every link.
    /// The budget is shared fairly: each link that brought a notice in the
    /// last `sendInterval` may pass on its equal part of it (at once, then
    /// a second), so four links at their 8 a second cannot use it all and
    /// leave nothing for a fifth that brings one honest typer.
    public static let maximumPassedOnPerSecond = 32

    public enum Verdict: Equatable, Sendable {
        /// New: check its signature, then `accept` it.
        case check
        /// Signed too long ago or ahead of our clock.
        case stale
        /// Not newer than `minimumGap` after the last accepted from this typer and room (a replay, or too often).
        case repeated
        /// `maximumTracked` pairs are held and none has expired.
        case full
        /// The link brought `maximumPerLinkPerSecond` this second already.
        case flood
        /// Ours, come back by another way.
        case own
    }

    struct Pair: Hashable, Sendable {
        let typer: PublicKey
        let room: RoomID
    }

    let me: PublicKey
    /// Per pair: the signed time of the last accepted notice, until when it
    /// shows, and the link whose notice first brought it.
    private var pairs: [Pair: (time: UInt64, until: Double, link: LinkID)] = [:]
    private var lastSent: [RoomID: Double] = [:]
    /// Per link: the second counted (monotonic, whole) and notices in it.
    private var linkWindows: [LinkID: (second: Double, count: Int)] = [:]
    /// Notices that may still be passed on.
    private var passOnBudget: TokenBucket?
    /// Per link: its part of `passOnBudget` left.
    private var linkPassOn: [LinkID: TokenBucket] = [:]
    /// Per link: when it last brought a notice (it shares the pass-on budget for `sendInterval`).
    private var lastBrought: [LinkID: Double] = [:]

    public init(me: PublicKey) { self.me = me }

    /// The cheap checks on a notice that `link` brought.
    public mutating func examine(_ notice: TypingNotice, from link: LinkID, now: Double, wall: UInt64) -> Verdict {
        lastBrought[link] = now
        let second = now.rounded(.down)
        var window = linkWindows[link].flatMap { $0.second == second ? $0 : nil } ?? (second: second, count: 0)
        guard window.count < Self.maximumPerLinkPerSecond else { return .flood }
        window.count += 1
        linkWindows[link] = window
        if notice.typer == me { return .own }
        let skew = notice.time > wall ? notice.time - wall : wall - notice.time
        guard skew <= Self.maximumSkew else { return .stale }
        let pair = Pair(typer: notice.typer, room: notice.room)
        if let last = pairs[pair] {
            return notice.time >= last.time &+ Self.minimumGap ? .check : .repeated
        }
        if pairs.count >= Self.maximumTracked { expire(now: now) }
        return pairs.count < Self.maximumTracked || crowdedOut(by: link) != nil ? .check : .full
    }

    /// With every place held: the pair that a notice `link` brought would
    /// take the place of, one of those the link holding the most brought
    /// (the one shown longest ago), when `link` brought fewer; else nil.
    private func crowdedOut(by link: LinkID) -> Pair? {
        var held: [LinkID: Int] = [:]
        for value in pairs.values { held[value.link, default: 0] += 1 }
        guard let hog = held.filter({ $0.key != link }).max(by: { ($0.value, $1.key) < ($1.value, $0.key) }),
              held[link, default: 0] < hog.value else { return nil }
        return pairs.filter { $0.value.link == hog.key }.min { ($0.value.until, $0.value.time) < ($1.value.until, $1.value.time) }?.key
    }

    /// A notice that passed `examine` and whose signature holds: it shows
    /// now. False when its typer was already shown typing there.
    @discardableResult
    public mutating func accept(_ notice: TypingNotice, from link: LinkID, now: Double) -> Bool {
        let pair = Pair(typer: notice.typer, room: notice.room)
        let known = pairs[pair]
        if known == nil, pairs.count >= Self.maximumTracked {
            guard let out = crowdedOut(by: link) else { return false }
            pairs[out] = nil
        }
        pairs[pair] = (notice.time, now + Self.shownFor, known?.link ?? link)
        return (known?.until ?? 0) <= now
    }

    /// Whether an accepted notice that `link` brought may be passed on now
    /// (`maximumPassedOnPerSecond`, the link's part of it); if so, it is counted.
    public mutating func mayPassOn(from link: LinkID, now: Double) -> Bool {
        let limit = Double(Self.maximumPassedOnPerSecond)
        let sharing = max(1, lastBrought.count { $0.key != link && now - $0.value < Self.sendInterval } + 1)
        let share = limit / Double(sharing)
        var part = linkPassOn[link] ?? TokenBucket(capacity: share, now: now)
        part.refill(now: now, rate: share, capacity: share)
        var budget = passOnBudget ?? TokenBucket(capacity: limit, now: now)
        budget.refill(now: now, rate: limit, capacity: limit)
        defer { passOnBudget = budget; linkPassOn[link] = part }
        guard budget.hasToken, part.hasToken else { return false }
        budget.take()
        part.take()
        return true
    }

    /// `typer` posted in `room`: no longer shown typing there (its time is kept against replays).
    public mutating func posted(by typer: PublicKey, in room: RoomID, now: Double) {
        let pair = Pair(typer: typer, room: room)
        if let last = pairs[pair] { pairs[pair] = (last.time, min(last.until, now), last.link) }
    }

    /// Who shows as typing in `room` now, in key order.
    public func typing(in room: RoomID, now: Double) -> [PublicKey] {
        pairs.compactMap { $0.key.room == room && $0.value.until > now ? $0.key.typer : nil }.sorted()
    }

    /// Forgets pairs past their showing and past `maximumSkew` (a replay of
    /// their last notice would be stale by then), and links' old windows.
    /// True when someone stopped showing.
    @discardableResult
    public mutating func expire(now: Double) -> Bool {
        let before = pairs.count { $0.value.until > now }
        let keep = Double(Self.maximumSkew) / 1000
        pairs = pairs.filter { $0.value.until > now - keep }
        linkWindows = linkWindows.filter { $0.value.second >= now.rounded(.down) }
        lastBrought = lastBrought.filter { now - $0.value < Self.sendInterval }
        linkPassOn = linkPassOn.filter { lastBrought[$0.key] != nil }
        return pairs.count { $0.value.until > now } != before
    }

    /// Whether to send a notice of ours for `room` now (and, if so, counts it sent).
    public mutating func shouldSend(in room: RoomID, now: Double) -> Bool {
        if let last = lastSent[room], now - last < Self.sendInterval { return false }
        lastSent[room] = now
        return true
    }

    /// We posted in `room`: our next keystroke there sends a notice at once.
    public mutating func sent(messageIn room: RoomID) { lastSent[room] = nil }

    /// The link closed.
    public mutating func linkClosed(_ link: LinkID) {
        linkWindows[link] = nil
        lastBrought[link] = nil
        linkPassOn[link] = nil
    }
}
