import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// The committed golden vectors: later versions must decode these bytes to
/// the same fields and produce the same bytes from the same inputs.
struct GoldenFile: Decodable {
    struct Item: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let author_seed: String
        let sequence: UInt64
        let previous: String
        let dependencies: [[DependencyPart]]
        let timestamp: UInt64
        let room: String
        let kind: String
        let plaintext: String
        let cipher: String
        let id: String
        let room_id: String
        let bytes: String
        var testDescription: String { name }
    }
    enum DependencyPart: Decodable, Sendable {
        case name(String), sequence(UInt64)
        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .name(s) } else { self = .sequence(try c.decode(UInt64.self)) }
        }
    }
    let network_name: String
    let nonce: String
    let envelopes: [Item]
}

func loadGolden(_ name: String) -> GoldenFile? {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + name)
    guard let data = try? Data(contentsOf: url) else { return nil }
    return try? JSONDecoder().decode(GoldenFile.self, from: data)
}

let goldenFile = loadGolden("golden-envelopes.json")
let sealedGoldenFile = loadGolden("golden-envelopes-2.json")

extension GoldenFile.Item {
    /// The dependencies, with the fixture's names for the two keys.
    func dependencies(alice: PublicKey, bob: PublicKey) -> [Dependency] {
        dependencies.compactMap { parts -> Dependency? in
            guard case let .name(n) = parts[0], case let .sequence(s) = parts[1], let k = ["alice": alice, "bob": bob][n] else { return nil }
            return Dependency(author: k, sequence: s)
        }
    }

    /// The previous id: all zeros, or the id of the named earlier item.
    func previous(in file: GoldenFile) throws -> MessageID {
        if previous.count == 64 { return try MessageID(bytes: hex(previous)) }
        let earlier = try #require(file.envelopes.first { $0.name == previous })
        return try MessageID(bytes: hex(earlier.id))
    }
}

@Suite("Golden envelopes (Tests/GossipTests/Fixtures/golden-envelopes.json)")
struct GoldenEnvelopeTests {
    let alice = try! SigningKey(seed: [UInt8](repeating: 0x11, count: 32))  // fixed test input
    let bob = try! SigningKey(seed: [UInt8](repeating: 0x22, count: 32))  // fixed test input

    @Test("the fixture file is present and complete")
    func present() throws {
        let file = try #require(goldenFile)
        #expect(file.envelopes.map(\.name) == ["e1", "e2", "e3", "e4"])
    }

    @Test("each vector decodes to its fields, and its inputs encode to its bytes",
          arguments: goldenFile?.envelopes ?? [])
    func vector(_ item: GoldenFile.Item) throws {
        let file = try #require(goldenFile)
        let network = NetworkKey.derived(fromName: file.network_name)
        let author = try SigningKey(seed: hex(item.author_seed))
        let decoded = try Envelope.decode(hex(item.bytes))
        #expect(decoded.version == 1)
        #expect(decoded.id.hex == item.id && decoded.author == author.publicKey && decoded.sequence == item.sequence)
        #expect(decoded.timestamp == item.timestamp && decoded.room.hex == item.room_id)
        #expect(decoded.clearKind == Kind(rawValue: ["text": 1, "action": 2][item.kind] ?? 0))
        let deps = item.dependencies(alice: alice.publicKey, bob: bob.publicKey)
        #expect(decoded.dependencies == deps)
        let previous = try item.previous(in: file)
        if let earlier = file.envelopes.first(where: { $0.name == item.previous }) {
            try decoded.checkFollows(Envelope.decode(hex(earlier.bytes)))
        }
        #expect(decoded.previous == previous)

        // Room id and body from the documented derivations.
        let plain = Array(item.plaintext.utf8)
        let body: [UInt8]
        if item.cipher == "room" {
            let name = try RoomName(item.room)
            #expect(RoomID.publicRoom(name, network: network) == decoded.room)
            let key = network.publicRoomKey(roomName: name.value)
            #expect(try BodyCipher.open(decoded, key: key) == plain)
            body = try BodyCipher.seal(plain, key: key, author: author.publicKey, room: decoded.room, kind: try #require(decoded.clearKind), nonce: hex(file.nonce))
        } else {
            #expect(RoomID.directVersion1(alice.publicKey, bob.publicKey, network: network) == decoded.room)
            #expect(try DirectKey(own: bob, peer: alice.publicKey).open(decoded.body) == plain)
            body = try DirectKey(own: alice, peer: bob.publicKey).seal(plain, nonce: hex(file.nonce))
        }
        let rebuilt = try Envelope.sign(
            by: author, sequence: item.sequence, previous: previous, dependencies: deps,
            timestamp: item.timestamp, room: decoded.room, kind: try #require(decoded.clearKind), body: body)
        #expect(Hex.encode(rebuilt.encoded) == item.bytes)
    }
}

@Suite("Golden envelopes of version 2 (Tests/GossipTests/Fixtures/golden-envelopes-2.json)")
struct SealedGoldenEnvelopeTests {
    let alice = try! SigningKey(seed: [UInt8](repeating: 0x11, count: 32))  // fixed test input
    let bob = try! SigningKey(seed: [UInt8](repeating: 0x22, count: 32))  // fixed test input

    @Test("the fixture file is present and complete")
    func present() throws {
        let file = try #require(sealedGoldenFile)
        #expect(file.envelopes.map(\.name) == ["g1", "g2", "g3", "g4"])
    }

    @Test("each vector decodes to its fields, opens to its kind and text, and its inputs encode to its bytes",
          arguments: sealedGoldenFile?.envelopes ?? [])
    func vector(_ item: GoldenFile.Item) throws {
        let file = try #require(sealedGoldenFile)
        let network = NetworkKey.derived(fromName: file.network_name)
        let author = try SigningKey(seed: hex(item.author_seed))
        let decoded = try Envelope.decode(hex(item.bytes))
        #expect(decoded.version == 2 && decoded.clearKind == nil)
        #expect(decoded.id.hex == item.id && decoded.author == author.publicKey && decoded.sequence == item.sequence)
        #expect(decoded.timestamp == item.timestamp && decoded.room.hex == item.room_id)
        let deps = item.dependencies(alice: alice.publicKey, bob: bob.publicKey)
        #expect(decoded.dependencies == deps)
        let previous = try item.previous(in: file)
        #expect(decoded.previous == previous)

        let key: SymmetricKey
        if item.cipher == "room" {
            let name = try RoomName(item.room)
            #expect(RoomID.publicRoom(name, network: network) == decoded.room)
            key = network.publicRoomKey(roomName: name.value)
        } else {
            let pair = try DirectKey(own: alice, peer: bob.publicKey)
            // Either party derives the same room and key; the public derivation of version 1 is another room.
            #expect(RoomID.direct(pair, network: network) == decoded.room)
            #expect(RoomID.direct(try DirectKey(own: bob, peer: alice.publicKey), network: network) == decoded.room)
            #expect(RoomID.directVersion1(alice.publicKey, bob.publicKey, network: network) != decoded.room)
            key = pair.conversationKey
        }
        let opened = try SealedBody.open(decoded, key: key)
        #expect("\(opened.kind)" == item.kind && opened.content == Array(item.plaintext.utf8))
        let body = try SealedBody.seal(kind: opened.kind, content: opened.content, key: key, author: author.publicKey, room: decoded.room, nonce: hex(file.nonce))
        let rebuilt = try Envelope.signVersion2(by: author, sequence: item.sequence, previous: previous, dependencies: deps,
                                        timestamp: item.timestamp, room: decoded.room, body: body)
        #expect(Hex.encode(rebuilt.encoded) == item.bytes)
    }
}
