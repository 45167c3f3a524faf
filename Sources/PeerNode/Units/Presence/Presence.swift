import Crypto
import Gossip
import NodeCore

/// Presence (issue 44; docs/PROTOCOL.md §10, "Presence"): who is online
/// network-wide. Our beacon goes out on every link when a link comes up,
/// every `beaconInterval`, and at once on `/away`, `/back` and `/quit`;
/// others' are checked (`PresenceBoard`, then the signature), passed on
/// once to every other link, and shown in `/who`, the page's people and a
/// `presence` event. Nothing of it is stored: it is not history.
///
/// Given the key that signs ours; owns the board. It answers what to send,
/// pass on and show, and the network node does the sending and showing.
/// Confined to the node's loop.
final class Presence {
    /// Ours goes out again this often (seconds)…
    static let beaconInterval = 60.0
    /// …and each holds for this long: two lost in a row do not make us look gone.
    static let lifetime: UInt16 = 180
    /// A `/quit` says why for this long after.
    static let goneLifetime = PresenceBeacon.maximumLifetime

    /// What became of a beacon a link brought.
    struct Arrival: Equatable {
        /// Dropped (stale, too many changes, a full board, a flooding link, a bad signature): counted as `presence_dropped`.
        var dropped = false
        /// Held already (not newer, or the same again within 10 s): counted as `presence_repeated`.
        var repeated = false
        /// The beacon to pass on to every other link.
        var passOn: PresenceBeacon?
        /// What is shown of its device changed.
        var changed = false
    }

    /// An account's presence, from the best of its devices' beacons.
    struct Status: Equatable {
        /// nil: no beacon of any of its devices holds now.
        var state: PresenceBeacon.State?
        var reason: String
        /// When a beacon of it last came (ms since 1970); nil: never, since this node started.
        var lastSeen: UInt64?

        /// No beacon of it seen since this node started.
        static let unknown = Status(state: nil, reason: "", lastSeen: nil)

        /// "online", "away: lunch", "gone: going home", "last seen 14:02", "not seen".
        var text: String {
            switch state {
            case .online?, .relay?: return state?.name ?? ""
            case let state?: return state.name + (reason.isEmpty ? "" : ": " + reason)
            case nil: return lastSeen.map { "offline, last seen \(Renderer.day($0))" } ?? "not seen"
            }
        }
    }

    private(set) var board: PresenceBoard
    private let identity: SigningKey
    /// What ours says now.
    private(set) var state: PresenceBeacon.State
    private(set) var reason = ""
    private var lastSent = -Double.infinity
    /// Ours as last signed: a new link is sent it again while half its life is left, so a link
    /// coming up does not sign (and flood the network with) a beacon that says nothing new.
    private var last: PresenceBeacon?
    /// The name our beacons carry: a relay's (`--nick`); a person's nick is in their messages.
    var nick: String?

    init(identity: SigningKey, relay: Bool) {
        self.identity = identity
        board = PresenceBoard(me: identity.publicKey)
        state = relay ? .relay : .online
    }

    /// Our beacon, when one is due (`force`: now, whatever the interval).
    func ours(now: Double, wall: UInt64, force: Bool = false) -> PresenceBeacon? {
        guard force || now - lastSent >= Self.beaconInterval else { return nil }
        lastSent = now
        // Each later than the last, even within one millisecond: a `/back` and a `/quit` typed in the
        // same one made the second look like the first again to every board (`PresenceBoard.examine`
        // takes only a later time), so the quit was never seen.
        let time = max(wall, (last?.time ?? 0) &+ 1)
        let beacon = PresenceBeacon.sign(by: identity, time: time, state: state, lifetime: state == .gone ? Self.goneLifetime : Self.lifetime,
                                         nick: nick ?? "", reason: reason)
        last = beacon
        return beacon
    }

    /// What ours says now, as `/who` shows it.
    var ownStatus: Status { Status(state: state, reason: reason, lastSeen: Node.now()) }

    /// `/away REASON`, `/back` (`.online`), `/quit REASON` (`.gone`): ours changes and goes out now.
    func set(_ state: PresenceBeacon.State, reason: String, now: Double, wall: UInt64) -> PresenceBeacon? {
        self.state = state
        self.reason = reason
        return ours(now: now, wall: wall, force: true)
    }

    /// A beacon a link brought: checked, and what to do with it.
    func arrived(_ beacon: PresenceBeacon, from link: LinkID, now: Double, wall: UInt64) -> Arrival {
        switch board.examine(beacon, from: link, now: now, wall: wall) {
        case .check: break
        case .own: return Arrival()
        case .repeated: return Arrival(repeated: true)
        case .stale, .tooManyChanges, .full, .flood: return Arrival(dropped: true)
        }
        guard beacon.isSigned else { return Arrival(dropped: true) }
        return Arrival(passOn: beacon, changed: board.accept(beacon, now: now, wall: wall))
    }

    /// Every beacon that holds now, ours first (what a new link is sent).
    func beaconsForNewLink(now: Double, wall: UInt64) -> [PresenceBeacon] {
        let fresh = last.flatMap { $0.expires > wall &+ UInt64($0.lifetime) * 500 ? $0 : nil }
        return [fresh ?? ours(now: now, wall: wall, force: true)].compactMap { $0 } + board.currentBeacons(now: now)
    }

    func linkDown(_ link: LinkID) { board.linkDown(link) }

    /// The presence of each account in `accounts`, from its devices' beacons
    /// (`account(device)` says whose a device is): online before away before gone.
    func status(of accounts: Set<PublicKey>, account: (PublicKey) -> PublicKey, now: Double) -> [PublicKey: Status] {
        var out: [PublicKey: Status] = [:]
        for (device, entry) in board.entries {
            let owner = account(device)
            guard accounts.contains(owner) else { continue }
            var status = out[owner] ?? .unknown
            status.lastSeen = max(status.lastSeen ?? 0, entry.seenAt)
            if entry.until > now, Self.rank(entry.beacon.state) > Self.rank(status.state) {
                status.state = entry.beacon.state
                status.reason = String(decoding: entry.beacon.reason, as: UTF8.self)
            }
            out[owner] = status
        }
        return out
    }

    private static func rank(_ state: PresenceBeacon.State?) -> Int {
        switch state {
        case .online?, .relay?: 3
        case .away?: 2
        case .gone?: 1
        case nil: 0
        }
    }
}
