import ChatText
import Foundation
@testable import PeerNode
import Testing
@testable import WebSocket

/// `WebAccess` and `WebCommand` as pure functions: which `Host` and
/// `Origin` are the page's own, the token's comparison, commands parsed.
@Suite("Web access: Host, Origin and token; commands from the API")
struct WebAccessTests {
    static func request(host: String?, origin: String? = nil, query: String = "") -> HTTPRequest {
        var fields: [(name: String, value: String)] = []
        if let host { fields.append(("Host", host)) }
        if let origin { fields.append(("Origin", origin)) }
        return HTTPRequest(path: WebAccess.apiPath, head: HTTPHead(startLine: ["GET", WebAccess.apiPath, "HTTP/1.1"], fields: fields), query: query)
    }

    @Test("Host: our address, localhost on loopback, any IP literal on every address; never a DNS name, never another port")
    func host() {
        let loopback = WebAccess(host: "127.0.0.1", port: 8080)
        #expect(loopback.hostIsOurs("127.0.0.1:8080"))
        #expect(loopback.hostIsOurs("localhost:8080") && loopback.hostIsOurs("LOCALHOST:8080"))
        #expect(!loopback.hostIsOurs("127.0.0.1:8081") && !loopback.hostIsOurs("127.0.0.1") && !loopback.hostIsOurs(""))
        #expect(!loopback.hostIsOurs("rebind.example:8080") && !loopback.hostIsOurs("127.0.0.2:8080"))
        let v6 = WebAccess(host: "::1", port: 80)
        #expect(v6.hostIsOurs("[::1]:80") && v6.hostIsOurs("[0:0::1]:80") && v6.hostIsOurs("localhost:80"))
        let lan = WebAccess(host: "10.0.0.5", port: 80)
        #expect(lan.hostIsOurs("10.0.0.5:80") && !lan.hostIsOurs("localhost:80"))
        let every = WebAccess(host: "0.0.0.0", port: 80)
        #expect(every.hostIsOurs("10.0.0.5:80") && every.hostIsOurs("localhost:80") && !every.hostIsOurs("peernode.lan:80"))
    }

    @Test("Origin, when sent, must be http:// and the Host; the token is needed whole and exact")
    func originAndToken() {
        let access = WebAccess(host: "127.0.0.1", port: 8080)
        let token: [UInt8] = Array(repeating: 0xAB, count: WebAccess.tokenBytes)
        let good = "token=" + String(repeating: "ab", count: WebAccess.tokenBytes)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", query: good), token: token, needsToken: true) == nil)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", query: good), token: token, needsToken: true) == nil)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", origin: "http://localhost:8080", query: good), token: token, needsToken: true)
            == .badOrigin("http://localhost:8080"))
        #expect(access.refusal(for: Self.request(host: nil, query: good), token: token, needsToken: true) == .badHost(""))
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080"), token: token, needsToken: true) == .noToken)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", query: good + "0"), token: token, needsToken: true) == .badToken)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", query: String(good.dropLast())), token: token, needsToken: true) == .badToken)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080", query: good), token: nil, needsToken: true) == .badToken)
        #expect(access.refusal(for: Self.request(host: "127.0.0.1:8080"), token: nil, needsToken: false) == nil)
        #expect(WebAccess.quoted("a\u{1B}[31m\n") == "\"a?[31m?\"")
    }

    @Test("the token file: made 0600, kept, replaced whole; one that is not private is not used")
    func tokenFile() throws {
        let dir = NSTemporaryDirectory() + "webtoken-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try WebToken.ensure(directory: dir)
        #expect(first.count == WebAccess.tokenBytes)
        #expect(try WebToken.ensure(directory: dir) == first)
        let path = dir + "/" + WebAccess.tokenFileName
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let second = try WebToken.ensure(directory: dir, replace: true)
        #expect(second != first && WebToken.load(directory: dir) == second)
        chmod(path, 0o644)
        #expect(WebToken.load(directory: dir) == nil)
    }

    @Test("commands: each parsed to what its typed line parses to; ref at its limit and one past; wrong types and fields refused with the ref")
    func commands() throws {
        let post = try WebCommand.parse(##"{"cmd":"post","text":"hi","room":"#x","kind":"action","ref":"r"}"##)
        guard case let .post(text, kind, room) = post.action else { Issue.record("not a post"); return }
        #expect(text == "hi" && kind == .action && room?.value == "#x" && post.ref == "r")
        let ref = String(repeating: "r", count: WebService.maximumRefLength)
        #expect(try WebCommand.parse(#"{"cmd":"peers","ref":"\#(ref)"}"#).ref == ref)
        #expect(throws: WebCommand.Failure.self) { try WebCommand.parse(#"{"cmd":"peers","ref":"\#(ref)r"}"#) }
        for bad in [#"[]"#, #"{"cmd":1}"#, #"{"cmd":"post"}"#, #"{"cmd":"post","text":""}"#, #"{"cmd":"post","text":5}"#,
                    #"{"cmd":"post","text":"x","kind":"shout"}"#, #"{"cmd":"post","text":"x","room":"no spaces allowed?"}"#,
                    #"{"cmd":"msg","to":"x"}"#, #"{"cmd":"quit"}"#] {
            #expect(throws: WebCommand.Failure.self, "\(bad)") { try WebCommand.parse(bad) }
        }
        do {
            _ = try WebCommand.parse(#"{"cmd":"peers","extra":"x","ref":"k"}"#)
            Issue.record("an unknown field was taken")
        } catch {
            #expect(error.ref == "k" && error.message.contains("extra"))
        }
    }

    @Test("history's limit: a JSON number or a string of digits, 1 and the maximum taken, 0 and one past refused; true, 50.5, null and huge numbers refused")
    func historyLimit() throws {
        func limit(_ value: String) throws -> Int {
            guard case let .history(_, limit, _) = try WebCommand.parse(#"{"cmd":"history","limit":\#(value)}"#).action else { return -1 }
            return limit
        }
        let most = WebCommand.maximumHistoryPage
        #expect(try limit("1") == 1)
        #expect(try limit(#""1""#) == 1)
        #expect(try limit("\(most)") == most)
        #expect(try limit(#""\#(most)""#) == most)
        #expect(try limit("20.0") == 20)
        guard case let .history(_, n, _) = try WebCommand.parse(#"{"cmd":"history"}"#).action else { Issue.record("not history"); return }
        #expect(n == WebCommand.defaultHistoryPage)
        for bad in ["0", #""0""#, "\(most + 1)", #""\#(most + 1)""#, "true", "false", "50.5", "null", "1e300", "99999999999999999999", #""x""#, "[]"] {
            #expect(throws: WebCommand.Failure.self, "\(bad)") { try limit(bad) }
        }
    }

    @Test("search: ChatInput.maximumSearchWords words taken, one more refused with the ref, as /search is")
    func searchWords() throws {
        let most = ChatInput.maximumSearchWords
        let words = (0...most).map { "w\($0)" }
        let atLimit = words.prefix(most).joined(separator: " ")
        guard case let .search(text) = try WebCommand.parse(#"{"cmd":"search","text":"\#(atLimit)","ref":"s"}"#).action else {
            Issue.record("not a search")
            return
        }
        #expect(text == atLimit)
        #expect(ChatInput.parse("/search " + atLimit) == .search(atLimit))
        let onePast = words.joined(separator: "\t")
        #expect(throws: WebCommand.Failure.self) { try WebCommand.parse(#"{"cmd":"search","text":"\#(onePast.replacingOccurrences(of: "\t", with: "\\t"))","ref":"s"}"#) }
        #expect(ChatInput.parse("/search " + words.joined(separator: " ")) == .error("/search takes at most \(most) words, got \(most + 1)"))
    }
}
