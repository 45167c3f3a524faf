import Crypto
import Gossip
import NodeCore
import TestSupport
import Testing

/// The membership rules of a private room (docs/PROTOCOL.md §14,
/// "Membership and key epochs"), on events made here: ids are chosen so
/// that the order of a race is known.
@Suite("Room membership (pure)")
struct RoomMembershipTests {
    typealias Event = RoomMembership.Event
    let alice: PublicKey, bob: PublicKey, carol: PublicKey, dave: PublicKey, erin: PublicKey

    init() throws {
        // Fixed keys, ordered so that the smallest-key rules are known.
        func key(_ n: UInt8) throws -> PublicKey { try PublicKey(bytes: [UInt8](repeating: n, count: 32)) }
        (alice, bob, carol, dave, erin) = (try key(1), try key(2), try key(3), try key(4), try key(5))
    }

    static func id(_ n: UInt8) throws -> MessageID { try MessageID(bytes: [UInt8](repeating: n, count: 32)) }

    /// The room Alice founds: its id commits to her account and the salt
    /// her create carries (here 32 zero bytes, a create whose parent is 0).
    var room: RoomID { RoomID.privateRoom(founder: alice, salt: MessageID.zero.bytes) }

    func membership(_ events: [Event]) -> RoomMembership { RoomMembership(events, room: room) }

    /// An event `id` by `author`: `action` on `target`, at `epoch` on `parent`, its key sealed to `to`.
    func event(_ id: UInt8, by author: PublicKey, _ action: MembershipEvent.Action, _ target: PublicKey, role: MembershipEvent.Role = .member,
               epoch: UInt32, parent: UInt8, to: [PublicKey] = [], limit: UInt64? = nil) throws -> Event {
        let keys = to.map { MembershipEvent.SealedKey(account: $0, conversationEpoch: 1, sealed: [UInt8](repeating: 7, count: MembershipEvent.sealedKeySize)) }
        // A removal names the target's key with `limit` (the events here are all signed at sequence 1).
        let limits = limit.map { [MembershipEvent.DeviceLimit(device: target, last: $0)] } ?? []
        let e = MembershipEvent(action: action, target: target, role: role, epoch: epoch, parent: parent == 0 ? .zero : try Self.id(parent), keys: keys, limits: limits)
        return Event(id: try Self.id(id), author: author, event: e)
    }

    /// Alice founds the room (id 10), invites Bob (20) and Carol (30), and kicks Carol (40).
    func history() throws -> [Event] {
        [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
         try event(20, by: alice, .invite, bob, epoch: 1, parent: 10, to: [alice, bob]),
         try event(30, by: alice, .invite, carol, epoch: 2, parent: 20, to: [alice, bob, carol]),
         try event(40, by: alice, .kick, carol, epoch: 3, parent: 30, to: [alice, bob])]
    }

    @Test("create, invites and a kick: roles, the current epoch and who its key reached; nothing to redo")
    func kick() throws {
        let state = membership(try history())
        #expect(state.owner == alice)
        #expect(state.roles == [alice: .owner, bob: .member])
        #expect(try state.head?.epoch == 3 && state.head?.event == (Self.id(40)))
        #expect(state.sealedTo == [alice, bob])
        #expect(state.refused.isEmpty)
        #expect(!state.needsNewKey && !state.keyIsTainted)
        // Carol wrote with the keys of epochs 2 (she was in); not of 3, nor could anyone who was never in.
        #expect(state.mayHaveWritten(carol, sealedAt: 2))
        #expect(!state.mayHaveWritten(carol, sealedAt: 3))
        #expect(!state.mayHaveWritten(carol, sealedAt: 1), "not yet a member at epoch 1")
        #expect(!state.mayHaveWritten(dave, sealedAt: 2))
        #expect(state.mayHaveWritten(carol, sealedAt: 0) && !state.mayHaveWritten(dave, sealedAt: 0),
                "epoch 0, the room's first key (shared with everyone before membership events), is any member's, ever")
        #expect(state.mayHaveWritten(bob, sealedAt: 9), "an epoch past the last keeps the last members")
    }

    @Test("every order of delivery gives the same state (200 seeded shuffles, with a race and refused events among them)")
    func orderIndependent() throws {
        var events = try history()
        events.append(try event(41, by: bob, .invite, dave, epoch: 3, parent: 30, to: [alice, bob, carol, dave]))  // holds: Bob is an admin by 35
        events.append(try event(35, by: alice, .role, bob, role: .admin, epoch: 3, parent: 30, to: [alice, bob, carol]))
        events.append(try event(50, by: bob, .invite, erin, epoch: 4, parent: 40, to: [alice, bob, erin]))
        events.append(try event(11, by: bob, .create, bob, role: .owner, epoch: 0, parent: 0))  // a second create
        let expected = membership(events)
        var rng = SplitMix(seed: 18)
        for _ in 0..<200 {
            events.shuffle(using: &rng)
            #expect(membership(events) == expected)
        }
        #expect(try expected.refused.sorted() == [Self.id(11)])
        // Bob became admin at epoch 3 (35, applied before 41), so his invite of Dave holds, as does Erin's.
        #expect(expected.roles == [alice: .owner, bob: .admin, dave: .member, erin: .member])
    }

    @Test("roles: a member invites nobody; an admin invites members, not admins, and removes members, not admins; only the owner gives roles; the banned are not invited back")
    func roles() throws {
        let base = [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                    try event(20, by: alice, .invite, bob, role: .admin, epoch: 1, parent: 10),
                    try event(30, by: alice, .invite, carol, role: .admin, epoch: 2, parent: 20),
                    try event(40, by: bob, .invite, dave, epoch: 3, parent: 30)]
        #expect(membership(base).refused.isEmpty)
        func refused(_ e: Event) -> Bool { membership(base + [e]).refused == [e.id] }
        #expect(refused(try event(50, by: dave, .invite, erin, epoch: 4, parent: 40)), "a member invites")
        #expect(refused(try event(50, by: bob, .invite, erin, role: .admin, epoch: 4, parent: 40)), "an admin makes an admin")
        #expect(refused(try event(50, by: bob, .kick, carol, epoch: 4, parent: 40)), "an admin kicks an admin")
        #expect(refused(try event(50, by: dave, .kick, bob, epoch: 4, parent: 40)), "a member kicks")
        #expect(refused(try event(50, by: bob, .role, dave, role: .admin, epoch: 4, parent: 40)), "an admin gives a role")
        #expect(refused(try event(50, by: carol, .kick, carol, epoch: 4, parent: 40)), "a kick of oneself")
        #expect(refused(try event(50, by: erin, .rotate, erin, epoch: 4, parent: 40)), "a stranger rotates")
        #expect(refused(try event(50, by: alice, .leave, bob, epoch: 3, parent: 40)), "a leave for someone else")
        #expect(!refused(try event(50, by: bob, .kick, dave, epoch: 4, parent: 40)))
        #expect(!refused(try event(50, by: alice, .kick, bob, epoch: 4, parent: 40)), "the owner removes an admin")
        let banned = membership(base + [try event(50, by: bob, .ban, dave, epoch: 4, parent: 40),
                                            try event(60, by: alice, .invite, dave, epoch: 5, parent: 50)])
        #expect(try banned.banned == [dave] && banned.roles[dave] == nil && banned.refused == [Self.id(60)])
        // A removed admin's later change is not theirs to make.
        let removed = membership(base + [try event(50, by: alice, .kick, bob, epoch: 4, parent: 40, limit: 1),
                                             try event(60, by: bob, .kick, dave, epoch: 5, parent: 50)])
        #expect(try removed.refused == [Self.id(60)] && removed.roles[dave] == .member)
    }

    @Test("an admin race: two changes on one epoch both hold; the smaller id's key is current; a key that reached the removed is tainted and the owner makes the next")
    func race() throws {
        let base = [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                    try event(20, by: alice, .invite, bob, role: .admin, epoch: 1, parent: 10, to: [alice, bob]),
                    try event(30, by: alice, .invite, dave, role: .admin, epoch: 2, parent: 20, to: [alice, bob, dave]),
                    try event(40, by: alice, .invite, carol, epoch: 3, parent: 30, to: [alice, bob, carol, dave])]
        // Bob removes Carol while Dave invites Erin, both on epoch 3.
        let kick = { (id: UInt8) in try self.event(id, by: self.bob, .kick, self.carol, epoch: 4, parent: 40, to: [self.alice, self.bob, self.dave]) }
        let invite = { (id: UInt8) in
            try self.event(id, by: self.dave, .invite, self.erin, epoch: 4, parent: 40, to: [self.alice, self.bob, self.carol, self.dave, self.erin])
        }
        // The invite's id is smaller: its key, sealed to Carol, is current and tainted.
        let inviteWins = membership(base + [try kick(60), try invite(50)])
        #expect(inviteWins.roles == [alice: .owner, bob: .admin, dave: .admin, erin: .member])
        #expect(try inviteWins.head?.event == (Self.id(50)))
        #expect(inviteWins.keyIsTainted && inviteWins.needsNewKey && inviteWins.rekeyer == alice)
        #expect(!inviteWins.mayHaveWritten(carol, sealedAt: 4), "Carol holds the epoch-4 key of the invite, and is out")
        // The kick's id is smaller: its key lacks Erin; not tainted, but to be redone.
        let kickWins = membership(base + [try kick(50), try invite(60)])
        #expect(kickWins.roles == inviteWins.roles)
        #expect(try kickWins.head?.event == (Self.id(50)))
        #expect(!kickWins.keyIsTainted && kickWins.needsNewKey)
        // The owner's rotation on the current head settles it.
        let settled = membership(base + [try kick(60), try invite(50),
                                             try event(70, by: alice, .rotate, alice, epoch: 5, parent: 50, to: [alice, bob, dave, erin])])
        #expect(settled.head?.epoch == 5 && !settled.needsNewKey && !settled.keyIsTainted)
        // A rotation on the losing branch does not extend the chain.
        let offChain = membership(base + [try kick(60), try invite(50),
                                              try event(70, by: alice, .rotate, alice, epoch: 5, parent: 60, to: [alice, bob, dave, erin])])
        #expect(try offChain.head?.event == (Self.id(50)))
    }

    @Test("a leave: no new epoch, the key is tainted until someone rekeys; the owner gone, the smallest admin rekeys")
    func leave() throws {
        let base = [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                    try event(20, by: alice, .invite, carol, role: .admin, epoch: 1, parent: 10, to: [alice, carol]),
                    try event(30, by: alice, .invite, bob, role: .admin, epoch: 2, parent: 20, to: [alice, bob, carol])]
        let bobLeft = membership(base + [try event(40, by: bob, .leave, bob, epoch: 2, parent: 30)])
        #expect(bobLeft.head?.epoch == 2 && bobLeft.keyIsTainted && bobLeft.rekeyer == alice)
        #expect(bobLeft.mayHaveWritten(bob, sealedAt: 2), "what Bob wrote before leaving still counts")
        let ownerLeft = membership(base + [try event(40, by: alice, .leave, alice, epoch: 2, parent: 30, limit: 1)])
        #expect(ownerLeft.owner == nil && ownerLeft.rekeyer == bob, "bob's key is smaller than carol's")
    }

    @Test("a member invited and leaving at once: the leave keeps the invite's epoch and holds, whichever id is smaller")
    func leaveRightAfterInvite() throws {
        for (inviteID, leaveID) in [(UInt8(20), UInt8(15)), (15, 20)] {
            let state = membership([try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                                        try event(inviteID, by: alice, .invite, bob, epoch: 1, parent: 10, to: [alice, bob]),
                                        try event(leaveID, by: bob, .leave, bob, epoch: 1, parent: inviteID)])
            #expect(state.refused.isEmpty && state.roles == [alice: .owner] && state.keyIsTainted, "invite \(inviteID), leave \(leaveID)")
            #expect(state.mayHaveWritten(bob, sealedAt: 1), "what Bob wrote before leaving")
        }
    }

    @Test("the owner leaves a room of members only: the member with the smallest key rekeys and its rotate holds; another member's does not")
    func ownerLeavesMembers() throws {
        let base = [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                    try event(20, by: alice, .invite, carol, epoch: 1, parent: 10, to: [alice, carol]),
                    try event(30, by: alice, .invite, bob, epoch: 2, parent: 20, to: [alice, bob, carol]),
                    try event(40, by: alice, .leave, alice, epoch: 2, parent: 30, limit: 1)]
        let left = membership(base)
        #expect(left.keyIsTainted && left.rekeyer == bob)
        let byCarol = membership(base + [try event(50, by: carol, .rotate, carol, epoch: 3, parent: 30, to: [bob, carol])])
        #expect(try byCarol.refused == [Self.id(50)] && byCarol.keyIsTainted)
        let byBob = membership(base + [try event(50, by: bob, .rotate, bob, epoch: 3, parent: 30, to: [bob, carol])])
        #expect(byBob.refused.isEmpty && !byBob.keyIsTainted && !byBob.needsNewKey)
        // While an admin is in the room, a member's rotate does not hold.
        let withAdmin = [try event(10, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0),
                         try event(20, by: alice, .invite, carol, role: .admin, epoch: 1, parent: 10),
                         try event(30, by: alice, .invite, bob, epoch: 2, parent: 20),
                         try event(40, by: bob, .rotate, bob, epoch: 3, parent: 30)]
        #expect(try membership(withAdmin).refused == [Self.id(40)])
    }

    @Test("a removed member writing into the past: what its devices sign past the kick's limits, with a key from before, does not stand; after a new invite it writes again")
    func cut() throws {
        let carolLaptop = try PublicKey(bytes: [UInt8](repeating: 9, count: 32))
        var base = Array(try history().dropLast())
        let limits = [MembershipEvent.DeviceLimit(device: carol, last: 7), .init(device: carolLaptop, last: 2)]
        base.append(Event(id: try Self.id(40), author: alice, sequence: 4,
                          event: MembershipEvent(action: .kick, target: carol, role: .member, epoch: 3, parent: try Self.id(30), keys: [], limits: limits)))
        // Carol was an admin? No: a member. Make her one first so a backdated change of hers would hold.
        base.insert(try event(31, by: alice, .role, carol, role: .admin, epoch: 2, parent: 20), at: 3)
        let state = membership(base)
        #expect(state.mayHaveWritten(carol, device: carol, sequence: 7, sealedAt: 2), "signed before the kick")
        #expect(!state.mayHaveWritten(carol, device: carol, sequence: 8, sealedAt: 2), "past the limit, with the old key")
        #expect(!state.mayHaveWritten(carol, device: carolLaptop, sequence: 3, sealedAt: 0), "the first key is no way around it")
        #expect(state.mayHaveWritten(carol, device: carolLaptop, sequence: 2, sealedAt: 1) == false, "not a member at epoch 1")
        // An invite of Dave by Carol's device racing her kick (epoch 3), signed past her limit: refused.
        let backdated = Event(id: try Self.id(35), author: carol, device: carol, sequence: 8,
                              event: MembershipEvent(action: .invite, target: dave, role: .member, epoch: 3, parent: try Self.id(30), keys: []))
        let after = membership(base + [backdated])
        #expect(after.roles[dave] == nil)
        #expect(try after.refused == [Self.id(35)])
        // The same invite signed before the limit (a change she made while an admin) holds.
        let inTime = Event(id: try Self.id(35), author: carol, device: carol, sequence: 6,
                           event: MembershipEvent(action: .invite, target: dave, role: .member, epoch: 3, parent: try Self.id(30), keys: []))
        #expect(membership(base + [inTime]).roles[dave] == .member)
        // Invited again at epoch 4, she writes with epoch 4's key.
        let again = membership(base + [try event(50, by: alice, .invite, carol, epoch: 4, parent: 40, to: [alice, bob, carol])])
        #expect(again.mayHaveWritten(carol, device: carol, sequence: 20, sealedAt: 4))
        #expect(!again.mayHaveWritten(carol, device: carol, sequence: 20, sealedAt: 2))
    }

    @Test("the schedule: a key is due for replacement at 7 days, not a millisecond before; one dated more than 5 minutes ahead is due at once; a room of one never")
    func schedule() throws {
        let week = RoomMembership.rotationInterval, skew = RoomMembership.maximumFutureSkew
        let made: UInt64 = 1_800_000_000_000
        let events = [Event(id: try Self.id(10), author: alice, timestamp: made - 5,
                            event: MembershipEvent(action: .create, target: alice, role: .owner, epoch: 0, parent: .zero, keys: [])),
                      Event(id: try Self.id(20), author: alice, timestamp: made,
                            event: MembershipEvent(action: .invite, target: bob, role: .member, epoch: 1, parent: try Self.id(10), keys: []))]
        let state = membership(events)
        #expect(state.headTimestamp == made)
        #expect(!state.rotationDue(now: made + week - 1))
        #expect(state.rotationDue(now: made + week))
        #expect(!state.rotationDue(now: made - skew), "a clock behind the key's date by the allowed skew")
        #expect(state.rotationDue(now: made - skew - 1), "dated past the skew: replaced")
        #expect(!membership(Array(events.prefix(1))).rotationDue(now: made + 2 * week), "the founder alone")
    }

    @Test("a create by anyone but the founder, with any id (here smaller than the founder's), changes nothing: from a member, a kicked member, an invitee who never joined")
    func forgedCreate() throws {
        let honest = membership(try history())
        for forger in [bob, carol, dave] {
            // Its salt is anything the forger likes; the id is the smallest there is.
            for salt: UInt8 in [0, 10, 99] {
                let forged = try event(1, by: forger, .create, forger, role: .owner, epoch: 0, parent: salt)
                let state = membership(try history() + [forged])
                #expect(state.owner == alice && state.roles == honest.roles && state.head?.event == honest.head?.event)
                #expect(try state.refused == [Self.id(1)])
                // Built on: its own "invite" at epoch 1 holds nothing either.
                let onIt = try event(2, by: forger, .invite, erin, role: .admin, epoch: 1, parent: 1, to: [forger, erin])
                #expect(membership(try history() + [forged, onIt]).roles == honest.roles)
            }
        }
        // One naming the founder as its target but signed by someone else: also nothing.
        #expect(try membership(try history() + [try event(1, by: bob, .create, alice, role: .owner, epoch: 0, parent: 0)]).refused == [Self.id(1)])
    }

    @Test("the founder's own second create (a smaller id) keeps the chain: epoch 1 may build on either; the head stays")
    func founderCreatesTwice() throws {
        let state = membership(try history() + [try event(5, by: alice, .create, alice, role: .owner, epoch: 0, parent: 0)])
        #expect(try state.head?.epoch == 3 && state.head?.event == Self.id(40))
        #expect(state.roles == [alice: .owner, bob: .member] && state.refused.isEmpty)
    }

    @Test("a room whose id commits to nobody (made before ids did): the pinned create founds it, a smaller forged one does not; with no pin none does")
    func pinnedFounder() throws {
        let legacy = RoomID.random()
        let forged = try event(1, by: carol, .create, carol, role: .owner, epoch: 0, parent: 0)
        let state = RoomMembership(try history() + [forged], room: legacy, pinned: try Self.id(10))
        #expect(state.owner == alice && state.roles == [alice: .owner, bob: .member])
        #expect(try state.refused == [Self.id(1)])
        #expect(RoomMembership(try history(), room: legacy).head == nil, "neither committed nor pinned: nothing founds it")
    }

    @Test("a removal cuts the account: a device it does not name (claimed after) is cut from its first post; the named device past its limit; another account's device named in it is not")
    func removalCutsAccount() throws {
        let laptop = try PublicKey(bytes: [UInt8](repeating: 33, count: 32))
        let bobPhone = try PublicKey(bytes: [UInt8](repeating: 34, count: 32))
        var events = try history()
        // The kick of Carol names her key's limit (5) and, wrongly, a device of Bob's.
        let kick = MembershipEvent(action: .kick, target: carol, role: .member, epoch: 3, parent: try Self.id(30),
                                   keys: [], limits: [.init(device: carol, last: 5), .init(device: bobPhone, last: 0)])
        events[3] = Event(id: try Self.id(40), author: alice, event: kick)
        let state = membership(events)
        #expect(state.mayHaveWritten(carol, device: carol, sequence: 5, sealedAt: 2))
        #expect(!state.mayHaveWritten(carol, device: carol, sequence: 6, sealedAt: 2))
        for sequence: UInt64 in [1, 2, 1_000] {
            #expect(!state.mayHaveWritten(carol, device: laptop, sequence: sequence, sealedAt: 2), "a device the kick did not name")
            #expect(!state.mayHaveWritten(carol, device: laptop, sequence: sequence, sealedAt: 0), "nor with the first key")
        }
        #expect(state.mayHaveWritten(bob, device: bobPhone, sequence: 7, sealedAt: 3), "the kick cuts Carol's account, not Bob's device it names")
        // A change by the unnamed device at the kick's epoch does not hold either.
        let late = Event(id: try Self.id(45), author: carol, device: laptop, sequence: 1,
                         event: MembershipEvent(action: .invite, target: dave, role: .member, epoch: 3, parent: try Self.id(30), keys: []))
        #expect(try membership(events + [late]).refused.contains(Self.id(45)))
    }

    @Test("no create: nothing holds")
    func noCreate() throws {
        let state = membership(Array(try history().dropFirst()))
        #expect(state.head == nil && state.roles.isEmpty && state.refused.count == 3)
    }

    @Test("the event's bytes: round trip; 512 sealed keys decode and 513 do not; a byte short or long is refused")
    func codec() throws {
        func make(_ n: Int) throws -> MembershipEvent {
            let keys = (0..<n).map { i in
                MembershipEvent.SealedKey(account: alice, conversationEpoch: UInt32(i), sealed: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: MembershipEvent.sealedKeySize))
            }
            return MembershipEvent(action: .kick, target: carol, role: .member, epoch: 3, parent: try Self.id(9), keys: keys)
        }
        let one = try make(1)
        #expect(MembershipEvent.decode(one.encoded) == one)
        #expect(one.encoded.count == 4 + 1 + 32 + 1 + 4 + 32 + 2 + 116 + 1)
        func limited(_ n: Int) throws -> MembershipEvent {
            let limits = (0..<n).map { MembershipEvent.DeviceLimit(device: carol, last: UInt64($0)) }
            return MembershipEvent(action: .ban, target: carol, role: .member, epoch: 3, parent: try Self.id(9), keys: one.keys, limits: limits)
        }
        let full = try limited(MembershipEvent.maximumLimits)
        #expect(MembershipEvent.decode(full.encoded) == full)
        #expect(MembershipEvent.decode(try limited(MembershipEvent.maximumLimits + 1).encoded) == nil)
        #expect(try make(MembershipEvent.maximumMembers).encoded.count + MembershipEvent.maximumLimits * 40 <= Envelope.maximumPlaintextBody,
                "the largest event fits an envelope")
        #expect(MembershipEvent.decode(Array(one.encoded.dropLast())) == nil)
        #expect(MembershipEvent.decode(one.encoded + [0]) == nil)
        let most = try make(MembershipEvent.maximumMembers)
        #expect(MembershipEvent.decode(most.encoded) == most)
        #expect(MembershipEvent.decode(try make(MembershipEvent.maximumMembers + 1).encoded) == nil)
        var badAction = one.encoded
        badAction[4] = 7
        #expect(MembershipEvent.decode(badAction) == nil)
    }
}
