import Foundation
import Testing
@testable import WebSocket

@Suite("Protocol violations from a raw peer get the right close code", .serialized)
struct ViolationTests {
    static let expected: [String: String] = [
        "unmasked": "1002", "rsv1": "1002", "rsv3": "1002", "opcode3": "1002", "opcode11": "1002",
        "fragmented-ping": "1002", "long-ping": "1002", "lone-continuation": "1002", "nested-message": "1002",
        "bad-utf8": "1007", "bad-utf8-fragments": "1007", "too-big-declared": "1009",
        "close-1-byte": "1002", "close-1005": "1002", "close-bad-reason": "1007", "text-on-binary-link": "1003",
    ]

    func run(port: UInt16, cases: [String]) async throws -> [String: String] {
        let peer = try PeerProcess(Peers.python, [Peers.script("py_violations.py"), String(port)] + cases)
        #expect(try await peer.wait(timeout: 60) == 0, "\(peer.text)")
        var seen: [String: String] = [:]
        for line in peer.text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count >= 2 { seen[String(parts[0])] = String(parts[1]) }
        }
        return seen
    }

    @Test("each violation, sent as raw bytes by Python, is answered with its close code")
    func violations() async throws {
        guard Peers.require(Peers.python, "Python venv") else { return }
        // Text allowed, 1 MiB message limit.
        let server = try EchoServer(configuration: .init(
            paths: ["/peernode/1"], subprotocols: ["peernode.1"], limits: WebSocketLimits(maximumMessageSize: 1 << 20)))
        let textCases = Self.expected.keys.filter { $0 != "text-on-binary-link" }.sorted()
        var seen = try await run(port: server.port, cases: textCases)
        // A binary-only link, as peernode's is.
        let binary = try EchoServer(configuration: .init(
            paths: ["/peernode/1"], subprotocols: ["peernode.1"], limits: WebSocketLimits(acceptsText: false)))
        seen.merge(try await run(port: binary.port, cases: ["text-on-binary-link"])) { a, _ in a }
        for (name, code) in Self.expected.sorted(by: { $0.key < $1.key }) {
            #expect(seen[name] == code, "\(name): expected \(code), got \(seen[name] ?? "nothing")")
        }
        // Every one of those connections was reported closed by us, with the code sent.
        let closes = try await server.waitForCloses(textCases.count)
        #expect(closes.count == textCases.count)
        #expect(closes.allSatisfy { !$0.byPeer })
        #expect(Set(closes.map { String($0.code.rawValue) }) == Set(textCases.compactMap { Self.expected[$0] }))
    }
}
