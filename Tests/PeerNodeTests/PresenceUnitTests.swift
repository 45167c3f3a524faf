import Crypto
import Gossip
import NodeCore
@testable import PeerNode
import Testing

/// Our own presence beacons (`Presence`), without the network.
@Suite("Our presence beacons")
struct PresenceUnitTests {
    @Test("two changes within one millisecond: the second is signed later than the first, so every board takes it (a /back and a /quit typed together reach everyone as gone)")
    func eachLaterThanTheLast() throws {
        let presence = Presence(identity: try SigningKey.generate(), relay: false)
        let wall: UInt64 = 1_796_000_000_000
        let back = try #require(presence.set(.online, reason: "", now: 10, wall: wall))
        let gone = try #require(presence.set(.gone, reason: "going home", now: 10, wall: wall))
        #expect(back.time == wall && gone.time == wall + 1)
        var board = PresenceBoard(me: try SigningKey.generate().publicKey)
        let first = board.examine(back, from: 1, now: 10, wall: wall)
        #expect(first == .check)
        board.accept(back, now: 10, wall: wall)
        let second = board.examine(gone, from: 1, now: 10, wall: wall)
        #expect(second == .check)
        let changed = board.accept(gone, now: 10, wall: wall)
        #expect(changed)
        #expect(board.current(gone.device, now: 10)?.state == .gone)
        // Later on the clock, the clock's time again.
        #expect(presence.set(.online, reason: "", now: 20, wall: wall + 5_000)?.time == wall + 5_000)
    }
}
