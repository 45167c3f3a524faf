import Crypto

/// A change of a private room's membership (docs/PROTOCOL.md §14,
/// "Membership and key epochs"): an envelope of kind `membership` in the
/// room, sealed with the key of the epoch it builds on. Every change but a
/// leave starts a new epoch: a new room key, sealed to each remaining
/// member account's conversation key (so each of its devices opens it).
///
/// A removal (kick, ban, leave) also names, for each device of the
/// removed account, the last of its envelopes the author had: what that
/// device signs past it, with a key of an epoch before the removal, is
/// not shown (a removed member cannot write into the past with a key it kept).
///
///     "PNMB" ‖ action 1 ‖ target account 32 ‖ role 1 ‖ epoch 4 ‖ parent 32
///     ‖ count 2 ‖ count × (member account 32 ‖ its conversation epoch 4 ‖ sealed key 80)
///     ‖ limit count 1 ‖ limit count × (device 32 ‖ last sequence 8)
public struct MembershipEvent: Equatable, Sendable {
    public static let magic = Array("PNMB".utf8)
    /// Members a room's new key is sealed to in one event.
    public static let maximumMembers = 512
    /// `crypto_box_seal` of a 32-byte key: 32 + 48.
    public static let sealedKeySize = 80
    /// Devices of the removed account one removal names (as many as an account may claim).
    public static let maximumLimits = 64
    static let headSize = 4 + 1 + 32 + 1 + 4 + 32 + 2
    static let entrySize = 32 + 4 + sealedKeySize
    static let limitSize = 32 + 8

    public enum Action: UInt8, Sendable {
        /// The room's first event: its author is the owner (epoch 0, no keys).
        case create = 0
        case invite = 1
        case kick = 2
        case ban = 3
        /// Gives the target the role (member or admin).
        case role = 4
        /// The author leaves (no new epoch: someone who stays makes it).
        case leave = 5
        /// A new key, nobody added or removed (on a schedule, or after a leave or a race).
        case rotate = 6
    }

    public enum Role: UInt8, Comparable, Sendable {
        case member = 0, admin = 1, owner = 2
        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
    }

    public struct SealedKey: Equatable, Sendable {
        public let account: PublicKey
        /// Which of the account's conversation keys it is sealed to.
        public let conversationEpoch: UInt32
        public let sealed: [UInt8]
        public init(account: PublicKey, conversationEpoch: UInt32, sealed: [UInt8]) {
            self.account = account
            self.conversationEpoch = conversationEpoch
            self.sealed = sealed
        }
    }

    public let action: Action
    /// The account the change is about (the author's own for create, leave and rotate).
    public let target: PublicKey
    public let role: Role
    /// The epoch this event starts (its parent's + 1; 0 for create; the parent's for leave).
    public let epoch: UInt32
    /// The message id of the event whose epoch this builds on (zeros for create).
    public let parent: MessageID
    public let keys: [SealedKey]
    /// For a removal: each device of the target account and the last of its
    /// sequences that stands (empty for other actions).
    public let limits: [DeviceLimit]

    public struct DeviceLimit: Equatable, Sendable {
        public let device: PublicKey
        public let last: UInt64
        public init(device: PublicKey, last: UInt64) {
            self.device = device
            self.last = last
        }
    }

    public init(action: Action, target: PublicKey, role: Role, epoch: UInt32, parent: MessageID, keys: [SealedKey], limits: [DeviceLimit] = []) {
        self.action = action
        self.target = target
        self.role = role
        self.epoch = epoch
        self.parent = parent
        self.keys = keys
        self.limits = limits
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.headSize + keys.count * Self.entrySize + 1 + limits.count * Self.limitSize)
        w.raw(Self.magic)
        w.u8(action.rawValue)
        w.raw(target.bytes)
        w.u8(role.rawValue)
        w.u32(epoch)
        w.raw(parent.bytes)
        w.u16(UInt16(clamping: keys.count))
        for k in keys {
            w.raw(k.account.bytes)
            w.u32(k.conversationEpoch)
            w.raw(k.sealed)
        }
        w.u8(UInt8(clamping: limits.count))
        for l in limits {
            w.raw(l.device.bytes)
            w.u64(l.last)
        }
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) -> MembershipEvent? {
        var r = ByteReader(bytes)
        guard let magic = try? r.take(4, "magic"), Array(magic) == Self.magic,
              let action = (try? r.u8("action")).flatMap(Action.init(rawValue:)),
              let target = (try? r.take(32, "target")).flatMap({ try? PublicKey(bytes: $0) }),
              let role = (try? r.u8("role")).flatMap(Role.init(rawValue:)),
              let epoch = try? r.u32("epoch"),
              let parent = (try? r.take(32, "parent")).flatMap({ try? MessageID(bytes: $0) }),
              let count = try? r.u16("count"), Int(count) <= maximumMembers,
              r.remaining > Int(count) * entrySize else { return nil }
        var keys: [SealedKey] = []
        for _ in 0..<count {
            guard let account = (try? r.take(32, "account")).flatMap({ try? PublicKey(bytes: $0) }),
                  let conversationEpoch = try? r.u32("conversation epoch"),
                  let sealed = try? r.take(sealedKeySize, "sealed key") else { return nil }
            keys.append(SealedKey(account: account, conversationEpoch: conversationEpoch, sealed: Array(sealed)))
        }
        guard let limitCount = try? r.u8("limit count"), Int(limitCount) <= maximumLimits,
              r.remaining == Int(limitCount) * limitSize else { return nil }
        var limits: [DeviceLimit] = []
        for _ in 0..<limitCount {
            guard let device = (try? r.take(32, "device")).flatMap({ try? PublicKey(bytes: $0) }),
                  let last = try? r.u64("last sequence") else { return nil }
            limits.append(DeviceLimit(device: device, last: last))
        }
        return MembershipEvent(action: action, target: target, role: role, epoch: epoch, parent: parent, keys: keys, limits: limits)
    }
}

/// A private room's key of one epoch (docs/PROTOCOL.md §14), by the
/// membership event that made it (the create's id for the room's first key).
public struct RoomEpochKey: Equatable, Sendable {
    public let room: RoomID
    public let event: MessageID
    public let epoch: UInt32
    public let key: [UInt8]

    public init(room: RoomID, event: MessageID, epoch: UInt32, key: [UInt8]) {
        self.room = room
        self.event = event
        self.epoch = epoch
        self.key = key
    }
}
