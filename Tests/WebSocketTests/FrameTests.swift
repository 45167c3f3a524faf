import Testing
@testable import WebSocket

/// Runs a core over raw bytes, all at once and one byte at a time, and checks both agree.
func feed(_ bytes: [UInt8], role: ConnectionCore.Role = .server, limits: WebSocketLimits = WebSocketLimits()) -> ConnectionCore.Output {
    var whole = ConnectionCore(role: role, limits: limits, timeouts: WebSocketTimeouts(), now: 0)
    var out = ConnectionCore.Output()
    let used = bytes.withUnsafeBytes { whole.receive($0, now: 0, into: &out) }
    _ = used
    // Byte by byte: the same messages and the same close.
    var slow = ConnectionCore(role: role, limits: limits, timeouts: WebSocketTimeouts(), now: 0)
    var slowOut = ConnectionCore.Output()
    var pending: [UInt8] = []
    for b in bytes {
        pending.append(b)
        let n = pending.withUnsafeBytes { slow.receive($0, now: 0, into: &slowOut) }
        pending.removeFirst(n)
    }
    #expect(slowOut.messages == out.messages)
    #expect(slowOut.closed == out.closed)
    return out
}

/// A masked client frame.
func clientFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, key: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    if payload.count <= 125 {
        out.append(0x80 | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
    } else {
        out.append(0x80 | 127)
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: payload.count >> s)) }
    }
    out += key
    out += payload.enumerated().map { $1 ^ key[$0 % 4] }
    return out
}

func closeCode(_ out: ConnectionCore.Output) -> UInt16? {
    out.closed.map { $0.code.rawValue }
}

/// The close frame the server wrote, as (code) — server frames are unmasked.
func sentCloseCode(_ out: ConnectionCore.Output) -> UInt16? {
    guard let i = out.outgoing.firstIndex(of: 0x88), out.outgoing.count >= i + 4 else { return nil }
    return UInt16(out.outgoing[i + 2]) << 8 | UInt16(out.outgoing[i + 3])
}

@Suite("Frames (RFC 6455 §5)")
struct FrameTests {
    @Test("§5.7 examples: masked 'Hello' to a server, unmasked to a client, fragments, 256 B and 64 KiB lengths")
    func examples() {
        #expect(feed([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]).messages == [.text("Hello")])
        #expect(feed([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], role: .client).messages == [.text("Hello")])
        #expect(feed([0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f], role: .client).messages == [.text("Hello")])
        let b256 = [UInt8](repeating: 7, count: 256)
        #expect(feed([0x82, 0x7E, 0x01, 0x00] + b256, role: .client).messages == [.binary(b256)])
        let b64k = [UInt8](repeating: 9, count: 65536)
        #expect(feed([0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + b64k, role: .client).messages == [.binary(b64k)])
    }

    @Test("ping is answered with a pong carrying the same payload, also between fragments")
    func pingPong() {
        let out = feed(clientFrame(0x1, Array("Hel".utf8), fin: false) + clientFrame(0x9, [1, 2, 3]) + clientFrame(0x0, Array("lo".utf8)))
        #expect(out.messages == [.text("Hello")])
        #expect(out.outgoing == [0x8A, 0x03, 1, 2, 3])
    }

    @Test("masking: unmasked client frame and masked server frame → 1002")
    func masking() {
        let unmasked = feed([0x81, 0x02, 0x68, 0x69])
        #expect(closeCode(unmasked) == 1002 && sentCloseCode(unmasked) == 1002)
        #expect(closeCode(feed(clientFrame(0x1, [0x68]), role: .client)) == 1002)
    }

    @Test("RSV bits, unknown opcodes, bad control frames, bad fragmentation → 1002")
    func violations() {
        #expect(closeCode(feed([0xC1, 0x80, 0, 0, 0, 0])) == 1002)  // RSV1
        #expect(closeCode(feed([0x91, 0x80, 0, 0, 0, 0])) == 1002)  // RSV3
        for opcode: UInt8 in [0x3, 0x7, 0xB, 0xF] {
            #expect(closeCode(feed(clientFrame(opcode, []))) == 1002)
        }
        #expect(closeCode(feed(clientFrame(0x9, [], fin: false))) == 1002)  // fragmented ping
        #expect(closeCode(feed(clientFrame(0x9, [UInt8](repeating: 0, count: 126)))) == 1002)
        #expect(closeCode(feed(clientFrame(0x9, [UInt8](repeating: 0, count: 125)))) == nil)
        #expect(closeCode(feed(clientFrame(0x0, [1]))) == 1002)  // continuation of nothing
        #expect(closeCode(feed(clientFrame(0x1, [0x61], fin: false) + clientFrame(0x1, [0x62]))) == 1002)
        // §5.2: a 64-bit length with its top bit set.
        #expect(closeCode(feed([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0])) == 1002)
    }

    @Test("invalid UTF-8 → 1007, also split across fragments, and caught before the message ends")
    func utf8() {
        #expect(closeCode(feed(clientFrame(0x1, [0xC3, 0x28]))) == 1007)
        #expect(closeCode(feed(clientFrame(0x1, [0xED, 0xA0, 0x80]))) == 1007)  // surrogate
        #expect(closeCode(feed(clientFrame(0x1, [0xF4, 0x90, 0x80, 0x80]))) == 1007)  // > U+10FFFF
        // "€" = E2 82 AC split over fragments is fine.
        #expect(feed(clientFrame(0x1, [0xE2], fin: false) + clientFrame(0x0, [0x82], fin: false) + clientFrame(0x0, [0xAC])).messages
            == [.text("€")])
        // Fail fast: the first fragment is already invalid, no final fragment needed.
        #expect(closeCode(feed(clientFrame(0x1, [0x61, 0xFF], fin: false))) == 1007)
        // A message that ends in the middle of a character.
        #expect(closeCode(feed(clientFrame(0x1, [0xE2], fin: false) + clientFrame(0x0, [0x82]))) == 1007)
        #expect(closeCode(feed(clientFrame(0x8, [0x03, 0xE8, 0xFF]))) == 1007)  // close reason
    }

    @Test("message size: at the limit accepted, one past refused from the header alone (1009)")
    func sizeLimit() {
        let limits = WebSocketLimits(maximumMessageSize: 1000)
        #expect(feed(clientFrame(0x2, [UInt8](repeating: 1, count: 1000)), limits: limits).messages.count == 1)
        // Only the header of the 1001-byte frame: refused before any payload arrives.
        let header = Array(clientFrame(0x2, [UInt8](repeating: 1, count: 1001)).prefix(8))
        #expect(closeCode(feed(header, limits: limits)) == 1009)
        // Across fragments.
        let split = clientFrame(0x2, [UInt8](repeating: 1, count: 600), fin: false) + clientFrame(0x0, [UInt8](repeating: 1, count: 401))
        #expect(closeCode(feed(split, limits: limits)) == 1009)
        let exact = clientFrame(0x2, [UInt8](repeating: 1, count: 600), fin: false) + clientFrame(0x0, [UInt8](repeating: 1, count: 400))
        #expect(feed(exact, limits: limits).messages.count == 1)
        #expect(WebSocketLimits().maximumMessageSize == WebSocketLimits.defaultMaximumMessageSize)
    }

    @Test("fragment count: at the limit accepted, one past → 1009")
    func fragmentLimit() {
        let limits = WebSocketLimits(maximumFragments: 4)
        func fragments(_ n: Int) -> [UInt8] {
            (0..<n).flatMap { i in clientFrame(i == 0 ? 0x2 : 0x0, [UInt8(i)], fin: i == n - 1) }
        }
        #expect(feed(fragments(4), limits: limits).messages == [.binary([0, 1, 2, 3])])
        #expect(closeCode(feed(fragments(5), limits: limits)) == 1009)
    }

    @Test("close handshake: status echoed; 1-byte payload and codes not for the wire → 1002; empty close → 1005 reported")
    func close() {
        let normal = feed(clientFrame(0x8, [0x03, 0xE8] + Array("bye".utf8)))
        #expect(normal.closed == CloseInfo(code: .normal, reason: "bye", byPeer: true))
        #expect(sentCloseCode(normal) == 1000)
        let away = feed(clientFrame(0x8, [0x03, 0xE9]))
        #expect(sentCloseCode(away) == 1001)
        #expect(closeCode(feed(clientFrame(0x8, [0x03]))) == 1002)
        for code: UInt16 in [999, 1004, 1005, 1006, 1015, 2999, 5000] {
            #expect(closeCode(feed(clientFrame(0x8, [UInt8(code >> 8), UInt8(code & 0xff)]))) == 1002, "code \(code)")
        }
        for code: UInt16 in [1003, 1007, 1011, 3000, 4999] {
            #expect(closeCode(feed(clientFrame(0x8, [UInt8(code >> 8), UInt8(code & 0xff)]))) == code)
        }
        let empty = feed(clientFrame(0x8, []))
        #expect(empty.closed?.code == .noStatus)
        #expect(empty.outgoing == [0x88, 0x00])
    }

    @Test("we never send 1005 or 1006, and a close reason fits in 125 bytes on a character boundary")
    func ourClose() {
        var core = ConnectionCore(role: .server, limits: WebSocketLimits(), timeouts: WebSocketTimeouts(), now: 0)
        var out = ConnectionCore.Output()
        core.close(.abnormal, reason: String(repeating: "é", count: 100), now: 0, into: &out)
        #expect(out.outgoing[0] == 0x88)
        #expect(Int(out.outgoing[1]) <= 125)
        #expect(UInt16(out.outgoing[2]) << 8 | UInt16(out.outgoing[3]) == 1000)
        #expect(UTF8Validator.isValid(Array(out.outgoing[4...])))
    }

    @Test("liveness: a ping after the idle interval, closed (1006, reported) when no answer comes")
    func liveness() {
        let timeouts = WebSocketTimeouts(pingInterval: 10, pongDeadline: 5)
        var core = ConnectionCore(role: .server, limits: WebSocketLimits(), timeouts: timeouts, now: 0)
        var out = ConnectionCore.Output()
        core.tick(now: 9.9, into: &out)
        #expect(out.outgoing.isEmpty)
        core.tick(now: 10, into: &out)
        #expect(out.outgoing == [0x89, 0x00])
        core.tick(now: 14.9, into: &out)
        #expect(out.closed == nil)
        core.tick(now: 15, into: &out)
        #expect(out.closed?.code == .abnormal)
        // An answer in time keeps the link.
        var alive = ConnectionCore(role: .server, limits: WebSocketLimits(), timeouts: timeouts, now: 0)
        var o2 = ConnectionCore.Output()
        alive.tick(now: 10, into: &o2)
        let pong = clientFrame(0xA, [7, 1])
        _ = pong.withUnsafeBytes { alive.receive($0, now: 12, into: &o2) }
        alive.tick(now: 16, into: &o2)
        // The pong's payload is handed up: that is how a round trip is timed.
        #expect(o2.closed == nil && o2.pongs == [[7, 1]])
    }

    @Test("client frames are masked with fresh keys and parse back")
    func encoding() {
        var client = ConnectionCore(role: .client, limits: WebSocketLimits(), timeouts: WebSocketTimeouts(), now: 0)
        var bytes: [UInt8] = []
        for size in [0, 125, 126, 65535, 65536] {
            client.encode(.binary([UInt8](repeating: 0x5a, count: size)), to: &bytes)
        }
        client.encode(.text("héllo"), to: &bytes)
        let out = feed(bytes)
        #expect(out.messages.count == 6)
        #expect(out.messages.last == .text("héllo"))
        #expect(out.closed == nil)
    }
}

@Suite("Server limits")
struct ServerLimitTests {
    @Test("the per-address limit counts by IP, not by IP and port")
    func hostOfAddress() {
        #expect(WebSocketServer.Listener.host(of: "10.0.0.5:7733") == "10.0.0.5")
        #expect(WebSocketServer.Listener.host(of: "[fe80::1]:7733") == "[fe80::1]")
        #expect(WebSocketServer.Listener.host(of: "?") == "?")
        #expect(WebSocketServer.Configuration().maximumConnectionsPerAddress == WebSocketServer.Configuration.defaultMaximumConnectionsPerAddress)
    }
}
