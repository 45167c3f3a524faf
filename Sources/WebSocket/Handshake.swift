import Foundation

/// Why an opening handshake failed.
public enum HandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(limit: Int)
    case malformed(String)
    /// The server answered with something other than 101.
    case rejected(status: Int, reason: String)
    case badUpgrade
    case badAccept
    /// The server chose a subprotocol we did not offer.
    case unexpectedSubprotocol(String)
    /// We require a subprotocol and the server chose none.
    case missingSubprotocol
    case unexpectedExtension(String)
    case timeout
    case connectionClosed

    public var description: String {
        switch self {
        case let .tooLarge(limit): return "handshake head over \(limit) bytes"
        case let .malformed(what): return "malformed handshake: \(what)"
        case let .rejected(status, reason): return "server refused the upgrade: \(status) \(reason)"
        case .badUpgrade: return "response is not a WebSocket upgrade"
        case .badAccept: return "wrong Sec-WebSocket-Accept"
        case let .unexpectedSubprotocol(p): return "server chose subprotocol \(p), which was not offered"
        case .missingSubprotocol: return "server chose no subprotocol"
        case let .unexpectedExtension(e): return "server chose extension \(e), which was not offered"
        case .timeout: return "handshake timed out"
        case .connectionClosed: return "connection closed during the handshake"
        }
    }
}

/// RFC 6455 §1.3 / §4.2.2: the accept value for a client key.
public func websocketAccept(forKey key: String) -> String {
    Data(SHA1.hash(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
}

/// A plain HTTP request the server hands to the application (GET only).
public struct HTTPRequest: Sendable, Equatable {
    public let path: String
    public let head: HTTPHead
    /// What follows the `?` of the request target ("" when there is none), as it came.
    public var query: String = ""

    /// The value of one `name=value` pair of the query (the first), percent-decoded;
    /// nil when absent or not decodable.
    public func queryValue(_ name: String) -> String? {
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first.map(String.init) == name else { continue }
            return parts.count == 2 ? String(parts[1]).removingPercentEncoding : ""
        }
        return nil
    }
}

/// A response body given a part at a time as the socket takes it, so a
/// large file is served without being held whole. `next` is asked for the
/// next part on the connection's loop once less than
/// `HTTPBodyStream.window` waits unsent, never again before it answered;
/// it answers once, from any thread, with the part (non-empty), or nil to
/// stop: the connection is then closed short of `length`, which a client
/// reads as a failed response. Parts past `length` are refused the same way.
public final class HTTPBodyStream: Sendable {
    /// Unsent bytes below which the next part is asked for.
    public static let window = 512 << 10

    public let length: Int
    let next: @Sendable (@escaping @Sendable ([UInt8]?) -> Void) -> Void

    public init(length: Int, next: @escaping @Sendable (@escaping @Sendable ([UInt8]?) -> Void) -> Void) {
        self.length = length
        self.next = next
    }
}

/// A plain HTTP response from the application.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    /// More header fields, by name (written in name order after the fixed ones).
    public var fields: [String: String]
    /// A body given in parts instead of `body` (which is then not sent).
    public var stream: HTTPBodyStream?

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8], fields: [String: String] = [:]) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.fields = fields
    }

    /// A response whose body `stream` gives as the client reads.
    public init(status: Int, contentType: String, stream: HTTPBodyStream, fields: [String: String] = [:]) {
        self.init(status: status, contentType: contentType, body: [], fields: fields)
        self.stream = stream
    }

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.contentType == b.contentType && a.body == b.body && a.fields == b.fields && a.stream === b.stream
    }

    public init(status: Int, text: String, fields: [String: String] = [:]) {
        self.init(status: status, body: Array(text.utf8), fields: fields)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 206: return "Partial Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 416: return "Range Not Satisfiable"
        case 426: return "Upgrade Required"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }

    /// The bytes on the wire, closing the connection after the body (the
    /// head alone when a stream gives the body).
    func encoded(extraFields: [(String, String)] = []) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\nContent-Length: \(stream?.length ?? body.count)\r\nConnection: close\r\n"
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) + extraFields { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + (stream == nil ? body : [])
    }
}

/// What a server does with a request head (RFC 6455 §4.2.1–4.2.2). Pure.
enum ServerHandshake {
    enum Decision: Equatable {
        /// Upgrade: send `response`, then speak WebSocket.
        case accept(response: [UInt8], path: String, subprotocol: String?)
        /// A plain GET for the application's HTTP handler.
        case http(HTTPRequest)
        /// Refuse with this response and close.
        case reject(response: [UInt8], status: Int)
    }

    static func decide(_ head: HTTPHead, configuration: WebSocketServer.Configuration) -> Decision {
        func refuse(_ status: Int, _ message: String, _ fields: [(String, String)] = []) -> Decision {
            .reject(response: HTTPResponse(status: status, text: message + "\n").encoded(extraFields: fields), status: status)
        }
        guard head.startLine.count == 3 else { return refuse(400, "bad request line") }
        let method = head.startLine[0], target = head.startLine[1], version = head.startLine[2]
        guard version == "HTTP/1.1" else {
            return version.hasPrefix("HTTP/") ? refuse(505, "HTTP/1.1 only") : refuse(400, "bad request line")
        }
        // §4.2.1 (1): the method MUST be GET.
        guard method == "GET" else { return refuse(405, "only GET", [("Allow", "GET")]) }
        guard target.hasPrefix("/") else { return refuse(400, "bad request target") }
        let path = String(target.prefix { $0 != "?" })
        let query = target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) } ?? ""
        // §4.2.1 (2): a Host header is required.
        guard head.values("Host").count == 1 else { return refuse(400, "exactly one Host header is required") }
        let upgrade = head.tokens("Upgrade")
        guard upgrade.contains("websocket") else {
            // Not a WebSocket request: plain HTTP for the application.
            return .http(HTTPRequest(path: path, head: head, query: query))
        }
        // §4.2.1 (4): Connection must include the "Upgrade" token.
        guard head.tokens("Connection").contains("upgrade") else { return refuse(400, "Connection must include Upgrade") }
        // §4.4: unsupported version → 426 with the versions we speak.
        guard head.values("Sec-WebSocket-Version") == ["13"] else {
            return refuse(426, "WebSocket version 13 only", [("Sec-WebSocket-Version", "13")])
        }
        // §4.2.1 (5): the key is base64 of 16 bytes.
        guard head.values("Sec-WebSocket-Key").count == 1, let key = head.value("Sec-WebSocket-Key"),
              let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return refuse(400, "Sec-WebSocket-Key must be base64 of 16 bytes")
        }
        if let paths = configuration.paths, !paths.contains(path) { return refuse(404, "no WebSocket endpoint at \(path)") }
        // The application's own checks (who may open it) come after the protocol's.
        if let refusal = configuration.admit?(HTTPRequest(path: path, head: head, query: query)) {
            return .reject(response: refusal.encoded(), status: refusal.status)
        }
        // Matched without regard to case, answered in the client's own spelling: a client
        // that compares the answer with its offer exactly (RFC 7936) finds it there.
        let offered = head.spelledTokens("Sec-WebSocket-Protocol")
        let chosen = configuration.subprotocols.lazy.compactMap { ours in offered.first { $0.lowercased() == ours.lowercased() } }.first
        if chosen == nil && configuration.requireSubprotocol {
            return refuse(400, "subprotocol required: \(configuration.subprotocols.joined(separator: ", "))")
        }
        var response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        response += "Sec-WebSocket-Accept: \(websocketAccept(forKey: key))\r\n"
        if let chosen { response += "Sec-WebSocket-Protocol: \(chosen)\r\n" }
        response += "\r\n"
        return .accept(response: Array(response.utf8), path: path, subprotocol: chosen)
    }
}

/// The client side of the opening handshake (RFC 6455 §4.1). Pure.
struct ClientHandshake {
    let key: String
    let subprotocols: [String]
    let requireSubprotocol: Bool

    init(subprotocols: [String], requireSubprotocol: Bool, keyBytes: [UInt8]? = nil) {
        var rng = SystemRandomNumberGenerator()
        let bytes = keyBytes ?? (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        key = Data(bytes).base64EncodedString()
        self.subprotocols = subprotocols
        self.requireSubprotocol = requireSubprotocol
    }

    func request(host: String, path: String) -> [UInt8] {
        var r = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        r += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty { r += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n" }
        r += "\r\n"
        return Array(r.utf8)
    }

    /// Checks the server's answer (§4.1, the client's validation steps 1–6);
    /// returns the chosen subprotocol.
    func validate(_ head: HTTPHead) throws(HandshakeError) -> String? {
        guard head.startLine.count >= 2, head.startLine[0] == "HTTP/1.1", let status = Int(head.startLine[1]) else {
            throw .malformed("bad status line")
        }
        guard status == 101 else {
            throw .rejected(status: status, reason: head.startLine.count > 2 ? head.startLine[2] : "")
        }
        guard head.tokens("Upgrade").contains("websocket"), head.tokens("Connection").contains("upgrade") else {
            throw .badUpgrade
        }
        guard head.value("Sec-WebSocket-Accept") == websocketAccept(forKey: key) else { throw .badAccept }
        if let extensions = head.value("Sec-WebSocket-Extensions") { throw .unexpectedExtension(extensions) }
        let chosen = head.value("Sec-WebSocket-Protocol")
        if let chosen, !subprotocols.contains(chosen) { throw .unexpectedSubprotocol(chosen) }
        if chosen == nil && requireSubprotocol && !subprotocols.isEmpty { throw .missingSubprotocol }
        return chosen
    }
}
