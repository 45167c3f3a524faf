import Crypto
import Gossip

/// What a private room's membership events say, applied in one order every
/// node agrees on (docs/PROTOCOL.md §14, "Membership and key epochs").
/// Pure: the node feeds it the events it can open; it says who is in the
/// room with which role, which event's key is the room's current one, and
/// whether that key must be replaced.
public struct RoomMembership: Equatable, Sendable {
    /// A membership event as delivered: its envelope's id, author's account,
    /// and the device and sequence that signed it.
    public struct Event: Equatable, Sendable {
        public let id: MessageID
        public let author: PublicKey
        public let device: PublicKey
        public let sequence: UInt64
        /// The envelope's timestamp (ms since 1970, as its author's clock said).
        public let timestamp: UInt64
        public let event: MembershipEvent
        public init(id: MessageID, author: PublicKey, device: PublicKey? = nil, sequence: UInt64 = 1, timestamp: UInt64 = 0, event: MembershipEvent) {
            self.id = id
            self.author = author
            self.device = device ?? author
            self.sequence = sequence
            self.timestamp = timestamp
            self.event = event
        }
    }

    /// Where a removal cut an account off: what any of its devices signs
    /// with a key of `epoch` (the removal's) or before does not stand past
    /// that device's `limits` entry, and a device the removal does not name
    /// (claimed after it, or unknown to its author) is cut from its first
    /// sequence on.
    struct Cut: Equatable, Sendable {
        /// The removal that made it (which it does not cut: a leave is
        /// signed after the last sequence it names, when it names none).
        let removal: MessageID
        let epoch: UInt32
        let limits: [PublicKey: UInt64]

        func cuts(_ id: MessageID?, device: PublicKey, sequence: UInt64, sealedAt sealed: UInt32) -> Bool {
            id != removal && sealed <= epoch && sequence > (limits[device] ?? 0)
        }
    }

    public private(set) var owner: PublicKey?
    public private(set) var roles: [PublicKey: MembershipEvent.Role] = [:]
    public private(set) var banned: Set<PublicKey> = []
    /// The current epoch: its number and the event that made it (`create`'s id for 0).
    public private(set) var head: (epoch: UInt32, event: MessageID)?
    /// When the current epoch's event says it was made.
    public private(set) var headTimestamp: UInt64 = 0
    /// Events that did not hold (author not allowed, target not a member, wrong epoch).
    public private(set) var refused: [MessageID] = []
    /// The accounts the current epoch's key was sealed to.
    public private(set) var sealedTo: Set<PublicKey> = []
    /// For each account the current key was sealed to, the conversation
    /// epoch it was sealed under.
    public private(set) var sealedEpochs: [PublicKey: UInt32] = [:]
    /// The members once every event of an epoch is applied, by epoch.
    private var membersAtEnd: [UInt32: Set<PublicKey>] = [:]
    /// Who left during an epoch (still a writer of what they sealed in it).
    private var leftIn: [UInt32: Set<PublicKey>] = [:]
    /// Everyone who was ever a member (the first key, epoch 0, is theirs).
    private var everMember: Set<PublicKey> = []
    /// The accounts removals cut off, from the removals that held.
    private var cuts: [PublicKey: [Cut]] = [:]
    /// The room this state is of, and the create this node pinned as its
    /// founding one when the room's id commits to none (`founds`).
    private let room: RoomID
    private let pinned: MessageID?

    public static func == (a: Self, b: Self) -> Bool {
        a.room == b.room && a.pinned == b.pinned && a.owner == b.owner && a.roles == b.roles && a.banned == b.banned && a.head?.epoch == b.head?.epoch
            && a.head?.event == b.head?.event && a.headTimestamp == b.headTimestamp && a.refused == b.refused && a.sealedTo == b.sealedTo && a.sealedEpochs == b.sealedEpochs
            && a.membersAtEnd == b.membersAtEnd && a.leftIn == b.leftIn && a.everMember == b.everMember && a.cuts == b.cuts
    }

    /// The state of `room` after `events` (any order: they are sorted
    /// here). `pinned` is the create this node took as the room's founding
    /// one, for a room whose id commits to no create (made before ids did);
    /// see `founds`. A removed member's events past its cut do not hold;
    /// since whether a removal holds may depend on them, the rules run
    /// again without them, a fixed number of times (the result depends
    /// only on the set).
    public init(_ events: [Event], room: RoomID, pinned: MessageID? = nil) {
        var kept = events
        var state = RoomMembership(applying: kept, room: room, pinned: pinned)
        for _ in 0..<Self.cutRounds {
            let standing = kept.filter { state.stands($0) }
            if standing.count == kept.count { break }
            kept = standing
            state = RoomMembership(applying: kept, room: room, pinned: pinned)
        }
        let cutOff = Set(events.map(\.id)).subtracting(kept.map(\.id))
        state.refused = (state.refused + cutOff).sorted()
        self = state
    }

    /// Passes of the cut rule (each can only drop events a removal that
    /// held cut off; three settle any history a removed member can forge).
    static let cutRounds = 3

    /// Whether an event stands under the cuts: a device of a removed
    /// account makes no change on its removal's epoch or before past its
    /// limit (a race with its own removal included).
    private func stands(_ e: Event) -> Bool {
        !isCut(e.id, e.author, device: e.device, sequence: e.sequence, sealedAt: e.event.epoch)
    }

    private func isCut(_ id: MessageID?, _ account: PublicKey, device: PublicKey, sequence: UInt64, sealedAt epoch: UInt32) -> Bool {
        (cuts[account] ?? []).contains { $0.cuts(id, device: device, sequence: sequence, sealedAt: epoch) }
    }

    /// Whether `e` founds `room`: a create (epoch 0) whose author's account
    /// is its target and to which the room id commits,
    /// `room = RoomID.privateRoom(founder: target, salt: parent)` (the salt
    /// rides in the create's parent field), so no other account can make
    /// one; or, in a room whose id commits to none (made before ids did),
    /// the create this node pinned on first sight or from its invite.
    public static func founds(_ e: Event, room: RoomID, pinned: MessageID?) -> Bool {
        guard e.event.action == .create, e.event.epoch == 0 else { return false }
        if e.id == pinned { return true }
        return e.event.target == e.author && RoomID.privateRoom(founder: e.author, salt: e.event.parent.bytes) == room
    }

    private init(applying events: [Event], room: RoomID, pinned: MessageID?) {
        self.room = room
        self.pinned = pinned
        // Only the founder's create holds (if it made two, the smaller id
        // is epoch 0 and the chain may start from either); every other
        // create, whatever its id, changes nothing.
        let creates = events.filter { Self.founds($0, room: room, pinned: pinned) }.sorted { $0.id < $1.id }
        let roots = Set(creates.map(\.id))
        guard let create = creates.first else {
            refused = events.map(\.id)
            return
        }
        owner = create.author
        roles[create.author] = .owner
        head = (0, create.id)
        headTimestamp = create.timestamp
        sealedTo = [create.author]
        refused = events.filter { $0.event.action == .create && !roots.contains($0.id) }.map(\.id)
        membersAtEnd[0] = [create.author]
        everMember = [create.author]
        var keyed: [MessageID: Event] = [:]
        var children: [MessageID: [Event]] = [:]
        // In an epoch, the changes that start it come first, then the leaves
        // made during it (a leave keeps its parent's epoch): a member invited
        // at epoch e who leaves at once is in the room before it leaves it.
        let order = { (e: Event) in (e.event.epoch, e.event.action == .leave ? 1 : 0, e.id) }
        for e in events.filter({ $0.event.action != .create }).sorted(by: { order($0) < order($1) }) {
            let applied = apply(e)
            // Sorted by epoch: the last assignment for an epoch is its end.
            membersAtEnd[e.event.epoch] = Set(roles.keys)
            guard applied else {
                refused.append(e.id)
                continue
            }
            everMember.formUnion(roles.keys)
            if e.event.action == .leave { leftIn[e.event.epoch, default: []].insert(e.author) }
            if [.kick, .ban, .leave].contains(e.event.action) {
                // Only the target account's devices are cut: a limit naming
                // anyone else's device is never looked up.
                let limits = Dictionary(e.event.limits.map { ($0.device, $0.last) }, uniquingKeysWith: min)
                cuts[e.event.target, default: []].append(Cut(removal: e.id, epoch: e.event.epoch, limits: limits))
            }
            if e.event.action != .leave {
                keyed[e.id] = e
                children[e.event.parent, default: []].append(e)
            }
        }
        // The key chain: from the founding create(s), at each epoch the child with the smallest id.
        var current = roots
        while let next = nextEpoch(after: current, children) {
            head = (next.event.epoch, next.id)
            headTimestamp = next.timestamp
            sealedTo = Set(next.event.keys.map { $0.account })
            sealedEpochs = Dictionary(next.event.keys.map { ($0.account, $0.conversationEpoch) }, uniquingKeysWith: max)
            current = [next.id]
        }
    }

    /// The event that starts the epoch after the head: of the children of
    /// `parents` at that epoch, the one with the smallest id.
    private func nextEpoch(after parents: Set<MessageID>, _ children: [MessageID: [Event]]) -> Event? {
        let wanted: UInt32 = (head?.epoch ?? 0) + 1
        var best: Event?
        for parent in parents {
            for child in children[parent] ?? [] where child.event.epoch == wanted {
                if best.map({ child.id < $0.id }) ?? true { best = child }
            }
        }
        return best
    }

    /// Applies one event if its author may make it; false if not.
    private mutating func apply(_ e: Event) -> Bool {
        let event = e.event
        guard let authorRole = roles[e.author], event.epoch >= 1 || event.action == .leave else { return false }
        switch event.action {
        case .create:
            return false
        case .invite:
            guard authorRole >= .admin, !banned.contains(event.target), roles[event.target] == nil,
                  event.role <= .admin, event.role < authorRole || authorRole == .owner else { return false }
            roles[event.target] = event.role
        case .kick, .ban:
            if let targetRole = roles[event.target] {
                guard event.target != e.author, authorRole > targetRole else { return false }
                roles[event.target] = nil
            } else {
                // A ban of someone already out still bans; a kick of someone out does nothing.
                guard event.action == .ban, authorRole >= .admin else { return false }
            }
            if event.action == .ban { banned.insert(event.target) }
        case .role:
            guard authorRole == .owner, event.target != e.author, roles[event.target] != nil, event.role <= .admin else { return false }
            roles[event.target] = event.role
        case .leave:
            guard event.target == e.author else { return false }
            roles[e.author] = nil
            if owner == e.author { owner = nil }
        case .rotate:
            // With no owner or admin left, the member with the smallest key keeps the room going.
            guard authorRole >= .admin || (!roles.values.contains { $0 >= .admin } && roles.keys.min() == e.author) else { return false }
        }
        return true
    }

    /// Whether `account` may have written what was sealed with a key of
    /// `epoch`, signed by `device` at `sequence`: the account was a member
    /// when that epoch's changes were done (or left during it), and no
    /// removal of the account cut the device off before that sequence (a
    /// device the removal did not name is cut from the start). Epoch 0 is the
    /// room's first key, which rooms from before membership events shared
    /// with everyone: anyone who was ever a member.
    public func mayHaveWritten(_ account: PublicKey, device: PublicKey? = nil, sequence: UInt64 = 0, sealedAt epoch: UInt32) -> Bool {
        if isCut(nil, account, device: device ?? account, sequence: sequence, sealedAt: epoch) { return false }
        guard epoch > 0 else { return everMember.contains(account) }
        if leftIn[epoch]?.contains(account) == true { return true }
        // An epoch with no events of its own (a gap) keeps the last state before it.
        guard let known = membersAtEnd.keys.filter({ $0 <= epoch }).max() else { return false }
        return membersAtEnd[known]?.contains(account) == true
    }

    /// How long a room key is used at most: the rekeyer makes a new one
    /// when the current epoch is this old (7 days, in ms).
    public static let rotationInterval: UInt64 = 7 * 24 * 3_600 * 1_000
    /// A current epoch dated further ahead of the rekeyer's clock than this
    /// is replaced too: a date from the future must not stop rotation (5 min, in ms).
    public static let maximumFutureSkew: UInt64 = 5 * 60 * 1_000

    /// Whether the schedule asks for a new key at `now` (ms since 1970): a
    /// room with members besides its founder whose key is `rotationInterval`
    /// old, or dated past `now` + `maximumFutureSkew`.
    public func rotationDue(now: UInt64) -> Bool {
        guard head != nil, roles.count > 1 else { return false }
        if headTimestamp > now, headTimestamp - now > Self.maximumFutureSkew { return true }
        return now >= headTimestamp && now - headTimestamp >= Self.rotationInterval
    }

    /// Whether the current key must be replaced: it was sealed to someone no
    /// longer in the room (a race, or a leave), or a member lacks it.
    public var needsNewKey: Bool { head != nil && sealedTo != Set(roles.keys) }

    /// Whether the current key reached someone removed: nobody posts with it.
    public var keyIsTainted: Bool { head != nil && !sealedTo.isSubset(of: Set(roles.keys)) }

    /// Who makes the replacement key when one is needed: the owner, else
    /// the admin with the smallest key, else (nobody above a member left)
    /// the member with the smallest key: one account, so no new race, and
    /// a room whose owner left is never stuck with a tainted key.
    public var rekeyer: PublicKey? {
        if let owner, roles[owner] == .owner { return owner }
        return roles.filter { $0.value == .admin }.keys.min() ?? roles.keys.min()
    }
}
