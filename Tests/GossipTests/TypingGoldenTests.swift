import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// The golden typing notices (docs/PROTOCOL.md §11, "Typing"; made and
/// checked from the document alone by `scripts/check-golden.py`): this build
/// signs the same bytes, and reads them back.
@Suite("Golden typing notices")
struct TypingGoldenTests {
    struct File: Codable {
        let network_name: String
        let room: String
        let time: UInt64
        let message: String
        let forwarded: String
    }

    @Test("Alice's notice in #general of the network golden: signed to the same 138 bytes, passed on once with forwards 1, both verify")
    func golden() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden-typing.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        let room = RoomID.publicRoom(try RoomName(file.room), network: NetworkKey.derived(fromName: file.network_name))
        let alice = try SigningKey(seed: [UInt8](repeating: 0x11, count: 32))
        let notice = TypingNotice.sign(room: room, by: alice, time: file.time)
        #expect(Hex.encode(GossipMessage.typing(notice).encoded) == file.message)
        #expect(Hex.encode(GossipMessage.typing(notice.forwarded).encoded) == file.forwarded)
        guard case let .typing(read) = try GossipMessage.decode(try Hex.decode(file.forwarded)) else {
            Issue.record("not a typing notice")
            return
        }
        #expect(read.isSigned && read.forwards == 1 && read.typer == alice.publicKey && read.room == room)
    }
}
