import Foundation
import Testing
@testable import WebSocket

/// The cases every peer client runs against our server (Peers/*_client.*).
let clientCases = ["subprotocol"] + [0, 125, 126, 65535, 65536, 1 << 20].flatMap { ["binary \($0)", "text \($0)"] }
    + ["fragmented text", "ping answered", "server close code", "client close code sent", "refused handshake"]

@Suite("Real peers against our server", .serialized)
struct PeerClientTests {
    func run(_ executable: String, _ script: String) async throws {
        let server = try EchoServer()
        let peer = try PeerProcess(executable, [Peers.script(script), server.url])
        let status = try await peer.wait(timeout: 60)
        let output = peer.text
        #expect(status == 0, "\(output)")
        for name in clientCases {
            #expect(output.contains("ok \(name)\n"), "missing: \(name)\n\(output)")
        }
        #expect(!output.contains("FAIL"), "\(output)")
        // What the peer's close looked like from our side.
        let closes = try await server.waitForCloses(2)
        #expect(closes.contains(CloseInfo(code: CloseCode(rawValue: 4001), reason: "client says bye", byPeer: true)), "\(closes)")
        #expect(closes.contains(CloseInfo(code: CloseCode(rawValue: 4002), reason: "server says bye", byPeer: false)), "\(closes)")
    }

    @Test("Python websockets as client")
    func python() async throws {
        guard Peers.require(Peers.python, "Python websockets venv") else { return }
        try await run(Peers.python, "py_client.py")
    }

    @Test("Node ws as client")
    func node() async throws {
        guard Peers.require(Peers.node, "node") else { return }
        try await run(Peers.node, "node_client.js")
    }
}

@Suite("Our client against real peers", .serialized)
struct PeerServerTests {
    func run(_ executable: String, _ script: String) async throws {
        let peer = try PeerProcess(executable, [Peers.script(script)])
        let port = try #require(try await peer.port(), "peer did not start: \(peer.text)")
        try await conversation(port: port)
        await peer.stop()
    }

    func conversation(port: UInt16) async throws {
        let probe = try ClientProbe(port: port)
        await expectNext(probe, .open(subprotocol: "peernode.1"))
        let c = try #require(probe.connection)
        for size in [0, 125, 126, 65535, 65536, 1 << 20] {
            let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            c.send(.binary(data))
            await expectNext(probe, .message(.binary(data)))
            let text = String(repeating: "é", count: size / 2) + String(repeating: "x", count: size % 2)
            c.send(.text(text))
            await expectNext(probe, .message(.text(text)))
        }
        // Fragments both ways.
        c.send(fragments: [Array("frag".utf8), [], Array("ment €".utf8)], text: true)
        await expectNext(probe, .message(.text("fragment €")))
        c.send(.text("fragment-me"))
        await expectNext(probe, .message(.text("one two three")))
        c.ping(Array("hi".utf8))
        await expectNext(probe, .pong)
        // The peer closes with a code.
        c.send(.text("close:4002:server says bye"))
        await expectNext(probe, .closed(CloseInfo(code: CloseCode(rawValue: 4002), reason: "server says bye", byPeer: true)))
        // We close with a code; a new connection asks the peer what it saw.
        let second = try ClientProbe(port: port)
        await expectNext(second, .open(subprotocol: "peernode.1"))
        second.connection?.close(code: CloseCode(rawValue: 4001), reason: "client says bye")
        await expectNext(second, .closed(CloseInfo(code: CloseCode(rawValue: 4001), reason: "client says bye", byPeer: false)))
        let third = try ClientProbe(port: port)
        await expectNext(third, .open(subprotocol: "peernode.1"))
        third.connection?.send(.text("last-close"))
        await expectNext(third, .message(.text("4001:client says bye")))
        // A refused handshake.
        let refused = try ClientProbe(port: port, path: "/refuse")
        await expectNext(refused, .failed(.rejected(status: 403, reason: "Forbidden")))
    }

    @Test("Python websockets as server")
    func python() async throws {
        guard Peers.require(Peers.python, "Python websockets venv") else { return }
        try await run(Peers.python, "py_server.py")
    }

    @Test("Node ws as server")
    func node() async throws {
        guard Peers.require(Peers.node, "node") else { return }
        try await run(Peers.node, "node_server.js")
    }
}

/// The probe's next event must be `expected` (a missing event fails after the probe's timeout).
func expectNext(_ probe: ClientProbe, _ expected: ClientProbe.Event, sourceLocation: SourceLocation = #_sourceLocation) async {
    let event = await probe.next()
    if ProcessInfo.processInfo.environment["PEER_DEBUG"] != nil { print("DBG", String(describing: event).prefix(100)) }
    #expect(event == expected, sourceLocation: sourceLocation)
}
