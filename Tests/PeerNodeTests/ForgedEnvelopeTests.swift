import Crypto
import Foundation
import Gossip
import TestSupport
import Testing
import WebSocket

/// A hostile peer written here, in the test, from the library's parts: it
/// completes the real handshake with a node, then sends envelopes whose
/// signatures are forged.
@Suite("Forged envelopes over a real link", .serialized)
struct ForgedEnvelopeTests {
    @Test("a peer that sends more than Replicator.invalidLimit forged envelopes is disconnected; none is stored or shown; the refusals are counted")
    func forged() async throws {
        let dir = TemporaryDirectory()
        let node = try NodeProcess(dir: dir.path, ["--nick", "target"])
        #expect(await started(node))
        let port = try #require(node.url.split(separator: ":").last.flatMap { UInt16($0) })

        let identity = try SigningKey.generate()
        let network = NetworkKey.derived(fromName: NetworkKey.defaultName)
        let room = RoomID.publicRoom(.general, network: network)
        // Each forged envelope: properly signed, then one signature byte flipped.
        let forged = try (1...UInt64(Replicator.invalidLimit + 4)).map { i -> CarriedEnvelope in
            let author = try SigningKey.generate()
            var bytes = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1_000 + i,
                                          room: room, kind: .text, body: [UInt8](repeating: 7, count: 40)).encoded
            bytes[bytes.count - 1] ^= 0x01
            return CarriedEnvelope(hops: 0, envelope: try Envelope.decode(bytes, verification: .trustedStorage))
        }

        let peer = try HostilePeer(identity: identity, network: network, forged: forged)
        let loop = try EventLoop()
        loop.start()
        defer { loop.shutdown() }
        let callbacks = WebSocketCallbacks(
            onOpen: { c in peer.opened(c) },
            onMessage: { c, m in if case let .binary(bytes) = m { peer.received(bytes, on: c) } },
            onClose: { _, info in peer.lock.withLock { peer.closed = info } })
        _ = try WebSocketClient.connect(host: "127.0.0.1", port: port, path: "/peernode/1",
                                        configuration: .init(subprotocols: ["peernode.1"]), callbacks: callbacks, loop: loop)

        let deadline = Date().addingTimeInterval(20)
        while peer.lock.withLock({ peer.closed == nil }) && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        let (established, closed) = peer.lock.withLock { (peer.established, peer.closed) }
        #expect(established, "the handshake completed")
        #expect(closed?.code == .policyViolation, "\(String(describing: closed))")
        node.send("/stats")
        let stats = await node.wait { $0["type"] == "stats" }
        #expect(stats?["disconnected_invalid"] == "1", "\(stats ?? [:])")
        #expect((stats?["invalid_envelope"]).flatMap { Int($0) }.map { $0 > Replicator.invalidLimit } == true, "\(stats ?? [:])")
        #expect(!node.events.value.contains { $0["type"] == "message" && $0["author"] != node.id })
        node.quit()
    }
}

/// The hostile peer's state; its callbacks all run on its event loop.
final class HostilePeer: @unchecked Sendable {
    let lock = NSLock()
    var session: LinkSession
    let forged: [CarriedEnvelope]
    var established = false
    var closed: CloseInfo?

    init(identity: SigningKey, network: NetworkKey, forged: [CarriedEnvelope]) throws {
        session = try LinkSession(initiator: true, identity: identity, networkKey: network, now: 0)
        self.forged = forged
    }

    func run(_ actions: [LinkSession.Action], on c: WebSocketConnection) {
        for case let .send(bytes) in actions { c.send(.binary(bytes)) }
    }

    func opened(_ c: WebSocketConnection) { run(session.start(), on: c) }

    func received(_ bytes: [UInt8], on c: WebSocketConnection) {
        run(session.receive(bytes), on: c)
        guard session.isEstablished, !lock.withLock({ established }) else { return }
        lock.withLock { established = true }
        // Handshake done: the forged envelopes, four to a batch.
        for start in stride(from: 0, to: forged.count, by: 4) {
            let message = GossipMessage.envelopes(Array(forged[start..<min(start + 4, forged.count)])).encoded
            for chunk in GossipChunker.chunks(message) { run(session.send(chunk), on: c) }
        }
    }
}
