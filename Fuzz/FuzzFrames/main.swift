import FuzzSupport
@testable import WebSocket

// libFuzzer entry: the frame parser and connection core, both roles, with the
// input split in two reads at a point the input picks. Must never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let limits = WebSocketLimits(maximumMessageSize: 1 << 16, maximumFragments: 64)
    for role in [ConnectionCore.Role.server, .client] {
        var core = ConnectionCore(role: role, limits: limits, timeouts: WebSocketTimeouts(), now: 0)
        var out = ConnectionCore.Output()
        let split = size > 0 ? Int(bytes[0]) % (size + 1) : 0
        var pending = Array(bytes[0..<split])
        var used = pending.withUnsafeBytes { core.receive($0, now: 0, into: &out) }
        pending.removeFirst(min(used, pending.count))
        pending += bytes[split...]
        used = pending.withUnsafeBytes { core.receive($0, now: 1, into: &out) }
        core.tick(now: 100, into: &out)
        invariant(used <= pending.count, "the core used more bytes than it was given")
    }
    return 0
}
