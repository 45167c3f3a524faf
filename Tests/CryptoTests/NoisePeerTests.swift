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

    static func start(_ role: String, network: NetworkKey, seed: [UInt8], mode: String = "normal") throws -> LineProcess? {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("no Python virtualenv at \(python): run `make test`, which installs noiseprotocol")
            return nil
        }
        return try LineProcess(python, [script, role, Hex.encode(network.exportedBytes), Hex.encode(seed), mode])
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

    @Test("our initiator, their responder: handshake, identities, transport both ways")
    func weInitiate() async throws {
        let me = try SigningKey.generate()
        guard let peer = try NoisePeer.start("responder", network: network, seed: pythonSeed) else { return }
        var hs = try NoiseHandshake(role: .initiator, identity: me, networkKey: network)
        peer.send(Hex.encode(try hs.writeMessage()))
        try hs.readMessage(await next(peer))
        peer.send(Hex.encode(try hs.writeMessage()))
        #expect(await peer.readLine() == "identity \(me.publicKey.hex)")
        var transport = try hs.transport()
        #expect(transport.remoteIdentity == (try SigningKey(seed: pythonSeed)).publicKey)
        #expect(try transport.decrypt(await next(peer)) == Array("hello from python".utf8))
        peer.send(Hex.encode(try transport.encrypt(Array("hello from swift".utf8))))
        #expect(await peer.readLine() == "ok")
    }

    @Test("their initiator, our responder: handshake, identities, transport both ways")
    func theyInitiate() async throws {
        let me = try SigningKey.generate()
        guard let peer = try NoisePeer.start("initiator", network: network, seed: pythonSeed) else { return }
        var hs = try NoiseHandshake(role: .responder, identity: me, networkKey: network)
        try hs.readMessage(await next(peer))
        peer.send(Hex.encode(try hs.writeMessage()))
        try hs.readMessage(await next(peer))
        #expect(await peer.readLine() == "identity \(me.publicKey.hex)")
        var transport = try hs.transport()
        #expect(transport.remoteIdentity == (try SigningKey(seed: pythonSeed)).publicKey)
        #expect(try transport.decrypt(await next(peer)) == Array("hello from python".utf8))
        peer.send(Hex.encode(try transport.encrypt(Array("hello from swift".utf8))))
        #expect(await peer.readLine() == "ok")
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
