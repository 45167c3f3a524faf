import Crypto
import Gossip
import Testing

/// Carries messages between two sessions until neither has more to say.
func converse(_ a: inout LinkSession, _ b: inout LinkSession) -> (a: [LinkSession.Action], b: [LinkSession.Action]) {
    var seenA: [LinkSession.Action] = [], seenB: [LinkSession.Action] = []
    var toB: [[UInt8]] = [], toA: [[UInt8]] = []
    func route(_ actions: [LinkSession.Action], into queue: inout [[UInt8]], seen: inout [LinkSession.Action]) {
        for action in actions {
            if case let .send(bytes) = action { queue.append(bytes) } else { seen.append(action) }
        }
    }
    route(a.start(), into: &toB, seen: &seenA)
    while !toA.isEmpty || !toB.isEmpty {
        for m in toB { route(b.receive(m), into: &toA, seen: &seenB) }
        toB = []
        for m in toA { route(a.receive(m), into: &toB, seen: &seenA) }
        toA = []
    }
    return (seenA, seenB)
}

@Suite("Link session: Noise over a message transport")
struct LinkSessionTests {
    let network = NetworkKey.derived(fromName: "link-tests")

    func pair(_ alice: SigningKey, _ bob: SigningKey, bobNetwork: NetworkKey? = nil, expected: PublicKey? = nil,
              blocked: PublicKey? = nil) throws -> (LinkSession, LinkSession) {
        (try LinkSession(initiator: true, identity: alice, networkKey: network, now: 0, expectedRemote: expected),
         try LinkSession(initiator: false, identity: bob, networkKey: bobNetwork ?? network, now: 0,
                         isBlocked: { $0 == blocked }))
    }

    @Test("established both ways, then plaintexts travel encrypted")
    func established() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        var (a, b) = try pair(alice, bob, expected: bob.publicKey)
        let (seenA, seenB) = converse(&a, &b)
        #expect(seenA == [.established(bob.publicKey)])
        #expect(seenB == [.established(alice.publicKey)])
        guard case let .send(wire)? = a.send(Array("hi".utf8)).first else { Issue.record("no send"); return }
        #expect(!wire.contains(Array("hi".utf8)))
        #expect(b.receive(wire) == [.deliver(Array("hi".utf8))])
        // The same transport message again: refused, link ends.
        #expect(b.receive(wire) == [.close(.transportDecryptFailed)])
        #expect(b.receive(wire) == [])
    }

    @Test("each side's nick claim travels in its binding; 32 bytes go, longer ones are left out; invalid text is not shown")
    func nickClaims() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        let longest = String(repeating: "n", count: NoiseHandshake.maximumNickClaim)
        var a = try LinkSession(initiator: true, identity: alice, networkKey: network, now: 0, nick: "alice")
        var b = try LinkSession(initiator: false, identity: bob, networkKey: network, now: 0, nick: longest)
        let (seenA, seenB) = converse(&a, &b)
        #expect(seenA == [.established(bob.publicKey)] && seenB == [.established(alice.publicKey)])
        #expect(b.remoteNick == "alice")
        #expect(a.remoteNick == longest)
        // One byte past the limit: not sent at all (the link still comes up).
        var c = try LinkSession(initiator: true, identity: alice, networkKey: network, now: 0, nick: longest + "x")
        var d = try LinkSession(initiator: false, identity: bob, networkKey: network, now: 0, nick: "\u{1b}[2J")
        let (seenC, seenD) = converse(&c, &d)
        #expect(seenC == [.established(bob.publicKey)] && seenD == [.established(alice.publicKey)])
        #expect(d.remoteNick == nil)
        #expect(c.remoteNick == nil, "an escape sequence is not a nick")
    }

    @Test("wrong network key, blocked identity, unexpected identity, talking to itself: each a named failure")
    func refusals() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        var (a1, b1) = try pair(alice, bob, bobNetwork: .derived(fromName: "elsewhere"))
        #expect(converse(&a1, &b1).b == [.close(.wrongNetworkKey)])
        var (a2, b2) = try pair(alice, bob, blocked: alice.publicKey)
        #expect(converse(&a2, &b2).b == [.close(.blocked(alice.publicKey))])
        let carol = try SigningKey.generate()
        var (a3, b3) = try pair(alice, bob, expected: carol.publicKey)
        #expect(converse(&a3, &b3).a == [.close(.unexpectedIdentity(expected: carol.publicKey, got: bob.publicKey))])
        var (a4, b4) = try pair(alice, alice)
        #expect(converse(&a4, &b4).a.contains(.close(.selfConnection)))
        #expect(LinkFailure.wrongNetworkKey.counterName == "wrong_network_key")
    }

    @Test("a stalled handshake times out; a truncated or replayed handshake message ends the link")
    func hostile() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        var stalled = try LinkSession(initiator: false, identity: bob, networkKey: network, now: 100, handshakeTimeout: 5)
        #expect(stalled.tick(now: 104.9) == [])
        #expect(stalled.tick(now: 105) == [.close(.handshakeTimeout)])

        var (a, b) = try pair(alice, bob)
        guard case let .send(m1)? = a.start().first else { Issue.record("no m1"); return }
        let truncated = b.receive(Array(m1.dropLast()))
        #expect(truncated.count == 1)
        if case .close(.wrongNetworkKey)? = truncated.first {} else if case .close(.malformedHandshake)? = truncated.first {} else {
            Issue.record("unexpected \(truncated)")
        }
        // Message 1 replayed to a responder that already answered it.
        var (_, b2) = try pair(alice, bob)
        _ = b2.receive(m1)
        guard case .close(.malformedHandshake)? = b2.receive(m1).first else { Issue.record("replay accepted"); return }
    }
}
