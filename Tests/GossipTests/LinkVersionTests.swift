import Crypto
import Gossip
import Testing

@Suite("Link versions: a peer is pushed no envelope newer than its link carries")
struct LinkVersionTests {
    @Test("a version-2 envelope goes to a version-3 link and is held back from a version-2 link, which is not believed to hold it; a version-1 envelope goes to both")
    func heldBack() throws {
        let author = try SigningKey.generate()
        let room = RoomID.random()
        let key = SymmetricKey.generate()
        var r = Replicator(me: author.publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v2)
        _ = r.linkUp(2, now: 0, version: .v3)
        let first = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, kind: .text, body: [1])
        let sealed = try SealedBody.seal(kind: .text, content: [2], key: key, author: author.publicKey, room: room)
        let second = try Envelope.signVersion2(by: author, sequence: 2, previous: first.id, dependencies: [], timestamp: 2, room: room, body: sealed)

        let old = r.localPost(first)
        #expect(old.contains(.send(1, .envelopes([CarriedEnvelope(hops: 0, envelope: first)]))))
        #expect(old.contains(.send(2, .envelopes([CarriedEnvelope(hops: 0, envelope: first)]))))
        #expect(!old.contains { if case .heldBack = $0 { true } else { false } })

        let new = r.localPost(second)
        #expect(new == [.heldBack(1, 1), .send(2, .envelopes([CarriedEnvelope(hops: 0, envelope: second)]))])
        #expect(r.knownClock(of: 1)?[author.publicKey] == 1, "the older link is not believed to hold what it was not sent")
        #expect(r.knownClock(of: 2)?[author.publicKey] == 2)
    }

    @Test("a version-3 envelope goes to a version-5 link and later only; a version-4 link is held back from it")
    func versionThree() throws {
        let author = try SigningKey.generate()
        let room = RoomID.random()
        let key = SymmetricKey.generate()
        var r = Replicator(me: author.publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v4)
        _ = r.linkUp(2, now: 0, version: .v5)
        let sealed = try SealedBody.seal(kind: .text, content: [2], key: key, author: author.publicKey, room: room)
        let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 2, room: room, body: sealed, version: 3)
        #expect(e.version == 3)
        let sent = r.localPost(e)
        #expect(sent.contains(.heldBack(1, 1)))
        #expect(sent.contains { if case .send(2, _) = $0 { true } else { false } })
        #expect(LinkProtocol.v5.envelopeVersion == 3 && LinkProtocol.v4.envelopeVersion == 2 && LinkProtocol.newest == .v10 && LinkProtocol.v9.speaksPresence && !LinkProtocol.v8.speaksPresence && LinkProtocol.v6.speaksTyping && !LinkProtocol.v5.speaksTyping && LinkProtocol.v7.speaksFiles && !LinkProtocol.v6.speaksFiles && LinkProtocol.v8.namesFileOffers && !LinkProtocol.v7.namesFileOffers)
    }

    @Test("a version-4 envelope (what this build signs) goes to a version-10 link only; a version-9 link is held back from it")
    func versionFour() throws {
        let author = try SigningKey.generate()
        let room = RoomID.random()
        let key = SymmetricKey.generate()
        var r = Replicator(me: author.publicKey, clock: VectorClock(), random: SystemRandomNumberGenerator())
        _ = r.linkUp(1, now: 0, version: .v9)
        _ = r.linkUp(2, now: 0, version: .v10)
        let sealed = try SealedBody.seal(kind: .text, content: [2], key: key, author: author.publicKey, room: room)
        let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 2, room: room, body: sealed)
        #expect(e.version == 4 && Envelope.newestVersion == 4)
        let sent = r.localPost(e)
        #expect(sent.contains(.heldBack(1, 1)))
        #expect(sent.contains { if case .send(2, _) = $0 { true } else { false } })
        #expect(LinkProtocol.v10.envelopeVersion == 4 && LinkProtocol.v9.envelopeVersion == 3 && LinkProtocol.v10.subprotocol == "peernode.10")
    }
}

@Suite("Link terms: the version and the cipher, named by one subprotocol")
struct LinkTermsTests {
    @Test("offered newest first, AES-GCM before ChaChaPoly within a version from 10 on, and only when the node runs it")
    func offered() {
        let both = LinkTerms.subprotocols(ciphers: [.aesGCM, .chaChaPoly])
        #expect(both == ["peernode.10.aesgcm", "peernode.10", "peernode.9", "peernode.8", "peernode.7", "peernode.6",
                         "peernode.5", "peernode.4", "peernode.3", "peernode.2", "peernode.1"])
        #expect(LinkTerms.subprotocols(ciphers: [.chaChaPoly]) == LinkProtocol.subprotocols)
        #expect(LinkTerms.subprotocols(ciphers: [.chaChaPoly]).first == "peernode.10")
    }

    @Test("read back from what the WebSocket handshake agreed; anything else is no terms")
    func parsed() {
        #expect(LinkTerms(subprotocol: "peernode.10.aesgcm") == LinkTerms(version: .v10, cipher: .aesGCM))
        #expect(LinkTerms(subprotocol: "PeerNode.10.AESGCM") == LinkTerms(version: .v10, cipher: .aesGCM))
        #expect(LinkTerms(subprotocol: "peernode.10") == LinkTerms(version: .v10, cipher: .chaChaPoly))
        #expect(LinkTerms(subprotocol: "peernode.4") == LinkTerms(version: .v4))
        for bad in ["peernode.9.aesgcm", "peernode.10.chachapoly", "peernode.10.aesgcm.aesgcm", "peernode.11", "peernode.aesgcm",
                    ".aesgcm", "peernode.10aesgcm", "peernode.10.", ""] {
            #expect(LinkTerms(subprotocol: bad) == nil, "\(bad)")
        }
        #expect(LinkTerms(subprotocol: nil) == nil)
        for terms in [LinkTerms(version: .v10, cipher: .aesGCM), LinkTerms(version: .v10), LinkTerms(version: .v1)] {
            #expect(LinkTerms(subprotocol: terms.subprotocol) == terms)
        }
    }
}
