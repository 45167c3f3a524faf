import Crypto
import Discovery
import Testing

let labNetwork = NetworkKey.derived(fromName: "lan")
let t0: UInt64 = 1_800_000_000_000

/// A datagram made by hand, for the cases `Announcement.sealed` cannot make.
func handMade(kind: UInt8 = 1, node: PublicKey, port: UInt16 = 7733, timestamp: UInt64 = t0, signer: SigningKey,
              network: NetworkKey = labNetwork, extra: [UInt8] = []) throws -> [UInt8] {
    var fields = Announcement.magic + [Announcement.version, kind] + node.bytes + [UInt8(port >> 8), UInt8(port & 0xFF)]
    for shift in stride(from: 56, through: 0, by: -8) { fields.append(UInt8(truncatingIfNeeded: timestamp >> UInt64(shift))) }
    let signature = signer.sign(fields, context: .announcement)
    let body = Array(fields[5...]) + signature + extra
    let key = try #require(Announcement.key(for: network))
    return Announcement.magic + [Announcement.version] + (try key.seal(body, associatedData: Announcement.magic + [Announcement.version]))
}

@Suite("Discovery datagrams")
struct AnnouncementTests {
    let key = Announcement.key(for: labNetwork)!

    @Test("a sealed announcement opens to the same fields; its size is fixed; nothing readable is in it")
    func roundTrip() throws {
        let signer = try SigningKey.generate()
        let a = Announcement(kind: .announce, node: signer.publicKey, port: 40_001, timestamp: t0 + 5)
        let bytes = try a.sealed(by: signer, key: key)
        #expect(bytes.count == Announcement.size)
        #expect(Announcement.open(bytes, key: key) == .success(a))
        // The node id does not appear in clear.
        #expect(!bytes.indices.dropLast(31).contains { Array(bytes[$0..<$0 + 32]) == signer.publicKey.bytes })
        let q = Announcement(kind: .query, node: signer.publicKey, port: 0, timestamp: t0)
        #expect(Announcement.open(try q.sealed(by: signer, key: key), key: key) == .success(q))
    }

    @Test("each bad datagram is refused with its own reason")
    func refusals() throws {
        let signer = try SigningKey.generate(), other = try SigningKey.generate()
        let good = try Announcement(kind: .announce, node: signer.publicKey, port: 1, timestamp: t0).sealed(by: signer, key: key)
        func reason(_ bytes: [UInt8]) -> Announcement.Drop? {
            if case let .failure(r) = Announcement.open(bytes, key: key) { return r }
            return nil
        }
        #expect(reason([UInt8](repeating: 0, count: Announcement.maximumDatagram + 1)) == .oversized)
        #expect(reason(Announcement.magic + [1] + [UInt8](repeating: 0, count: Announcement.maximumDatagram - 5)) == .malformed, "at the size limit: read, then refused")
        #expect(reason(Array(good.prefix(4))) == .truncated)
        #expect(reason(Array(good.dropLast())) == .truncated)
        #expect(reason(good + [0]) == .malformed)
        #expect(reason(Array("XXXX".utf8) + good.dropFirst(4)) == .notPeernode)
        #expect(reason(Announcement.magic + [2] + good.dropFirst(5)) == .unknownVersion)
        var flipped = good
        flipped[40] ^= 1
        #expect(reason(flipped) == .foreignNetwork)
        let elsewhere = try Announcement(kind: .announce, node: signer.publicKey, port: 1, timestamp: t0)
            .sealed(by: signer, key: #require(Announcement.key(for: .derived(fromName: "elsewhere"))))
        #expect(reason(elsewhere) == .foreignNetwork)
        // Inside the seal: someone with the network key claiming another's identity.
        #expect(reason(try handMade(node: signer.publicKey, signer: other)) == .badSignature)
        #expect(reason(try handMade(kind: 9, node: signer.publicKey, signer: signer)) == .malformed)
        #expect(reason(try handMade(node: signer.publicKey, signer: signer, extra: [0])) == .malformed)
        #expect(reason(try handMade(node: signer.publicKey, signer: signer)) == nil)
    }
}
