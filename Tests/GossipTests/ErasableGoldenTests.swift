import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// Golden envelopes of version 3 (docs/PROTOCOL.md §4, §5, §9): a text, its
/// edit, a reaction to it by another author, and a tombstone erasing the
/// text and the edit, with the pruned forms of both. Everything is in
/// `#general` of the network `golden`; Alice's seed is 0x11…, Bob's 0x22…,
/// every nonce 0x33…. `scripts/check-golden.py` checks the same file
/// from the document alone.
struct ErasableGoldenFile: Codable {
    struct Item: Codable, Sendable, CustomTestStringConvertible {
        let name: String
        let author: String
        let sequence: UInt64
        /// All zeros, or the name of the item before it in the author's chain.
        let previous: String
        /// [author name, sequence] pairs.
        let dependencies: [[String]]
        let timestamp: UInt64
        let kind: String
        /// The sealed plaintext after the kind byte, in hex.
        let content: String
        let erases: [UInt64]
        let id: String
        let bytes: String
        /// The item whose erasure pruned this one, and the pruned bytes.
        let pruned_by: String?
        let pruned_bytes: String?
        var testDescription: String { name }
    }
    let about: String
    let network_name: String
    let room: String
    let nonce: String
    let envelopes: [Item]

    static func url(version: UInt8) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden-envelopes-\(version).json")
    }
    static func load(version: UInt8) -> ErasableGoldenFile? {
        (try? Data(contentsOf: url(version: version))).flatMap { try? JSONDecoder().decode(ErasableGoldenFile.self, from: $0) }
    }
    static let loaded = load(version: 3)
    /// The same inputs signed as version 4 (the id over the head, signature
    /// included), made from the document by a script, not by this build.
    static let loaded4 = load(version: 4)

    static let keys: [String: SigningKey] = [
        "alice": try! SigningKey(seed: [UInt8](repeating: 0x11, count: 32)),  // fixed test keys
        "bob": try! SigningKey(seed: [UInt8](repeating: 0x22, count: 32)),  // fixed test keys
    ]

    /// Signs the items from their inputs: what the committed bytes must be.
    func rebuilt(version: UInt8 = 3) throws -> [String: (Envelope, Envelope?)] {
        let network = NetworkKey.derived(fromName: network_name)
        let roomName = try RoomName(room)
        let roomID = RoomID.publicRoom(roomName, network: network)
        let key = network.publicRoomKey(roomName: roomName.value)
        var out: [String: (Envelope, Envelope?)] = [:]
        for item in envelopes {
            let signer = try #require(Self.keys[item.author])
            let kind = try #require(Kind.allCases.first { "\($0)" == item.kind })
            let body = try SealedBody.seal(kind: kind, content: hex(item.content), key: key, author: signer.publicKey, room: roomID, nonce: hex(nonce))
            let previous = item.previous.count == 64 ? MessageID.zero : try #require(out[item.previous]?.0.id)
            let deps = try item.dependencies.map { pair in
                Dependency(author: try #require(Self.keys[pair[0]]?.publicKey), sequence: try #require(UInt64(pair[1])))
            }
            let e = try Envelope.sign(by: signer, sequence: item.sequence, previous: previous, dependencies: deps,
                                      timestamp: item.timestamp, room: roomID, erases: item.erases, body: body, version: version)
            out[item.name] = (e, nil)
        }
        for item in envelopes {
            guard let by = item.pruned_by, let erasing = out[by]?.0, let e = out[item.name]?.0 else { continue }
            out[item.name] = (e, e.pruned(by: erasing))
        }
        return out
    }
}

@Suite("Golden envelopes, version 3")
struct ErasableGoldenTests {
    @Test("the fixture is present: a text, an edit, a reaction, a tombstone, two pruned forms")
    func present() throws {
        let file = try #require(ErasableGoldenFile.loaded)
        #expect(file.envelopes.map(\.kind) == ["text", "edit", "reaction", "tombstone"])
        #expect(file.envelopes.compactMap(\.pruned_by) == ["g4", "g4"])
    }

    @Test("each vector decodes to its fields and opens to its kind and content; its inputs sign to its bytes; the pruned forms verify with the same id",
          arguments: ErasableGoldenFile.loaded?.envelopes ?? [])
    func vector(_ item: ErasableGoldenFile.Item) throws {
        let file = try #require(ErasableGoldenFile.loaded)
        let rebuilt = try #require(try file.rebuilt()[item.name])
        #expect(Hex.encode(rebuilt.0.encoded) == item.bytes)
        let decoded = try Envelope.decode(hex(item.bytes))
        #expect(decoded.version == 3 && decoded.id.hex == item.id && decoded.erases == item.erases && decoded.sequence == item.sequence)
        let network = NetworkKey.derived(fromName: file.network_name)
        let opened = try SealedBody.open(decoded, key: network.publicRoomKey(roomName: file.room))
        #expect("\(opened.kind)" == item.kind && Hex.encode(opened.content) == item.content)
        if let prunedHex = item.pruned_bytes {
            #expect(Hex.encode(try #require(rebuilt.1).encoded) == prunedHex)
            let pruned = try Envelope.decode(hex(prunedHex))
            #expect(pruned.isPruned && pruned.id == decoded.id && pruned.body.isEmpty)
        }
        if item.kind == "edit" { #expect(String(decoding: try MessageEdit.decode(opened.content).text, as: UTF8.self) == "hello, LAN") }
        if item.kind == "reaction" { #expect(try Reaction.decode(opened.content).reaction == "👍") }
    }

    @Test("version 4 (the same inputs): each vector decodes, its id hashes the head with the signature, its inputs sign to its bytes, the references name version-4 ids, the pruned forms keep the id",
          arguments: ErasableGoldenFile.loaded4?.envelopes ?? [])
    func vector4(_ item: ErasableGoldenFile.Item) throws {
        let file = try #require(ErasableGoldenFile.loaded4)
        let rebuilt = try #require(try file.rebuilt(version: 4)[item.name])
        #expect(Hex.encode(rebuilt.0.encoded) == item.bytes)
        let decoded = try Envelope.decode(hex(item.bytes))
        let head = Array(decoded.encoded[0..<(decoded.encoded.count - 1 - decoded.bodyLength)])
        #expect(decoded.version == 4 && decoded.id.hex == item.id && Hex.encode(BLAKE2b.hash(head)) == item.id)
        if let prunedHex = item.pruned_bytes {
            #expect(Hex.encode(try #require(rebuilt.1).encoded) == prunedHex)
            let pruned = try Envelope.decode(hex(prunedHex))
            #expect(pruned.isPruned && pruned.id == decoded.id)
        }
    }

    @Test("the version-4 fixture is present, four items as version 3's")
    func present4() throws {
        let file = try #require(ErasableGoldenFile.loaded4)
        #expect(file.envelopes.map(\.kind) == ["text", "edit", "reaction", "tombstone"] && file.envelopes.allSatisfy { $0.bytes.hasPrefix("04") })
    }
}
