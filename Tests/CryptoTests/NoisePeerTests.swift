import Crypto
import Foundation
import TestSupport
import Testing

/// Python `noiseprotocol` (PyPI) with Python `cryptography` for the identity
/// binding, run from the virtualenv `make test` prepares.
enum NoisePeer {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/peers-venv/bin/python").path
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/noise_peer.py").path

    static func start(_ role: String, network: NetworkKey, seed: [UInt8], mode: String = "normal",
                      cipher: NoiseCipher = .chaChaPoly) throws -> LineProcess? {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("no Python virtualenv at \(python): run `make test`, which installs noiseprotocol")
            return nil
        }
        return try LineProcess(python, [script, role, Hex.encode(network.exportedBytes), Hex.encode(seed), mode, cipher.rawValue])
    }
}

@Suite("Noise XXpsk0 against Python noiseprotocol", .serialized)
struct NoisePeerTests {
    let network = NetworkKey.generate()
    let pythonSeed = secureRandomBytes(32)

    func next(_ peer: LineProcess) async throws -> [UInt8] {
        let read = await peer.readLine()
        let rest = read == nil ? await peer.rest() : ""
        let line = try #require(read, "peer ended: \(rest)")
        #expect(!line.hasPrefix("error"), "\(line)")
        return try Hex.decode(line)
    }

    /// Both ciphers where this CPU runs them; AES-GCM's absence is said, not hidden.
    static let ciphers: [NoiseCipher] = {
        if !NoiseCipher.aesGCM.isAvailable { print("NoisePeerTests: this CPU has no AES instructions: AES-GCM links are not tried here") }
        return NoiseCipher.linkPreference
    }()

    /// After the handshake: three messages each way (nonces 0, 1, 2: the
    /// counter's byte order shows), then both directions rekeyed.
    func transport(_ hs: NoiseHandshake, _ peer: LineProcess, me: SigningKey, cipher: NoiseCipher) async throws {
        #expect(await peer.readLine() == "identity \(me.publicKey.hex)")
        var transport = try hs.transport()
        #expect(transport.cipher == cipher)
        #expect(transport.remoteIdentity == (try SigningKey(seed: pythonSeed)).publicKey)
        for _ in 0..<3 { #expect(try transport.decrypt(await next(peer)) == Array("hello from python".utf8)) }
        for _ in 0..<3 { peer.send(Hex.encode(try transport.encrypt(Array("hello from swift".utf8)))) }
        transport.rekeySending()
        transport.rekeyReceiving()
        #expect(try transport.decrypt(await next(peer)) == Array("rekeyed python".utf8))
        peer.send(Hex.encode(try transport.encrypt(Array("rekeyed swift".utf8))))
        #expect(await peer.readLine() == "ok")
    }

    @Test("our initiator, their responder: handshake, identities, transport both ways, rekey", arguments: ciphers)
    func weInitiate(cipher: NoiseCipher) async throws {
        let me = try SigningKey.generate()
        guard let peer = try NoisePeer.start("responder", network: network, seed: pythonSeed, cipher: cipher) else { return }
        var hs = try NoiseHandshake(role: .initiator, identity: me, networkKey: network, cipher: cipher)
        peer.send(Hex.encode(try hs.writeMessage()))
        try hs.readMessage(await next(peer))
        peer.send(Hex.encode(try hs.writeMessage()))
        try await transport(hs, peer, me: me, cipher: cipher)
    }

    @Test("their initiator, our responder: handshake, identities, transport both ways, rekey", arguments: ciphers)
    func theyInitiate(cipher: NoiseCipher) async throws {
        let me = try SigningKey.generate()
        guard let peer = try NoisePeer.start("initiator", network: network, seed: pythonSeed, cipher: cipher) else { return }
        var hs = try NoiseHandshake(role: .responder, identity: me, networkKey: network, cipher: cipher)
        try hs.readMessage(await next(peer))
        peer.send(Hex.encode(try hs.writeMessage()))
        try hs.readMessage(await next(peer))
        try await transport(hs, peer, me: me, cipher: cipher)
    }

    @Test("AES-GCM against ChaChaPoly: the first message fails, on either side")
    func cipherMismatch() async throws {
        guard NoiseCipher.aesGCM.isAvailable else { return }
        guard let initiator = try NoisePeer.start("initiator", network: network, seed: pythonSeed, cipher: .chaChaPoly) else { return }
        var hs = try NoiseHandshake(role: .responder, identity: try .generate(), networkKey: network, cipher: .aesGCM)
        let first = await initiator.readLine() ?? ""
        #expect(throws: CryptoError.noise(.decryptFailed(message: 1))) { try hs.readMessage(try Hex.decode(first)) }

        guard let responder = try NoisePeer.start("responder", network: network, seed: pythonSeed, cipher: .chaChaPoly) else { return }
        var ours = try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network, cipher: .aesGCM)
        responder.send(Hex.encode(try ours.writeMessage()))
        #expect(await responder.readLine()?.hasPrefix("error") == true)
    }

    @Test("another network key: refused at message 1 on either side")
    func wrongNetwork() async throws {
        guard let initiator = try NoisePeer.start("initiator", network: .generate(), seed: pythonSeed) else { return }
        var hs = try NoiseHandshake(role: .responder, identity: try .generate(), networkKey: network)
        let first = await initiator.readLine() ?? ""
        #expect(throws: CryptoError.noise(.decryptFailed(message: 1))) { try hs.readMessage(try Hex.decode(first)) }

        guard let responder = try NoisePeer.start("responder", network: .generate(), seed: pythonSeed) else { return }
        var ours = try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network)
        responder.send(Hex.encode(try ours.writeMessage()))
        #expect(await responder.readLine()?.hasPrefix("error") == true)
    }

    @Test("a peer that binds another identity, or signs wrongly, is refused")
    func badBinding() async throws {
        for (mode, failure) in [("bad-identity", NoiseFailure.identityMismatch), ("bad-signature", .badIdentitySignature)] {
            guard let peer = try NoisePeer.start("responder", network: network, seed: pythonSeed, mode: mode) else { return }
            var hs = try NoiseHandshake(role: .initiator, identity: try .generate(), networkKey: network)
            peer.send(Hex.encode(try hs.writeMessage()))
            let m2 = try await next(peer)
            #expect(throws: CryptoError.noise(failure)) { try hs.readMessage(m2) }
        }
    }
}
