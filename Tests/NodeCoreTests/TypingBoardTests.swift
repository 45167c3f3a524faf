import Crypto
import Gossip
import NodeCore
import Testing

/// Typing notices (issue 17): the wire form, and what a node keeps and shows of them.
@Suite("Typing notices")
struct TypingBoardTests {
    let me = try! SigningKey.generate()  // test input
    let bob = try! SigningKey.generate()  // test input
    let room = try! RoomID(bytes: [UInt8](repeating: 7, count: 32))  // test input
    let wall: UInt64 = 1_800_000_000_000

    @Test("a notice round-trips as link message type 12, verifies, and fails once any signed byte changes; more than one forward is refused")
    func wire() throws {
        let notice = TypingNotice.sign(room: room, by: bob, time: wall)
        let encoded = GossipMessage.typing(notice).encoded
        #expect(encoded.count == 1 + TypingNotice.size && encoded[0] == 12)
        #expect(try GossipMessage.decode(encoded) == .typing(notice))
        #expect(notice.isSigned && notice.forwarded.isSigned && notice.forwarded.forwards == 1)
        for offset in [1, 33, 65, 72] {  // room, typer, time, and the signature
            var changed = encoded
            changed[offset + (offset == 72 ? 2 : 0)] ^= 1
            if case let .typing(bad)? = try? GossipMessage.decode(changed) { #expect(!bad.isSigned, "byte \(offset)") }
        }
        var twice = GossipMessage.typing(notice.forwarded).encoded
        #expect(try GossipMessage.decode(twice) == .typing(notice.forwarded))
        twice[1 + 32 + 32 + 8] = TypingNotice.maximumForwards + 1
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(twice) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(Array(encoded.dropLast())) }
        #expect(throws: EnvelopeError.self) { try GossipMessage.decode(encoded + [0]) }
    }

    @Test("checks before the signature: our own, stale or future, repeated within the gap, 8 per link per second, 256 pairs held: a new one takes the place of one brought by the link that brought the most, if its own brought fewer")
    func examine() throws {
        var board = TypingBoard(me: me.publicKey)
        #expect(board.examine(.sign(room: room, by: me, time: wall), from: 1, now: 10, wall: wall) == .own)
        #expect(board.examine(.sign(room: room, by: bob, time: wall - TypingBoard.maximumSkew - 1), from: 1, now: 10, wall: wall) == .stale)
        #expect(board.examine(.sign(room: room, by: bob, time: wall + TypingBoard.maximumSkew + 1), from: 1, now: 10, wall: wall) == .stale)
        let first = TypingNotice.sign(room: room, by: bob, time: wall - TypingBoard.maximumSkew)
        #expect(board.examine(first, from: 2, now: 10, wall: wall) == .check)
        let shown = board.accept(first, from: 2, now: 10)
        #expect(shown)
        #expect(board.typing(in: room, now: 10) == [bob.publicKey])
        // The same notice again (a replay), or one sooner than the gap: dropped.
        #expect(board.examine(first, from: 2, now: 10, wall: wall) == .repeated)
        let soon = TypingNotice.sign(room: room, by: bob, time: first.time + TypingBoard.minimumGap - 1)
        #expect(board.examine(soon, from: 2, now: 10, wall: wall) == .repeated)
        let later = TypingNotice.sign(room: room, by: bob, time: first.time + TypingBoard.minimumGap)
        #expect(board.examine(later, from: 2, now: 10, wall: wall) == .check)
        let again = board.accept(later, from: 2, now: 10)
        #expect(!again, "shown already: no new event")
        // Link 3: 8 notices in one second are looked at, the 9th is not.
        for _ in 0..<TypingBoard.maximumPerLinkPerSecond { #expect(board.examine(first, from: 3, now: 20.5, wall: wall) != .flood) }
        #expect(board.examine(first, from: 3, now: 20.9, wall: wall) == .flood)
        #expect(board.examine(first, from: 3, now: 21.0, wall: wall) != .flood, "a new second")
        // 256 typer-and-room pairs held, none expired, all brought by link 1:
        // a new pair from link 1 is dropped; one from another link takes the
        // place of one of link 1's (the one shown longest ago).
        var full = TypingBoard(me: me.publicKey)
        var typers: [SigningKey] = []
        for i in 0..<TypingBoard.maximumTracked {
            let typer = try SigningKey.generate()
            typers.append(typer)
            let n = TypingNotice.sign(room: room, by: typer, time: wall + UInt64(i))
            // Link 1 at its 8 a second: 32 s to fill every place.
            let at = 30 + Double(i / TypingBoard.maximumPerLinkPerSecond)
            #expect(full.examine(n, from: 1, now: at, wall: wall) == .check)
            full.accept(n, from: 1, now: at)
        }
        let extra = TypingNotice.sign(room: room, by: bob, time: wall)
        #expect(full.examine(extra, from: 1, now: 62, wall: wall) == .full)
        #expect(full.examine(extra, from: 999, now: 62, wall: wall) == .check)
        let admitted = full.accept(extra, from: 999, now: 62)
        #expect(admitted)
        #expect(full.typing(in: room, now: 62).contains(bob.publicKey))
        // Link 1's first pair (shown longest ago) made room: its notice is new again (not a repeat), and link 1 cannot take a place back.
        #expect(full.examine(TypingNotice.sign(room: room, by: typers[0], time: wall), from: 1, now: 62, wall: wall) == .full)
        #expect(full.examine(TypingNotice.sign(room: room, by: typers[1], time: wall + 1), from: 1, now: 62, wall: wall) == .repeated)
        // Link 999 holds one, link 1 the rest: link 999's next pair still takes one of link 1's.
        let carol = TypingNotice.sign(room: room, by: try SigningKey.generate(), time: wall)
        #expect(full.examine(carol, from: 999, now: 62, wall: wall) == .check)
        // Once they stop showing and their notices are past the skew, room again for anyone.
        let late = 62 + TypingBoard.shownFor + Double(TypingBoard.maximumSkew) / 1000 + 1
        #expect(full.examine(TypingNotice.sign(room: room, by: try SigningKey.generate(), time: wall), from: 1, now: late, wall: wall) == .check)
    }

    @Test("one link's made-up typers at its full rate for a minute (it alone would fill the 256 places in 32 s): a typer on another link, a new one each second, is shown every time")
    func oneLinkCannotCrowdOut() throws {
        var board = TypingBoard(me: me.publicKey)
        var missed = 0
        for second in 0..<60 {
            let now = Double(second)
            let clock = wall + UInt64(second) * 1_000
            for _ in 0..<TypingBoard.maximumPerLinkPerSecond {
                let fake = TypingNotice.sign(room: room, by: try SigningKey.generate(), time: clock)
                if board.examine(fake, from: 66, now: now, wall: clock) == .check { board.accept(fake, from: 66, now: now) }
            }
            // An honest typer on link 7 each second, each a new pair.
            let honest = try SigningKey.generate()
            let notice = TypingNotice.sign(room: room, by: honest, time: clock)
            if board.examine(notice, from: 7, now: now, wall: clock) == .check { board.accept(notice, from: 7, now: now) }
            if !board.typing(in: room, now: now).contains(honest.publicKey) { missed += 1 }
        }
        #expect(missed == 0, "\(missed) honest typers not shown")
    }

    @Test("a typer shows for shownFor seconds, not once it posted; ours go out at most every sendInterval per room, at once after a post")
    func showing() {
        var board = TypingBoard(me: me.publicKey)
        let n = TypingNotice.sign(room: room, by: bob, time: wall)
        #expect(board.examine(n, from: 1, now: 0, wall: wall) == .check)
        board.accept(n, from: 1, now: 0)
        #expect(board.typing(in: room, now: TypingBoard.shownFor - 0.1) == [bob.publicKey])
        #expect(board.typing(in: room, now: TypingBoard.shownFor) == [])
        board.accept(TypingNotice.sign(room: room, by: bob, time: wall + 2_000), from: 1, now: 1)
        board.posted(by: bob.publicKey, in: room, now: 2)
        #expect(board.typing(in: room, now: 2) == [])
        let stopped = board.expire(now: 2)
        #expect(!stopped)
        let sends = [0, TypingBoard.sendInterval - 0.1, TypingBoard.sendInterval].map { board.shouldSend(in: room, now: $0) }
        #expect(sends == [true, false, true])
        board.sent(messageIn: room)
        let afterPost = board.shouldSend(in: room, now: TypingBoard.sendInterval + 0.1)
        #expect(afterPost)
    }

    @Test("notices passed on, node-wide: maximumPassedOnPerSecond at once, one more refused, then that many a second again")
    func passedOn() {
        var board = TypingBoard(me: me.publicKey)
        let link: LinkID = 1
        let limit = TypingBoard.maximumPassedOnPerSecond
        let burst = (0..<limit).map { _ in board.mayPassOn(from: link, now: 10) }
        #expect(burst.allSatisfy { $0 })
        let over = board.mayPassOn(from: link, now: 10), half = board.mayPassOn(from: link, now: 10 + 0.5 / Double(limit))
        #expect(!over, "one past the limit at once")
        #expect(!half, "half a token later")
        let token = board.mayPassOn(from: link, now: 10 + 1 / Double(limit))
        #expect(token, "a token's time later")
        let later = (0..<limit).map { _ in board.mayPassOn(from: link, now: 12) }
        #expect(later.allSatisfy { $0 })
        let overAgain = board.mayPassOn(from: link, now: 12)
        #expect(!overAgain)
    }

    @Test("five links at their full rate of made-up typers (together more than the whole pass-on budget) do not stop a sixth link's honest typer going on, and the budget holds")
    func passOnIsShared() throws {
        var board = TypingBoard(me: me.publicKey)
        let seconds = 60
        var honestHeld = 0, hostilePassed = 0, honestPassed = 0
        for tick in 0..<(seconds * TypingBoard.maximumPerLinkPerSecond) {
            // Eight ticks a second; each hostile link brings one notice a tick, before the honest one.
            let now = Double(tick) / Double(TypingBoard.maximumPerLinkPerSecond)
            if tick % TypingBoard.maximumPerLinkPerSecond == 0 { board.expire(now: now) }
            let clock = wall + UInt64(now * 1_000)
            for hostile: LinkID in 60..<65 {
                let fake = TypingNotice.sign(room: room, by: try SigningKey.generate(), time: clock)
                guard board.examine(fake, from: hostile, now: now, wall: clock) == .check else { continue }
                board.accept(fake, from: hostile, now: now)
                if board.mayPassOn(from: hostile, now: now) { hostilePassed += 1 }
            }
            // An honest typer on link 7 every sendInterval, as its node sends.
            guard tick % Int(TypingBoard.sendInterval * Double(TypingBoard.maximumPerLinkPerSecond)) == 0 else { continue }
            let notice = TypingNotice.sign(room: room, by: bob, time: clock)
            guard board.examine(notice, from: 7, now: now, wall: clock) == .check else { continue }
            board.accept(notice, from: 7, now: now)
            if board.mayPassOn(from: 7, now: now) { honestPassed += 1 } else { honestHeld += 1 }
        }
        #expect(honestHeld == 0 && honestPassed == seconds / Int(TypingBoard.sendInterval), "\(honestHeld) honest notices not passed on")
        // A bucket: what it holds at the start, then its rate.
        let budget = TypingBoard.maximumPassedOnPerSecond * (seconds + 1)
        #expect(hostilePassed + honestPassed <= budget && hostilePassed >= TypingBoard.maximumPassedOnPerSecond,
                "\(hostilePassed) made-up notices passed on")
    }
}
