import FuzzSupport
@testable import WebSocket

// libFuzzer entry: the HTTP side of the link port. HTTP head parsing, the
// server's decision (upgrade, plain GET for the relay's /healthz and
// /metrics, or refusal) and the client's check of a response. Whatever the
// request, the server's answer is one well-formed HTTP/1.1 response whose
// header fields are only ours (nothing from the request can split it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let parsed = try? HTTPHead.parse(bytes, limit: 8192), let (head, used) = Optional(parsed) else { return 0 }
    invariant(used <= size, "the head parser used more bytes than it was given")
    let configuration = WebSocketServer.Configuration(paths: ["/peernode/1"], subprotocols: ["peernode.1"])
    switch ServerHandshake.decide(head, configuration: configuration) {
    case let .accept(response, path, _):
        invariant(path == "/peernode/1", "upgraded on a path that is not served")
        checkResponse(response, status: 101)
    case let .http(request):
        invariant(request.path.hasPrefix("/") && !request.path.contains("?"), "a plain request's path is not a path")
        // The relay's routing: two paths, 404 for the rest.
        let response = ["/healthz", "/metrics"].contains(request.path)
            ? HTTPResponse(status: 200, contentType: "application/json", body: Array("{\"status\":\"ok\"}\n".utf8))
            : HTTPResponse(status: 404, text: "not found\n")
        checkResponse(response.encoded(), status: response.status)
    case let .reject(response, status):
        invariant(status >= 400 && status <= 599, "a refusal that is not an error status")
        checkResponse(response, status: status)
    }
    let client = ClientHandshake(subprotocols: ["peernode.1"], requireSubprotocol: true, keyBytes: Array(repeating: 1, count: 16))
    _ = try? client.validate(head)
    return 0
}

/// One complete response: status line, our own header fields, and exactly
/// Content-Length bytes of body when it has one.
func checkResponse(_ response: [UInt8], status: Int) {
    let parsed = response.withUnsafeBytes { try? HTTPHead.parse($0, limit: 1 << 20) }
    guard let (head, used) = parsed ?? nil else {
        invariant(false, "the server's response does not parse")
        return
    }
    invariant(head.startLine.count == 3 && head.startLine[0] == "HTTP/1.1" && head.startLine[1] == String(status),
              "the response's status line is wrong")
    let ours: Set<String> = ["content-type", "content-length", "connection", "allow", "sec-websocket-version",
                             "upgrade", "sec-websocket-accept", "sec-websocket-protocol"]
    invariant(head.fields.allSatisfy { ours.contains($0.name.lowercased()) }, "the response carries a header field that is not ours")
    if status == 101 {
        invariant(used == response.count, "bytes after a 101 response's head")
    } else {
        invariant(head.value("Content-Length").flatMap { Int($0) } == response.count - used, "Content-Length does not match the body")
    }
}
