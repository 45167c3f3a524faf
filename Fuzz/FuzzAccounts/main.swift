import Crypto
import FuzzSupport
import Gossip
import NodeCore

// libFuzzer entry: what accounts and private rooms read from the network
// (docs/PROTOCOL.md §14, §15). The input is tried as each content layout
// (membership event, new conversation key, follow, grant, certificate,
// revocation): whatever decodes must encode to what decodes the same. Then
// it drives a room's membership rules as a list of events: the state must
// not depend on the order they came in. Must never crash.

/// Four accounts and sixteen message ids the events are made of.
let keys = (1...4).compactMap { try? PublicKey(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
let ids = (1...16).compactMap { try? MessageID(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
/// The room founded by the first account (salt: 32 zero bytes, a create whose
/// parent is zero); a second room, whose id commits to nobody, is read with
/// the create of id 1 pinned.
let room = keys.first.map { RoomID.privateRoom(founder: $0, salt: MessageID.zero.bytes) } ?? RoomID.random()
let legacyRoom = RoomID.random()

/// Events from the input, 8 bytes each: action, author, target, role, epoch,
/// parent, sequence, and whether the removal names the target's limit (and,
/// in the same byte, whether the event comes from a second device of its
/// author, which no removal names).
func events(_ bytes: [UInt8]) -> [RoomMembership.Event] {
    var out: [RoomMembership.Event] = []
    var i = 0
    while i + 8 <= bytes.count, out.count < ids.count {
        let b = Array(bytes[i..<(i + 8)])
        i += 8
        guard let action = MembershipEvent.Action(rawValue: b[0] % 7), let role = MembershipEvent.Role(rawValue: b[3] % 3) else { continue }
        let author = keys[Int(b[1]) % keys.count], target = keys[Int(b[2]) % keys.count]
        let parent = b[5] % 4 == 0 ? MessageID.zero : ids[Int(b[5]) % ids.count]
        let sealed = keys.filter { _ in b[7] & 1 == 0 }.map {
            MembershipEvent.SealedKey(account: $0, conversationEpoch: 0, sealed: [UInt8](repeating: 0, count: MembershipEvent.sealedKeySize))
        }
        let limits = b[7] & 2 == 0 ? [] : [MembershipEvent.DeviceLimit(device: target, last: UInt64(b[6] / 2))]
        let event = MembershipEvent(action: action, target: target, role: role, epoch: UInt32(b[4] % 8), parent: parent, keys: sealed, limits: limits)
        let device = b[7] & 4 == 0 ? author : keys[(Int(b[1]) + 1) % keys.count]
        out.append(RoomMembership.Event(id: ids[out.count], author: author, device: device, sequence: UInt64(b[6]), timestamp: UInt64(b[6]) * 1_000, event: event))
    }
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAccounts(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    invariant(keys.count == 4 && ids.count == 16, "the fuzz target's keys could not be made")
    if let e = MembershipEvent.decode(bytes) {
        invariant(e.encoded == bytes, "a membership event re-encodes to other bytes")
    }
    if let a = ConversationKeyAnnouncement.decode(bytes) {
        invariant(a.encoded == bytes, "a conversation key announcement re-encodes to other bytes")
    }
    if let f = FollowChange.decode(bytes) {
        invariant(FollowChange.decode(f.encoded) == f, "a follow change does not survive its own encoding")
    }
    if let g = try? DeviceGrant.decode(bytes) {
        invariant((try? DeviceGrant.decode(g.encoded)) == g, "a grant does not survive its own encoding")
    }
    if let c = try? DeviceCertificate.decode(bytes) {
        invariant((try? DeviceCertificate.decode(c.encoded)) == c, "a certificate does not survive its own encoding")
    }
    if let r = DeviceRevocation.decode(bytes) {
        invariant(r.encoded == bytes, "a revocation re-encodes to other bytes")
        invariant(r.lastID == nil || r.last > 0, "a revocation names an envelope at sequence 0")
    }
    let list = events(bytes)
    let state = RoomMembership(list, room: room)
    invariant(RoomMembership(list.reversed(), room: room) == state, "the membership depends on the order of its events")
    if let owner = state.owner { invariant(state.roles[owner] == .owner, "the owner has another role") }
    // Authority nobody can grind: only the account the room id commits to founds it.
    invariant(state.owner == nil || state.owner == keys[0], "an account the room id does not commit to became its owner")
    invariant(!state.roles.contains { $0.value == .owner && $0.key != keys[0] }, "someone other than the founder holds the owner's role")
    for e in list where e.event.action == .create && !(e.author == keys[0] && e.event.target == keys[0] && e.event.parent == .zero && e.event.epoch == 0) {
        invariant(state.refused.contains(e.id), "a create the room id does not commit to held")
    }
    let legacy = RoomMembership(list, room: legacyRoom, pinned: ids[0])
    invariant(RoomMembership(list.reversed(), room: legacyRoom, pinned: ids[0]) == legacy, "a pinned room's membership depends on the order of its events")
    if let founding = list.first, founding.event.action != .create || founding.event.epoch != 0 {
        invariant(legacy.head == nil && legacy.roles.isEmpty, "a room whose pinned create is missing has members")
    }
    invariant(state.sealedTo.isEmpty || state.head != nil, "a key is sealed to someone in a room with no epoch")
    _ = state.rotationDue(now: 1_000_000)
    for key in keys { _ = state.mayHaveWritten(key, device: key, sequence: 200, sealedAt: 3) }
    return 0
}
