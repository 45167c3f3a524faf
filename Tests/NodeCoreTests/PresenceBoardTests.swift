import Crypto
import Gossip
import NodeCore
import Testing

/// Presence beacons (issue 44): the wire form at its bounds, and what a node keeps of them.
@Suite("Presence beacons")
struct PresenceBoardTests {
    let me = try! SigningKey.generate()  // test input
    let bob = try! SigningKey.generate()  // test input
    let wall: UInt64 = 1_800_000_000_000

    func beacon(_ key: SigningKey, at time: UInt64, _ state: PresenceBeacon.State = .online, lifetime: UInt16 = 180, reason: String = "") -> PresenceBeacon {
        .sign(by: key, time: time, state: state, lifetime: lifetime, nick: "", reason: reason)
    }

    @Test("a beacon round-trips as link message type 17 and verifies; any signed byte changed breaks it; nick 64 and reason 160 bytes decode, 65 and 161 do not; lifetime 1…600; state 0…3; bad UTF-8 and cut messages refused")
    func wire() throws {
        let full = PresenceBeacon.sign(by: bob, time: wall, state: .away, lifetime: PresenceBeacon.maximumLifetime,
                                       nick: String(repeating: "n", count: 64), reason: String(repeating: "r", count: 160))
        let encoded = GossipMessage.presence(full).encoded
        #expect(encoded[0] == 17 && encoded.count == 1 + PresenceBeacon.maximumSize)
        #expect(try GossipMessage.decode(encoded) == .presence(full) && full.isSigned)
        for offset in [1, 33, 41, 42, 45, 120] {
            var changed = encoded
            changed[offset] ^= 1
            if case let .presence(bad)? = try? GossipMessage.decode(changed) { #expect(!bad.isSigned, "byte \(offset)") }
        }
        // Longer text than the bounds is cut when signing (on a character's edge)…
        let cut = PresenceBeacon.sign(by: bob, time: wall, state: .away, lifetime: 900, nick: String(repeating: "é", count: 40), reason: String(repeating: "x", count: 200))
        #expect(cut.nick.count == 64 && cut.reason.count == 160 && cut.lifetime == PresenceBeacon.maximumLifetime && cut.isSigned)
        // …and refused when it arrives so.
        func edited(_ body: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = GossipMessage.presence(beacon(bob, at: wall)).encoded
            body(&bytes)
            return bytes
        }
        let nickAt = 1 + 32 + 8 + 1 + 2
        let edit1 = edited { (b: inout [UInt8]) in b[nickAt] = 65; b.insert(contentsOf: [UInt8](repeating: 0x61, count: 65), at: nickAt + 1) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit1) }
        let edit2 = edited { (b: inout [UInt8]) in b[nickAt] = 64; b.insert(contentsOf: [UInt8](repeating: 0x61, count: 64), at: nickAt + 1) }
        #expect(throws: Never.self) { try GossipMessage.decode(edit2) }
        let edit3 = edited { (b: inout [UInt8]) in b[nickAt + 1] = 161; b.insert(contentsOf: [UInt8](repeating: 0x61, count: 161), at: nickAt + 2) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit3) }
        let edit4 = edited { (b: inout [UInt8]) in b[nickAt + 1] = 160; b.insert(contentsOf: [UInt8](repeating: 0x61, count: 160), at: nickAt + 2) }
        #expect(throws: Never.self) { try GossipMessage.decode(edit4) }
        let edit5 = edited { (b: inout [UInt8]) in b[nickAt] = 2; b.insert(contentsOf: [0xC3, 0x28], at: nickAt + 1) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit5) }
        let edit6 = edited { (b: inout [UInt8]) in b[1 + 32 + 8] = 4 }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit6) }
        let edit7 = edited { (b: inout [UInt8]) in b[1 + 32 + 8] = 3 }
        #expect(throws: Never.self) { try GossipMessage.decode(edit7) }
        let edit8 = edited { (b: inout [UInt8]) in b[42] = 0; b[43] = 0 }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit8) }
        let edit9 = edited { (b: inout [UInt8]) in b[42] = 0x02; b[43] = 0x59 }  // 601
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(edit9) }
        let edit10 = edited { (b: inout [UInt8]) in b[42] = 0x02; b[43] = 0x58 }  // 600
        #expect(throws: Never.self) { try GossipMessage.decode(edit10) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(Array(encoded.dropLast())) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(encoded + [0]) }
    }

    @Test("checks before the signature: our own, expired or too far ahead, not newer, the same said again within 10 s, changes beyond their budget, 4,096 devices, a link's budget")
    func examine() throws {
        var board = PresenceBoard(me: me.publicKey)
        #expect(board.examine(beacon(me, at: wall), from: 1, now: 10, wall: wall) == .own)
        #expect(board.examine(beacon(bob, at: wall - 180_000), from: 1, now: 10, wall: wall) == .stale)
        #expect(board.examine(beacon(bob, at: wall + PresenceBoard.maximumSkew + 1), from: 1, now: 10, wall: wall) == .stale)
        #expect(board.examine(beacon(bob, at: wall + PresenceBoard.maximumSkew), from: 2, now: 10, wall: wall) == .check)
        let first = beacon(bob, at: wall)
        #expect(board.examine(first, from: 1, now: 10, wall: wall) == .check)
        let changed = board.accept(first, now: 10, wall: wall)
        #expect(changed)
        #expect(board.current(bob.publicKey, now: 189)?.state == .online && board.current(bob.publicKey, now: 190) == nil)
        #expect(board.examine(first, from: 1, now: 11, wall: wall) == .repeated)
        #expect(board.examine(beacon(bob, at: wall + 1000), from: 1, now: 19.9, wall: wall) == .repeated)
        #expect(board.examine(beacon(bob, at: wall + 1000), from: 1, now: 20, wall: wall) == .check)
        // Five changes at once, then one per 10 s.
        for i in 0..<5 {
            let change = beacon(bob, at: wall + 2000 + UInt64(i), i % 2 == 0 ? .away : .online, reason: "\(i)")
            #expect(board.examine(change, from: 1, now: 21, wall: wall) == .check)
            let accepted = board.accept(change, now: 21, wall: wall)
            #expect(accepted)
        }
        #expect(board.examine(beacon(bob, at: wall + 3000, .gone), from: 1, now: 21, wall: wall) == .tooManyChanges)
        #expect(board.examine(beacon(bob, at: wall + 3000, .gone), from: 1, now: 31, wall: wall) == .check)
        // A link's budget: 4,096 at once, then 50 a second.
        var flooded = PresenceBoard(me: me.publicKey)
        for _ in 0..<Int(PresenceBoard.linkBurst) { _ = flooded.examine(beacon(bob, at: wall), from: 9, now: 0, wall: wall) }
        #expect(flooded.examine(beacon(bob, at: wall), from: 9, now: 0, wall: wall) == .flood)
        #expect(flooded.examine(beacon(bob, at: wall), from: 8, now: 0, wall: wall) == .check)
        #expect(flooded.examine(beacon(bob, at: wall), from: 9, now: 0.02, wall: wall) == .check)
    }

    @Test("4,096 devices at most: a new one is dropped while all are current, and takes the place of one expired")
    func bounded() throws {
        var board = PresenceBoard(me: me.publicKey)
        var keys: [SigningKey] = []
        for i in 0..<PresenceBoard.maximumTracked {
            let key = try SigningKey.generate()
            keys.append(key)
            let b = beacon(key, at: wall, lifetime: i == 0 ? 10 : 600)
            #expect(board.examine(b, from: LinkID(i % 64 + 1), now: 0, wall: wall) == .check)
            board.accept(b, now: 0, wall: wall)
        }
        let late = beacon(bob, at: wall + 5000)
        #expect(board.examine(late, from: 100, now: 5, wall: wall + 5000) == .full)
        #expect(board.examine(late, from: 100, now: 11, wall: wall + 11_000) == .check)
        board.accept(late, now: 11, wall: wall + 11_000)
        #expect(board.entries.count == PresenceBoard.maximumTracked && board.entries[keys[0].publicKey] == nil)
        #expect(board.currentBeacons(now: 11).count == PresenceBoard.maximumTracked)
    }
}
