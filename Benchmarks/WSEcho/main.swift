import Glibc
import Reactor
import WebSocket

// The peernode WebSocket echo server for the benchmarks: one event loop,
// every message sent straight back. Prints "PORT n" once listening.
let loop: EventLoop
do {
    loop = try EventLoop()
} catch {
    print("ws-echo: \(error)")
    exit(1)
}
let server = WebSocketServer(
    loop: loop,
    // Benchmark clients all come from 127.0.0.1: no per-address limit.
    configuration: .init(limits: WebSocketLimits(maximumMessageSize: 16 << 20, maximumSendQueue: 64 << 20), maximumConnectionsPerAddress: 1 << 20),
    callbacks: WebSocketCallbacks(onMessage: { connection, message in connection.send(message) }))
do {
    let port = try server.listen(host: "127.0.0.1", port: UInt16(CommandLine.arguments.dropFirst().first ?? "0") ?? 0)
    print("PORT \(port)")
    fflush(nil)
} catch {
    print("ws-echo: \(error)")
    exit(1)
}
loop.start()
while true { sleep(1000) }
