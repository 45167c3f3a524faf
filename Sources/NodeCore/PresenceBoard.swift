import Crypto
import Gossip

/// Who is online network-wide, from presence beacons (docs/PROTOCOL.md §10,
/// "Presence"). Pure: `examine` says whether a beacon is worth its
/// signature check, `accept` takes one whose signature holds. Nothing of it
/// is stored; a device whose beacon expired is remembered (when it was last
/// seen) while there is room.
///
/// Bounded against a hostile peer: at most `maximumTracked` devices, a
/// device's beacons at most one per `minimumInterval`, a link's at most
/// `linkBurst` at once and `linkRate` a second after that; beacons dated
/// further than `maximumSkew` from our clock, or expired, are refused.
public struct PresenceBoard: Sendable {
    /// Devices remembered at most (current or last seen).
    public static let maximumTracked = 4_096
    /// A device's beacons that say what it said already, closer together
    /// than this (seconds, ours), are dropped…
    public static let minimumInterval = 10.0
    /// …and those that change it (`/away`, `/back`) may come this many at
    /// once, then one per `changeInterval` seconds.
    public static let changeBurst = 5.0
    public static let changeInterval = 10.0
    /// Beacons a link may bring at once (a new link is sent every current one)…
    public static let linkBurst = Double(maximumTracked)
    /// …and a second after that.
    public static let linkRate = 50.0
    /// Milliseconds a beacon's time may be ahead of our clock.
    public static let maximumSkew: UInt64 = 120_000

    public enum Verdict: Equatable, Sendable {
        /// Worth checking its signature, then `accept`.
        case check
        /// Our own, come back.
        case own
        /// Expired, or dated too far ahead.
        case stale
        /// Not newer than the one held for its device, or saying the same again too soon after it.
        case repeated
        /// A change beyond the device's budget of changes.
        case tooManyChanges
        /// Every place is held by a current beacon.
        case full
        /// Its link brought more than its budget.
        case flood
    }

    public struct Entry: Sendable {
        public let beacon: PresenceBeacon
        /// Our clock (seconds) when it stops holding, and when it came.
        public let until: Double
        public let arrived: Double
        /// Our wall clock (ms since 1970) when it came: "last seen".
        public let seenAt: UInt64
        /// The device's budget of changes.
        var changes: TokenBucket
    }

    public let me: PublicKey
    public private(set) var entries: [PublicKey: Entry] = [:]
    private var buckets: [LinkID: TokenBucket] = [:]

    public init(me: PublicKey) {
        self.me = me
    }

    public mutating func examine(_ beacon: PresenceBeacon, from link: LinkID, now: Double, wall: UInt64) -> Verdict {
        var bucket = buckets[link] ?? TokenBucket(capacity: Self.linkBurst, now: now)
        defer { buckets[link] = bucket }
        guard bucket.take(now: now, rate: Self.linkRate, capacity: Self.linkBurst) else { return .flood }
        if beacon.device == me { return .own }
        guard beacon.expires > wall, beacon.time <= wall &+ Self.maximumSkew else { return .stale }
        if var held = entries[beacon.device] {
            guard beacon.time > held.beacon.time else { return .repeated }
            if beacon.state == held.beacon.state, beacon.reason == held.beacon.reason { return now - held.arrived >= Self.minimumInterval ? .check : .repeated }
            guard held.changes.take(now: now, rate: 1 / Self.changeInterval, capacity: Self.changeBurst) else { return .tooManyChanges }
            entries[beacon.device] = held
            return .check
        }
        if entries.count >= Self.maximumTracked { forgetOldest(now: now) }
        return entries.count < Self.maximumTracked ? .check : .full
    }

    /// A beacon that passed `examine` and whose signature holds. True when
    /// it changes what is shown of its device (new, or another state or reason).
    @discardableResult
    public mutating func accept(_ beacon: PresenceBeacon, now: Double, wall: UInt64) -> Bool {
        let before = current(beacon.device, now: now)
        let left = Double(beacon.expires &- min(wall, beacon.expires)) / 1000
        let changes = entries[beacon.device]?.changes ?? TokenBucket(capacity: Self.changeBurst, now: now)
        entries[beacon.device] = Entry(beacon: beacon, until: now + min(left, Double(beacon.lifetime)), arrived: now, seenAt: wall, changes: changes)
        return before?.state != beacon.state || before?.reason != beacon.reason
    }

    /// The beacon that holds for `device` now, if any.
    public func current(_ device: PublicKey, now: Double) -> PresenceBeacon? {
        entries[device].flatMap { $0.until > now ? $0.beacon : nil }
    }

    /// Every beacon that holds now, by device (what a new link is sent).
    public func currentBeacons(now: Double) -> [PresenceBeacon] {
        entries.values.filter { $0.until > now }.map(\.beacon).sorted { $0.device < $1.device }
    }

    /// The links' budgets of a link gone.
    public mutating func linkDown(_ link: LinkID) { buckets[link] = nil }

    /// With every place held: the entry that stopped holding longest ago
    /// makes room (a current one never does).
    private mutating func forgetOldest(now: Double) {
        guard let oldest = entries.filter({ $0.value.until <= now }).min(by: { $0.value.until < $1.value.until })?.key else { return }
        entries[oldest] = nil
    }
}
