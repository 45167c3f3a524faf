import Testing
@testable import WebSocket

func request(_ lines: [String]) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

let goodRequest = [
    "GET /peernode/1 HTTP/1.1", "Host: server.example.com", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Protocol: chat, peernode.1",
]

func decide(_ lines: [String], _ configuration: WebSocketServer.Configuration = .init(paths: ["/peernode/1"], subprotocols: ["peernode.1"]))
    -> ServerHandshake.Decision? {
    let bytes = request(lines)
    guard let (head, used) = try? bytes.withUnsafeBytes({ try HTTPHead.parse($0, limit: 8192) }), used == bytes.count else { return nil }
    return ServerHandshake.decide(head, configuration: configuration)
}

func status(_ d: ServerHandshake.Decision?) -> Int? {
    switch d {
    case .accept: return 101
    case let .reject(_, status): return status
    case .http: return 200
    case nil: return nil
    }
}

@Suite("Opening handshake (RFC 6455 §4)")
struct HandshakeTests {
    @Test("the application's admit check runs after the protocol's, sees the query, and its answer refuses with its status and fields")
    func admit() throws {
        var configuration = WebSocketServer.Configuration(paths: ["/api"], subprotocols: [])
        configuration.admit = { r in
            r.queryValue("token") == "a b" ? nil : HTTPResponse(status: 401, text: "no\n", fields: ["WWW-Authenticate": "Token"])
        }
        var lines = goodRequest
        lines[0] = "GET /api?x=1&token=a%20b HTTP/1.1"
        #expect(status(decide(lines, configuration)) == 101)
        lines[0] = "GET /api?token=wrong HTTP/1.1"
        guard case let .reject(response, 401) = decide(lines, configuration) else {
            Issue.record("not refused")
            return
        }
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 401 Unauthorized\r\n") && text.contains("WWW-Authenticate: Token\r\n"))
        // A request the protocol refuses never reaches the check.
        lines[0] = "GET /elsewhere?token=a%20b HTTP/1.1"
        #expect(status(decide(lines, configuration)) == 404)
        // Plain GETs keep their query too.
        guard case let .http(request) = decide(["GET /page?q=%41 HTTP/1.1", "Host: h"], configuration) else {
            Issue.record("not plain HTTP")
            return
        }
        #expect(request.path == "/page" && request.queryValue("q") == "A" && request.queryValue("r") == nil)
    }

    @Test("a good request is accepted with the right accept value and subprotocol")
    func accept() throws {
        guard case let .accept(response, path, sub) = decide(goodRequest) else {
            Issue.record("not accepted")
            return
        }
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(text.contains("Sec-WebSocket-Protocol: peernode.1\r\n"))
        #expect(path == "/peernode/1" && sub == "peernode.1")
    }

    @Test("header names and tokens are case-insensitive; a subprotocol is answered as the client spelled it")
    func caseInsensitive() {
        let lines = ["GET /peernode/1 HTTP/1.1", "host: x", "UPGRADE: WebSocket", "connection: UPGRADE",
                     "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==", "SEC-WEBSOCKET-VERSION: 13", "Sec-WebSocket-Protocol: PEERNODE.1"]
        guard case let .accept(response, _, sub) = decide(lines) else {
            Issue.record("not accepted")
            return
        }
        // RFC 7936: a client may compare the answer with its offer exactly.
        #expect(String(decoding: response, as: UTF8.self).contains("Sec-WebSocket-Protocol: PEERNODE.1\r\n"))
        #expect(sub == "PEERNODE.1")
    }

    @Test("refusals: method 405, version 426 naming 13, bad key 400, no Connection: Upgrade 400, unknown path 404, HTTP/1.0 505")
    func refusals() {
        func replacing(_ prefix: String, with line: String?) -> [String] {
            goodRequest.compactMap { $0.hasPrefix(prefix) ? line : $0 }
        }
        #expect(status(decide(replacing("GET", with: "POST /peernode/1 HTTP/1.1"))) == 405)
        guard case let .reject(response, 426) = decide(replacing("Sec-WebSocket-Version", with: "Sec-WebSocket-Version: 8")) else {
            Issue.record("no 426")
            return
        }
        #expect(String(decoding: response, as: UTF8.self).contains("Sec-WebSocket-Version: 13\r\n"))
        #expect(status(decide(replacing("Sec-WebSocket-Key", with: "Sec-WebSocket-Key: c2hvcnQ="))) == 400)  // 5 bytes
        #expect(status(decide(replacing("Sec-WebSocket-Key", with: "Sec-WebSocket-Key: !!!notbase64!!!"))) == 400)
        #expect(status(decide(replacing("Sec-WebSocket-Key", with: nil))) == 400)
        #expect(status(decide(replacing("Connection", with: "Connection: keep-alive"))) == 400)
        #expect(status(decide(replacing("GET", with: "GET /other HTTP/1.1"))) == 404)
        #expect(status(decide(replacing("GET", with: "GET /peernode/1 HTTP/1.0"))) == 505)
        #expect(status(decide(replacing("Host", with: nil))) == 400)
    }

    @Test("subprotocols: none offered is accepted without one, unless required")
    func subprotocols() {
        let none = goodRequest.filter { !$0.hasPrefix("Sec-WebSocket-Protocol") }
        guard case let .accept(_, _, sub) = decide(none) else {
            Issue.record("not accepted")
            return
        }
        #expect(sub == nil)
        let strict = WebSocketServer.Configuration(paths: nil, subprotocols: ["peernode.1"], requireSubprotocol: true)
        #expect(status(decide(none, strict)) == 400)
        #expect(status(decide(goodRequest, strict)) == 101)
    }

    @Test("a GET without Upgrade goes to the HTTP handler")
    func plainHTTP() {
        guard case let .http(req) = decide(["GET /healthz?x=1 HTTP/1.1", "Host: a"]) else {
            Issue.record("not http")
            return
        }
        #expect(req.path == "/healthz")
    }

    @Test("head size: at the limit parsed, one past refused; bytes after the head are left alone")
    func headLimit() throws {
        var bytes = request(["GET / HTTP/1.1", "Host: a"])
        let limit = bytes.count
        #expect(try bytes.withUnsafeBytes { try HTTPHead.parse($0, limit: limit) }?.1 == limit)
        #expect(throws: HandshakeError.tooLarge(limit: limit - 1)) { try bytes.withUnsafeBytes { try HTTPHead.parse($0, limit: limit - 1) } }
        // Incomplete and already over the limit: refused without waiting for more.
        let partial = [UInt8](repeating: 0x41, count: 100)
        #expect(throws: HandshakeError.tooLarge(limit: 100)) { try partial.withUnsafeBytes { try HTTPHead.parse($0, limit: 100) } }
        #expect(try partial.withUnsafeBytes { try HTTPHead.parse($0, limit: 101) } == nil)
        bytes += [0x81, 0x80]
        #expect(try bytes.withUnsafeBytes { try HTTPHead.parse($0, limit: 8192) }?.1 == limit)
        #expect(throws: HandshakeError.self) { try request(["GET / HTTP/1.1", " folded: x"]).withUnsafeBytes { try HTTPHead.parse($0, limit: 8192) } }
        #expect(throws: HandshakeError.self) { try request(["GET / HTTP/1.1", "Bad\u{1}: x"]).withUnsafeBytes { try HTTPHead.parse($0, limit: 8192) } }
    }

    @Test("the client checks the accept value, the upgrade and the subprotocol")
    func client() throws {
        let c = ClientHandshake(subprotocols: ["peernode.1"], requireSubprotocol: true, keyBytes: Array("the sample nonce".utf8))
        #expect(c.key == "dGhlIHNhbXBsZSBub25jZQ==")
        func head(_ lines: [String]) throws -> HTTPHead {
            let b = request(lines)
            return try #require(try b.withUnsafeBytes { try HTTPHead.parse($0, limit: 8192) }).0
        }
        let ok = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Protocol: peernode.1"]
        #expect(try c.validate(head(ok)) == "peernode.1")
        #expect(throws: HandshakeError.badAccept) { try c.validate(head(ok.map { $0.hasPrefix("Sec-WebSocket-Accept") ? "Sec-WebSocket-Accept: AAAA" : $0 })) }
        #expect(throws: HandshakeError.unexpectedSubprotocol("chat")) { try c.validate(head(ok.map { $0.hasPrefix("Sec-WebSocket-Protocol") ? "Sec-WebSocket-Protocol: chat" : $0 })) }
        #expect(throws: HandshakeError.missingSubprotocol) { try c.validate(head(Array(ok.dropLast()))) }
        #expect(throws: HandshakeError.rejected(status: 404, reason: "Not Found")) { try c.validate(head(["HTTP/1.1 404 Not Found"])) }
        #expect(throws: HandshakeError.badUpgrade) { try c.validate(head(ok.filter { !$0.hasPrefix("Upgrade") })) }
    }
}
