import Crypto
import Foundation
import Gossip
@testable import PeerNode
import Store
import TestSupport
import Testing

/// A typed post goes to the links before its row is committed, written
/// aside first (`own-intent`, docs/DECISIONS.md, "Own posts are sent
/// before their row"). A process that dies between the send and the
/// commit leaves the envelope in that file: these tests make that disk by
/// hand and check that the next start stores it and never signs its
/// sequence again, and that a file that is not such an envelope is
/// ignored.
@Suite("A post sent before its row", .serialized)
struct OwnIntentTests {
    /// Alice's data directory after one post ("one"), stopped.
    static func aliceAfterOnePost() async throws -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
        #expect(await started(a))
        a.send("one")
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "one" } != nil)
        #expect(FileManager.default.fileExists(atPath: dir.file("own-intent")), "the post went through the intent file")
        let id = a.id
        await a.quit()
        return (dir, id)
    }

    /// The envelope alice's next post would be, signed with her key, as a dying process leaves it in the file.
    static func intent(in dir: TemporaryDirectory, text: String, sequenceAhead: UInt64 = 1, key: SigningKey? = nil) throws -> Envelope {
        let identity = try KeyFile.loadIdentity(at: dir.file(DataDirectory.identityFileName))
        let store = try Store(directory: try DataDirectory(path: dir.path))
        let me = identity.publicKey
        let head = try #require(try store.head(of: me))
        let network = NetworkKey.derived(fromName: NetworkKey.defaultName)
        let room = RoomID.publicRoom(.general, network: network)
        let signer = key ?? identity
        let body = try SealedBody.seal(kind: .text, content: Array(text.utf8), key: network.publicRoomKey(roomName: RoomName.general.value),
                                       author: signer.publicKey, room: room)
        return try Envelope.sign(by: signer, sequence: head.sequence + sequenceAhead, previous: head.id, dependencies: [],
                                 timestamp: UInt64(Date().timeIntervalSince1970 * 1000), room: room, body: body)
    }

    static func writeIntent(_ bytes: [UInt8], in dir: TemporaryDirectory) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("own-intent")))
    }

    static func intentFile(_ e: Envelope) -> [UInt8] {
        let n = UInt32(e.encoded.count)
        return Array("PNOI".utf8) + [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] + e.encoded
    }

    @Test("a post on the links but not in the database when the process died is stored at the next start, shown in /history, and the next post follows it (no sequence signed twice)")
    func recoveredAtStart() async throws {
        let (dir, _) = try await Self.aliceAfterOnePost()
        let lost = try Self.intent(in: dir, text: "sent, then the process died")
        try Self.writeIntent(Self.intentFile(lost), in: dir)
        let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
        #expect(await started(a))
        let mark = a.events.value.count
        a.send("/history 5")
        #expect(await a.wait { $0["type"] == "history_message" && $0["text"] == "sent, then the process died" } != nil, "\(a.recent(5))")
        a.send("two")
        let two = await a.wait { $0["type"] == "message" && $0["text"] == "two" }
        #expect(two?["seq"] == String(lost.sequence + 1), "\(String(describing: two)) after \(lost.sequence)")
        #expect(a.events.value.dropFirst(mark).allSatisfy { $0["type"] != "error" }, "\(a.recent(5))")
        await a.quit()
        // Stored, the copy aside is zeroed.
        let bytes = FileManager.default.contents(atPath: dir.file("own-intent")) ?? Data()
        #expect(!bytes.isEmpty && bytes.allSatisfy { $0 == 0 })
    }

    @Test("a direct message goes the same way: written aside before it is sent, then stored, and the copy aside zeroed (a later delete leaves nothing of it there)")
    func directMessageWrittenAside() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        a.send("/msg \(b.id) just between us")
        let got = await b.wait { $0["type"] == "message" && $0["kind"] == "dm" && $0["text"] == "just between us" }
        #expect(got != nil, "\(b.recent(4))")
        await a.quit(); await b.quit()
        // Alice typed nothing else: the file exists only because the message went through it.
        let bytes = try #require(FileManager.default.contents(atPath: dirs[0].file("own-intent")), "no own-intent file")
        #expect(!bytes.isEmpty && bytes.allSatisfy { $0 == 0 }, "\(bytes.count) bytes, not all zero")
        let store = try Store(directory: try DataDirectory(path: dirs[0].path))
        let id = try MessageID(bytes: Hex.decode(try #require(got?["id"])))
        #expect(try store.delivered(id: id) != nil)
    }

    @Test("a post goes before its row only with OwnIntent.minimumFreeBytes free on the data directory's filesystem: at the limit yes, one byte less no")
    func freeSpaceLimit() {
        #expect(OwnIntent.roomToSendFirst(available: OwnIntent.minimumFreeBytes))
        #expect(!OwnIntent.roomToSendFirst(available: OwnIntent.minimumFreeBytes - 1))
        #expect(!OwnIntent.roomToSendFirst(available: 0))
    }

    @Test("what is not our next post is ignored: garbage, a cut file, another identity's envelope, one past a gap, one already stored; the node starts and posts after its own head")
    func notAnIntent() async throws {
        let (dir, _) = try await Self.aliceAfterOnePost()
        let next = try Self.intent(in: dir, text: "never stored")
        let cases: [(String, [UInt8]?)] = [
            // The file as the last run left it: its last post, already stored.
            ("already stored", nil),
            ("garbage", Array("not an intent at all".utf8)),
            ("cut", Array(Self.intentFile(next).dropLast(10))),
            ("a length past the limit", Array("PNOI".utf8) + [0xff, 0xff, 0xff, 0xff] + next.encoded),
            ("a bad signature", Self.intentFile(next).enumerated().map { $0.offset == 20 ? $0.element ^ 1 : $0.element }),
            ("another identity", Self.intentFile(try Self.intent(in: dir, text: "not alice", key: try SigningKey.generate()))),
            ("past a gap", Self.intentFile(try Self.intent(in: dir, text: "two ahead", sequenceAhead: 2))),
        ]
        var expected = next.sequence
        for (name, bytes) in cases {
            if let bytes { try Self.writeIntent(bytes, in: dir) }
            let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
            #expect(await started(a), "\(name)")
            a.send("after \(name)")
            let posted = await a.wait { $0["type"] == "message" && $0["text"] == "after \(name)" }
            #expect(posted?["seq"] == String(expected), "\(name): \(String(describing: posted))")
            expected += 1
            await a.quit()
        }
    }
}
