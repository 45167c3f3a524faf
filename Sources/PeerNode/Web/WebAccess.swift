import Crypto
import Foundation
import WebSocket

/// Who may use the web page's API (`--web`, docs/API.md, "Who gets in"):
/// the person at this machine, who holds the token. A browser also sends
/// `Host` and `Origin`; both are checked, so a page on another site cannot
/// open the API from the person's browser, and a name that another site
/// points at 127.0.0.1 (DNS rebinding) gets nothing. Pure, but for the
/// token file.
struct WebAccess: Sendable {
    /// Where the node listens for the page ("127.0.0.1:8080").
    let host: String
    let port: UInt16
    /// The path of the API's WebSocket.
    static let apiPath = "/api/v1"
    /// `GET` with `?token=`: 204 when it is the node's token, else the refusal (401, "wrong token"). A browser
    /// learns nothing of why a WebSocket upgrade failed, so the page asks here before saying "wrong token".
    static let tokenCheckPath = "/api/v1/token"
    /// The token's file in the data directory (mode 0600), and its size: 32
    /// random bytes, written as 64 hex characters.
    static let tokenFileName = "web-token"
    static let tokenBytes = 32
    /// The file where a node serving the page writes its address, for `peernode web-url`.
    static let addressFileName = "web-address"

    /// Why a request was refused (the status, and the text of the answer).
    enum Refusal: Equatable, CustomStringConvertible {
        case badHost(String)
        case badOrigin(String)
        case noToken
        case badToken

        var status: Int {
            switch self {
            case .badHost, .badOrigin: 403
            case .noToken, .badToken: 401
            }
        }

        var description: String {
            switch self {
            case let .badHost(h): "Host \(WebAccess.quoted(h)) is not this page's address"
            case let .badOrigin(o): "Origin \(WebAccess.quoted(o)) is not this page's origin"
            case .noToken: "the API needs the token (?token=, from `peernode web-url`)"
            case .badToken: "wrong token (`peernode web-url` prints the right one)"
            }
        }

        var response: HTTPResponse { HTTPResponse(status: status, text: description + "\n") }
    }

    /// A header value inside a refusal: printable ASCII, at most 100 characters.
    static func quoted(_ text: String) -> String {
        "\"" + String(text.unicodeScalars.prefix(100).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }) + "\""
    }

    /// Whether `Host` names this node's page: an IP address literal or
    /// `localhost`, with our port. A listener on one address takes that
    /// address (and `localhost` when it is a loopback one); one on every
    /// address (`--web-allow-remote` on 0.0.0.0) takes any IP literal. A
    /// DNS name is never taken: that is what a rebinding attack sends.
    func hostIsOurs(_ value: String) -> Bool {
        guard let (name, port) = Self.split(value), port == self.port else { return false }
        let literal = Self.isIPLiteral(name)
        if host == "0.0.0.0" || host == "::" { return literal || name == "localhost" }
        if name == "localhost" { return Self.isLoopback(host) }
        return literal && Self.normalised(name) == Self.normalised(host)
    }

    /// Checks a request for the page or the API. `Origin` is sent by every
    /// browser on a WebSocket and on scripts' requests: when present it must
    /// be this page's own (`http://` and the `Host` it was loaded from);
    /// clients that are not browsers (a bot) send none and need only the token.
    func refusal(for request: HTTPRequest, token: [UInt8]?, needsToken: Bool) -> Refusal? {
        let hostValue = request.head.value("Host") ?? ""
        guard hostIsOurs(hostValue) else { return .badHost(hostValue) }
        if let origin = request.head.value("Origin"), origin != "http://" + hostValue {
            return .badOrigin(origin)
        }
        guard needsToken else { return nil }
        guard let given = request.queryValue("token"), !given.isEmpty else { return .noToken }
        guard let token, constantTimeEqual(Array(given.utf8), Array(Hex.encode(token).utf8)) else { return .badToken }
        return nil
    }

    /// "127.0.0.1:80" → ("127.0.0.1", 80); "[::1]:80" → ("::1", 80).
    static func split(_ value: String) -> (String, UInt16)? {
        guard let colon = value.lastIndex(of: ":"), let port = UInt16(value[value.index(after: colon)...]) else { return nil }
        var name = String(value[..<colon])
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        return name.isEmpty ? nil : (name.lowercased(), port)
    }

    static func isIPLiteral(_ name: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }

    static func isLoopback(_ address: String) -> Bool {
        address == "localhost" || address == "::1" || address.hasPrefix("127.")
    }

    /// One spelling per IPv6 address ("0:0::1" and "::1" are one).
    static func normalised(_ name: String) -> String {
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return name }
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &out, socklen_t(out.count)) != nil else { return name }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The URL a person opens: the token rides in the fragment, which a
    /// browser never sends to a server or in a `Referer`.
    static func url(address: String, token: [UInt8]) -> String {
        "http://\(address)/#token=\(Hex.encode(token))"
    }
}

/// The token file: made on first use, replaced by `peernode web-url --new`.
enum WebToken {
    enum Problem: Error, CustomStringConvertible {
        case unwritable(path: String, reason: String)
        case unreadable(path: String, reason: String)
        case notServed(directory: String)

        var description: String {
            switch self {
            case let .unwritable(path, reason): "cannot write \(path): \(reason)"
            case let .unreadable(path, reason): "cannot read \(path): \(reason)"
            case let .notServed(directory): "no node has served the page from \(directory) yet (start one with --web PORT)"
            }
        }
    }

    /// The token in `directory`, or nil when there is none or it is not a
    /// private file of 64 hex characters (then the API lets nobody in).
    static func load(directory: String) -> [UInt8]? {
        let path = directory + "/" + WebAccess.tokenFileName
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 == 0,
              // Unreadable (an I/O error on a private file of ours): the safe side is the same as none, nobody let in.
              let text = try? String(contentsOfFile: path, encoding: .utf8),
              let bytes = Hex.bytes(text.trimmingCharacters(in: .whitespacesAndNewlines)),
              bytes.count == WebAccess.tokenBytes else { return nil }
        return bytes
    }

    /// The token, made now when there is none (or `replace`), written as
    /// `KeyFile` writes keys: private, fsynced, renamed over the old one.
    static func ensure(directory: String, replace: Bool = false) throws(Problem) -> [UInt8] {
        if !replace, let token = load(directory: directory) { return token }
        let token = secureRandomBytes(WebAccess.tokenBytes)
        try write(Hex.encode(token), to: directory + "/" + WebAccess.tokenFileName)
        return token
    }

    /// A line in a private file of the data directory, replacing what was there.
    static func write(_ line: String, to path: String) throws(Problem) {
        do { try KeyFile.writePrivate(Array((line + "\n").utf8), to: path, replacing: true) } catch {
            throw .unwritable(path: path, reason: "\(error)")
        }
    }

    /// `peernode web-url [--new]`: the URL of the page the node of
    /// `directory` serves (it need not be running; the address is the one
    /// it last served on).
    static func url(directory: String, replace: Bool) throws(Problem) -> String {
        let addressPath = directory + "/" + WebAccess.addressFileName
        guard FileManager.default.fileExists(atPath: addressPath) else { throw .notServed(directory: directory) }
        let address: String
        do { address = try String(contentsOfFile: addressPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) } catch {
            throw .unreadable(path: addressPath, reason: "\(error.localizedDescription)")
        }
        guard !address.isEmpty else { throw .notServed(directory: directory) }
        return WebAccess.url(address: address, token: try ensure(directory: directory, replace: replace))
    }
}
