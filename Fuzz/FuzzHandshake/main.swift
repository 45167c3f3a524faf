@testable import WebSocket

// libFuzzer entry: HTTP head parsing, the server's handshake decision and the
// client's response check. Must never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let parsed = try? HTTPHead.parse(bytes, limit: 8192), let (head, used) = Optional(parsed) else { return 0 }
    if used > size { return 1 }
    let configuration = WebSocketServer.Configuration(paths: ["/peernode/1"], subprotocols: ["peernode.1"])
    _ = ServerHandshake.decide(head, configuration: configuration)
    let client = ClientHandshake(subprotocols: ["peernode.1"], requireSubprotocol: true, keyBytes: Array(repeating: 1, count: 16))
    _ = try? client.validate(head)
    return 0
}
