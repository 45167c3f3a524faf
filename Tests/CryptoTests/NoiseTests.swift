import Crypto
import TestSupport
import Testing

/// Runs a whole handshake between two of our own ends.
func handshake(_ a: inout NoiseHandshake, _ b: inout NoiseHandshake) throws {
    try b.readMessage(a.writeMessage())
    try a.readMessage(b.writeMessage())
    try b.readMessage(a.writeMessage())
}

@Suite("Noise XXpsk0 link handshake (our two ends)")
struct NoiseTests {
    let network = NetworkKey.derived(fromName: "noise-tests")

    @Test("both ends finish with each other's identity, one handshake hash, and working transport both ways")
    func roundTrip() throws {
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        var i = try NoiseHandshake(role: .initiator, identity: alice, networkKey: network)
        var r = try NoiseHandshake(role: .responder, identity: bob, networkKey: network)
        try handshake(&i, &r)
        #expect(i.isComplete && r.isComplete)
        #expect(i.handshakeHash == r.handshakeHash)
        var ti = try i.transport(), tr = try r.transport()
        #expect(ti.remoteIdentity == bob.publicKey && tr.remoteIdentity == alice.publicKey)
        for n in 0..<5 {
            #expect(try tr.decrypt(ti.encrypt(Array("ping \(n)".utf8))) == Array("ping \(n)".utf8))
            #expect(try ti.decrypt(tr.encrypt(Array("pong \(n)".utf8))) == Array("pong \(n)".utf8))
        }
        // Replaying a transport message fails (the nonce moved on).
        let m = try ti.encrypt([1, 2, 3])
        _ = try tr.decrypt(m)
        #expect(throws: CryptoError.noise(.decryptFailed(message: 0))) { try tr.decrypt(m) }
        // Rekey on both sides keeps them talking.
        ti.rekeySending()
        tr.rekeyReceiving()
        #expect(try tr.decrypt(ti.encrypt([9])) == [9])
    }

    @Test("AES-256-GCM (where this CPU has AES): the same handshake and transport, rekey included; against a ChaChaPoly end it fails at message 1")
    func aesGCM() throws {
        guard NoiseCipher.aesGCM.isAvailable else {
            // libsodium offers AES-GCM only with AES-NI and PCLMUL; asking for it anyway is refused.
            #expect(throws: CryptoError.noise(.cipherUnavailable("AESGCM"))) {
                try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network, cipher: .aesGCM)
            }
            return
        }
        #expect(NoiseCipher.linkPreference == [.aesGCM, .chaChaPoly])
        #expect(NoiseHandshake.protocolName(.aesGCM) == "Noise_XXpsk0_25519_AESGCM_BLAKE2b")
        let alice = try SigningKey.generate(), bob = try SigningKey.generate()
        var i = try NoiseHandshake(role: .initiator, identity: alice, networkKey: network, cipher: .aesGCM)
        var r = try NoiseHandshake(role: .responder, identity: bob, networkKey: network, cipher: .aesGCM)
        try handshake(&i, &r)
        var ti = try i.transport(), tr = try r.transport()
        #expect(ti.cipher == .aesGCM && tr.cipher == .aesGCM && ti.remoteIdentity == bob.publicKey)
        for n in 0..<300 {
            #expect(try tr.decrypt(ti.encrypt(Array("ping \(n)".utf8))) == Array("ping \(n)".utf8))
        }
        let big = secureRandomBytes(NoiseTransport.maximumPlaintext)
        #expect(try ti.decrypt(tr.encrypt(big)) == big)
        ti.rekeySending()
        tr.rekeyReceiving()
        let m = try ti.encrypt([9])
        var flipped = m
        flipped[0] ^= 1
        var copy = tr
        #expect(throws: CryptoError.noise(.decryptFailed(message: 0))) { try copy.decrypt(flipped) }
        #expect(try tr.decrypt(m) == [9])

        for (a, b) in [(NoiseCipher.aesGCM, NoiseCipher.chaChaPoly), (.chaChaPoly, .aesGCM)] {
            var x = try NoiseHandshake(role: .initiator, identity: alice, networkKey: network, cipher: a)
            var y = try NoiseHandshake(role: .responder, identity: bob, networkKey: network, cipher: b)
            #expect(throws: CryptoError.noise(.decryptFailed(message: 1))) { try y.readMessage(x.writeMessage()) }
        }
    }

    @Test("another network key fails at message 1, before any identity is sent")
    func wrongNetwork() throws {
        var i = try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network)
        var r = try NoiseHandshake(role: .responder, identity: try .generate(), networkKey: .derived(fromName: "other"))
        let m1 = try i.writeMessage()
        #expect(m1.count == 32 + 16)  // e and an empty authenticated payload: no identity in it
        #expect(throws: CryptoError.noise(.decryptFailed(message: 1))) { try r.readMessage(m1) }
    }

    @Test("tampered, truncated, replayed and out-of-turn messages are refused")
    func hostile() throws {
        let a = try SigningKey.generate(), b = try SigningKey.generate()
        func fresh() throws -> (NoiseHandshake, NoiseHandshake) {
            (try NoiseHandshake(role: .initiator, identity: a, networkKey: network),
             try NoiseHandshake(role: .responder, identity: b, networkKey: network))
        }
        // Every truncation and every flipped byte of message 2.
        var (i0, r0) = try fresh()
        try r0.readMessage(i0.writeMessage())
        let m2 = try r0.writeMessage()
        for n in 0..<m2.count {
            var (i, r) = try fresh()
            try r.readMessage(i.writeMessage())
            _ = try r.writeMessage()
            #expect(throws: CryptoError.self) { try i.readMessage(Array(m2[0..<n])) }
        }
        for k in stride(from: 0, to: m2.count, by: 7) {
            var (i, r) = try fresh()
            try r.readMessage(i.writeMessage())
            _ = try r.writeMessage()
            var bad = m2
            bad[k] ^= 0x20
            #expect(throws: CryptoError.self) { try i.readMessage(bad) }
        }
        // A message 2 from another handshake (replayed) does not fit this one.
        var (i1, r1) = try fresh()
        try r1.readMessage(i1.writeMessage())
        #expect(throws: CryptoError.self) { try i1.readMessage(m2) }
        // Out of turn.
        var (i2, _) = try fresh()
        #expect(throws: CryptoError.noise(.outOfOrder)) { try i2.readMessage([0]) }
        _ = try i2.writeMessage()
        #expect(throws: CryptoError.noise(.outOfOrder)) { try i2.writeMessage() }
        #expect(throws: CryptoError.noise(.outOfOrder)) { try i2.transport() }
        // Over the Noise message limit.
        var (_, r3) = try fresh()
        #expect(throws: CryptoError.noise(.messageTooLong(65_536))) { try r3.readMessage([UInt8](repeating: 0, count: 65_536)) }
    }

    @Test("transport messages: at the 65,535-byte Noise limit fine, one past refused")
    func transportLimit() throws {
        var i = try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network)
        var r = try NoiseHandshake(role: .responder, identity: try .generate(), networkKey: network)
        try handshake(&i, &r)
        var ti = try i.transport(), tr = try r.transport()
        let biggest = [UInt8](repeating: 7, count: NoiseTransport.maximumPlaintext)
        let sealed = try ti.encrypt(biggest)
        #expect(sealed.count == 65_535)
        #expect(try tr.decrypt(sealed) == biggest)
        #expect(throws: CryptoError.noise(.messageTooLong(65_536))) { try ti.encrypt(biggest + [0]) }
    }
}
