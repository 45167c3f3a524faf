import Crypto
import Gossip
@testable import PeerNode
import TestSupport
import Testing

/// `Node.roomID`: public rooms' ids derived once a name, at most `maximumCachedRoomIDs` kept.
@Suite("Room ids by name")
struct RoomIDCacheTests {
    @Test("a public room's id is the one its name derives, whether kept or derived again: up to Node.maximumCachedRoomIDs names, and one past it (all forgotten, derived again)")
    func keptAndDerivedAgain() throws {
        let dir = TemporaryDirectory()
        let node = try Node(options: EnvelopeUpgradeTests.options(dir), environment: [:])
        let network = NetworkKey.derived(fromName: NetworkKey.defaultName)
        let names = try (0...Node.maximumCachedRoomIDs).map { try RoomName("#room\($0)") }
        for round in 0..<2 {
            for name in names {
                #expect(node.roomID(name) == RoomID.publicRoom(name, network: network), "round \(round), \(name.value)")
            }
        }
        #expect(node.roomID(.general) == RoomID.publicRoom(.general, network: network))
    }
}
