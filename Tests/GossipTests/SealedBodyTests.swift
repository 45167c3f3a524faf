import Crypto
import Gossip
import TestSupport
import Testing

/// Envelope version 2: the kind sealed with the body, bodies padded to
/// `SealedBody.buckets` (issue 13, finding 7).
@Suite("Sealed bodies (envelope version 2)")
struct SealedBodyTests {
    let author = try! SigningKey(seed: [UInt8](repeating: 0x44, count: 32))  // fixed test input
    let network = NetworkKey.derived(fromName: "sealed")
    var room: RoomID { RoomID.publicRoom(.general, network: network) }
    var key: SymmetricKey { network.publicRoomKey(roomName: "#general") }

    func envelope(_ kind: Kind, _ content: [UInt8], room: RoomID? = nil) throws -> Envelope {
        let room = room ?? self.room
        let body = try SealedBody.seal(kind: kind, content: content, key: key, author: author.publicKey, room: room)
        return try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1_000, room: room, body: body)
    }

    @Test("the buckets: 256, 512, … 65,536, then 65,538; each content size goes to the smallest bucket with room for kind and marker")
    func buckets() throws {
        #expect(SealedBody.buckets == [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 65538])
        // kind (1) + content + marker (1) ≤ bucket: 254 bytes of content fit 256, 255 do not.
        #expect(SealedBody.bucket(for: 1 + 254) == 256)
        #expect(SealedBody.bucket(for: 1 + 255) == 512)
        #expect(SealedBody.bucket(for: 1 + 65_534) == 65_536)
        #expect(SealedBody.bucket(for: 1 + 65_535) == 65_538)
        #expect(SealedBody.bucket(for: 1 + Envelope.maximumPlaintextBody) == 65_538)
        #expect(SealedBody.bucket(for: 2 + Envelope.maximumPlaintextBody) == nil)
    }

    @Test("round trip: the kind and content come back from the body, and the wire shows neither", arguments: Kind.allCases)
    func roundTrip(kind: Kind) throws {
        let e = try envelope(kind, Array("secret".utf8))
        let decoded = try Envelope.decode(e.encoded)
        #expect(decoded == e)
        #expect(decoded.version == 4 && decoded.clearKind == nil && !decoded.isPruned)
        #expect(try SealedBody.open(decoded, key: key) == OpenedBody(kind: kind, content: Array("secret".utf8)))
        // Layout (version 4, as 3): no kind byte; an empty erase list, the body's length and
        // hash, the signature, the form byte and a body of the smallest bucket.
        #expect(e.encoded.count == 1 + 32 + 8 + 32 + 2 + 8 + 32 + 1 + 4 + 32 + 64 + 1 + (256 + 40))
    }

    @Test("a text, a receipt, an invite and a join of different lengths under 255 bytes are the same size on the wire")
    func sameSize() throws {
        let sizes = try [(Kind.text, 1), (.receipt, 41), (.invite, 80), (.join, 0), (.text, 254)].map { kind, n in
            try envelope(kind, [UInt8](repeating: 0x61, count: n)).encoded.count
        }
        #expect(Set(sizes).count == 1, "\(sizes)")
    }

    @Test("content at the limit (65,536 bytes) seals and opens; one past is refused")
    func contentLimit() throws {
        let largest = [UInt8](repeating: 7, count: Envelope.maximumPlaintextBody)
        let e = try envelope(.text, largest)
        #expect(e.body.count == Envelope.maximumBody)
        #expect(try SealedBody.open(try Envelope.decode(e.encoded), key: key).content == largest)
        #expect(throws: EnvelopeError.self) { try envelope(.text, largest + [7]) }
    }

    @Test("a body that is not a padded size is refused when signing and when decoding", arguments: [0, 40, 255, 256 + 39, 256 + 41, 512 + 39, 65_538 + 39, 65_538 + 41])
    func notPadded(size: Int) throws {
        #expect(throws: EnvelopeError.bodyNotPadded(size: size)) {
            try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, body: [UInt8](repeating: 0, count: size))
        }
        // The same bytes as a version-1 envelope, relabelled as version 2 and re-signed, are refused by decode.
        guard size <= Envelope.maximumBody else { return }
        let v1 = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, kind: .text,
                                   body: [UInt8](repeating: 0, count: size))
        var bytes = Array(v1.signedBytes)
        bytes[0] = 2
        bytes.remove(at: 1 + 32 + 8 + 32 + 2 + 8 + 32)  // the kind byte
        let signature = author.sign(bytes, context: .envelope)
        #expect(throws: EnvelopeError.bodyNotPadded(size: size)) { try Envelope.decode(bytes + signature) }
    }

    @Test("every padded size decodes", arguments: SealedBody.buckets)
    func everyBucket(bucket: Int) throws {
        let content = [UInt8](repeating: 1, count: bucket - 2)
        let e = try envelope(.text, content)
        #expect(e.body.count == bucket + SymmetricKey.overhead)
        #expect(try Envelope.decode(e.encoded).body.count == bucket + SymmetricKey.overhead)
    }

    @Test("a body cannot be opened under another room or author (associated data), nor with another key")
    func bound() throws {
        let e = try envelope(.text, Array("hi".utf8))
        let otherRoom = RoomID.publicRoom(try RoomName("#other"), network: network)
        let moved = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: otherRoom, body: e.body)
        #expect(throws: (any Error).self) { try SealedBody.open(moved, key: key) }
        let thief = try SigningKey.generate()
        let stolen = try Envelope.sign(by: thief, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, body: e.body)
        #expect(throws: (any Error).self) { try SealedBody.open(stolen, key: key) }
        #expect(throws: (any Error).self) { try SealedBody.open(e, key: SymmetricKey.generate()) }
    }

    @Test("a sealed plaintext with bad padding or an unknown kind is refused, not trusted")
    func badInside() throws {
        for padded: [UInt8] in [[UInt8](repeating: 0, count: 256), [UInt8(Kind.allCases.count + 1)] + [0x80] + [UInt8](repeating: 0, count: 254), [1, 0x80, 1] + [UInt8](repeating: 0, count: 253)] {
            let body = try key.seal(padded, associatedData: Array("peernode/2 body".utf8) + [0] + author.publicKey.bytes + room.bytes)
            let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, body: body)
            #expect(throws: EnvelopeError.self) { try SealedBody.open(e, key: key) }
        }
    }

    @Test("a direct conversation's room and key need the pair's shared secret: the same for both, unlike anyone else's")
    func directRoom() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate(), eve = try SigningKey.generate()
        let ab = try DirectKey(own: alice, peer: bob.publicKey), ba = try DirectKey(own: bob, peer: alice.publicKey)
        #expect(RoomID.direct(ab, network: network) == RoomID.direct(ba, network: network))
        #expect(ab.conversationKey.exportedBytes == ba.conversationKey.exportedBytes)
        // Eve's conversations with each of them are other rooms, and the
        // public derivation of version 1 names another room too.
        let eveRooms = [try DirectKey(own: eve, peer: alice.publicKey), try DirectKey(own: eve, peer: bob.publicKey)].map { RoomID.direct($0, network: network) }
        #expect(!eveRooms.contains(RoomID.direct(ab, network: network)))
        #expect(RoomID.directVersion1(alice.publicKey, bob.publicKey, network: network) != RoomID.direct(ab, network: network))
        // Another network: another room.
        #expect(RoomID.direct(ab, network: .derived(fromName: "other")) != RoomID.direct(ab, network: network))
    }
}
