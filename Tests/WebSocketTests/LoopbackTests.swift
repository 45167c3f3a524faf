import Foundation
import FoundationNetworking
import Testing
@testable import WebSocket

@Suite("Our client against our server, over real sockets")
struct LoopbackTests {
    @Test("messages of every size class, fragments, ping, close codes both ways")
    func echo() async throws {
        let server = try EchoServer()
        let probe = try ClientProbe(port: server.port)
        #expect(await probe.next() == .open(subprotocol: "peernode.1"))
        let c = try #require(probe.connection)
        for size in [0, 125, 126, 65535, 65536, 1 << 20] {
            let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            c.send(.binary(data))
            #expect(await probe.next() == .message(.binary(data)), "binary \(size)")
        }
        c.send(fragments: [Array("frag".utf8), [], Array("ment €".utf8)], text: true)
        #expect(await probe.next() == .message(.text("fragment €")))
        c.ping([1, 2])
        #expect(await probe.next() == .pong)
        c.send(.text("close:4002:server says bye"))
        #expect(await probe.next() == .closed(CloseInfo(code: CloseCode(rawValue: 4002), reason: "server says bye", byPeer: true)))

        let second = try ClientProbe(port: server.port)
        #expect(await second.next() == .open(subprotocol: "peernode.1"))
        second.connection?.close(code: CloseCode(rawValue: 4001), reason: "client says bye")
        #expect(await second.next() == .closed(CloseInfo(code: CloseCode(rawValue: 4001), reason: "client says bye", byPeer: false)))
        let closes = try await server.waitForCloses(2)
        #expect(closes.contains(CloseInfo(code: CloseCode(rawValue: 4001), reason: "client says bye", byPeer: true)))
    }

    @Test("a refused handshake is reported with the status; plain HTTP GETs reach the handler")
    func refusals() async throws {
        let server = try EchoServer(http: { request in
            request.path == "/healthz" ? HTTPResponse(status: 200, text: "ok\n") : nil
        })
        let probe = try ClientProbe(port: server.port, path: "/nowhere")
        #expect(await probe.next() == .failed(.rejected(status: 404, reason: "Not Found")))
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(server.port)/healthz")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        let (_, missing) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(server.port)/metrics")!)
        #expect((missing as? HTTPURLResponse)?.statusCode == 404)
    }

    @Test("a client that requires a subprotocol refuses a server that picks none")
    func subprotocolRequired() async throws {
        let server = try EchoServer(configuration: .init(paths: nil, subprotocols: []))
        let probe = try ClientProbe(port: server.port, configuration: .init(subprotocols: ["peernode.1"], requireSubprotocol: true))
        #expect(await probe.next() == .failed(.missingSubprotocol))
    }
}
