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

    @Test("checks before the signature: our own, stale or future, repeated within the gap, 8 per link per second, 256 pairs held")
    func examine() throws {
        var board = TypingBoard(me: me.publicKey)
        #expect(board.examine(.sign(room: room, by: me, time: wall), from: 1, now: 10, wall: wall) == .own)
        #expect(board.examine(.sign(room: room, by: bob, time: wall - TypingBoard.maximumSkew - 1), from: 1, now: 10, wall: wall) == .stale)
        #expect(board.examine(.sign(room: room, by: bob, time: wall + TypingBoard.maximumSkew + 1), from: 1, now: 10, wall: wall) == .stale)
        let first = TypingNotice.sign(room: room, by: bob, time: wall - TypingBoard.maximumSkew)
        #expect(board.examine(first, from: 2, now: 10, wall: wall) == .check)
        let shown = board.accept(first, now: 10)
        #expect(shown)
        #expect(board.typing(in: room, now: 10) == [bob.publicKey])
        // The same notice again (a replay), or one sooner than the gap: dropped.
        #expect(board.examine(first, from: 2, now: 10, wall: wall) == .repeated)
        let soon = TypingNotice.sign(room: room, by: bob, time: first.time + TypingBoard.minimumGap - 1)
        #expect(board.examine(soon, from: 2, now: 10, wall: wall) == .repeated)
        let later = TypingNotice.sign(room: room, by: bob, time: first.time + TypingBoard.minimumGap)
        #expect(board.examine(later, from: 2, now: 10, wall: wall) == .check)
        let again = board.accept(later, now: 10)
        #expect(!again, "shown already: no new event")
        // Link 3: 8 notices in one second are looked at, the 9th is not.
        for _ in 0..<TypingBoard.maximumPerLinkPerSecond { #expect(board.examine(first, from: 3, now: 20.5, wall: wall) != .flood) }
        #expect(board.examine(first, from: 3, now: 20.9, wall: wall) == .flood)
        #expect(board.examine(first, from: 3, now: 21.0, wall: wall) != .flood, "a new second")
        // 256 typer-and-room pairs held, none expired: a new pair is dropped.
        var full = TypingBoard(me: me.publicKey)
        for i in 0..<TypingBoard.maximumTracked {
            let typer = try SigningKey.generate()
            let n = TypingNotice.sign(room: room, by: typer, time: wall)
            #expect(full.examine(n, from: i, now: 30, wall: wall) == .check)
            full.accept(n, now: 30)
        }
        let extra = TypingNotice.sign(room: room, by: bob, time: wall)
        #expect(full.examine(extra, from: 999, now: 30, wall: wall) == .full)
        // Once they stop showing and their notices are past the skew, room again.
        #expect(full.examine(extra, from: 999, now: 30 + TypingBoard.shownFor + Double(TypingBoard.maximumSkew) / 1000 + 1, wall: wall) == .check)
    }

    @Test("a typer shows for shownFor seconds, not once it posted; ours go out at most every sendInterval per room, at once after a post")
    func showing() {
        var board = TypingBoard(me: me.publicKey)
        let n = TypingNotice.sign(room: room, by: bob, time: wall)
        #expect(board.examine(n, from: 1, now: 0, wall: wall) == .check)
        board.accept(n, now: 0)
        #expect(board.typing(in: room, now: TypingBoard.shownFor - 0.1) == [bob.publicKey])
        #expect(board.typing(in: room, now: TypingBoard.shownFor) == [])
        board.accept(TypingNotice.sign(room: room, by: bob, time: wall + 2_000), now: 1)
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
        let limit = TypingBoard.maximumPassedOnPerSecond
        let burst = (0..<limit).map { _ in board.mayPassOn(now: 10) }
        #expect(burst.allSatisfy { $0 })
        let over = board.mayPassOn(now: 10), half = board.mayPassOn(now: 10 + 0.5 / Double(limit))
        #expect(!over, "one past the limit at once")
        #expect(!half, "half a token later")
        let token = board.mayPassOn(now: 10 + 1 / Double(limit))
        #expect(token, "a token's time later")
        let later = (0..<limit).map { _ in board.mayPassOn(now: 12) }
        #expect(later.allSatisfy { $0 })
        let overAgain = board.mayPassOn(now: 12)
        #expect(!overAgain)
    }
}
