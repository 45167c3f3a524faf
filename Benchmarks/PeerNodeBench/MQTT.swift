import Foundation
import Glibc

// The MQTT side of the relay fan-out benchmark: the same kind of lean peers,
// speaking MQTT 3.1.1 at QoS 0 to mosquitto (only the packets needed:
// CONNECT, CONNACK, SUBSCRIBE, SUBACK, PUBLISH).
//
//   peernode-bench mqtt-receive HOST:PORT SUBSCRIBERS EXPECTED SECONDS
//   peernode-bench mqtt-send HOST:PORT COUNT [RATE]
//
// Payloads are 256 bytes; the first 8 are the send time (ms since 1970).

enum MQTT {
    static let topic = Array("peernode/bench".utf8)

    static func remainingLength(_ n: Int) -> [UInt8] {
        var out: [UInt8] = []
        var v = n
        repeat {
            var byte = UInt8(v % 128)
            v /= 128
            if v > 0 { byte |= 0x80 }
            out.append(byte)
        } while v > 0
        return out
    }

    static func string(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }

    static func connectPacket(id: String) -> [UInt8] {
        let variable = string(Array("MQTT".utf8)) + [4, 0x02, 0, 60]
        let body = variable + string(Array(id.utf8))
        return [0x10] + remainingLength(body.count) + body
    }

    static func subscribePacket() -> [UInt8] {
        let body: [UInt8] = [0, 1] + string(topic) + [0]
        return [0x82] + remainingLength(body.count) + body
    }

    static func publishPacket(_ payload: [UInt8]) -> [UInt8] {
        let body = string(topic) + payload
        return [0x30] + remainingLength(body.count) + body
    }

    static func connect(_ target: String) throws -> Int32 {
        guard let (host, port) = splitHostPort(target) else { throw NodeBenchError("HOST:PORT expected") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, rc == 0 else { throw NodeBenchError("cannot connect to mosquitto at \(target)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// Reads MQTT packets from a blocking socket, calling `publish` with each PUBLISH payload.
final class MQTTReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0

    init(fd: Int32) { self.fd = fd }

    /// Whether a whole packet may already be waiting in the buffer.
    var hasBuffered: Bool { buffer.count - start >= 2 }

    /// Next packet (type nibble, body), or nil at end of stream.
    func next() -> (UInt8, ArraySlice<UInt8>)? {
        while true {
            if let packet = parse() { return packet }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return nil }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer += chunk[0..<n]
        }
    }

    /// Adds bytes read elsewhere (the poll loop).
    func feed(_ bytes: ArraySlice<UInt8>) {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += bytes
    }

    func parse() -> (UInt8, ArraySlice<UInt8>)? {
        guard buffer.count - start >= 2 else { return nil }
        var length = 0
        var multiplier = 1
        var i = start + 1
        while true {
            guard i < buffer.count else { return nil }
            let byte = buffer[i]
            length += Int(byte & 0x7F) * multiplier
            multiplier *= 128
            i += 1
            if byte & 0x80 == 0 { break }
        }
        guard buffer.count - i >= length else { return nil }
        let type = buffer[start] >> 4
        let body = buffer[i..<i + length]
        start = i + length
        return (type, body)
    }
}

func runMQTTReceiver(target: String, subscribers: Int, expected: Int, seconds: Double) throws {
    let tally = FanOutTally()
    // Connect and subscribe each, one after another (blocking), then read them all from one thread with poll(2).
    var readers: [MQTTReader] = []
    var fds: [pollfd] = []
    for i in 0..<subscribers {
        let fd = try MQTT.connect(target)
        MQTT.writeAll(fd, MQTT.connectPacket(id: "peernode-bench-\(getpid())-\(i)"))
        let reader = MQTTReader(fd: fd)
        guard let (type, _) = reader.next(), type == 2 else { throw NodeBenchError("mosquitto refused subscriber \(i)") }
        MQTT.writeAll(fd, MQTT.subscribePacket())
        guard let (ack, _) = reader.next(), ack == 9 else { throw NodeBenchError("no SUBACK for subscriber \(i)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        readers.append(reader)
        fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
    }
    FileHandle.standardError.write(Data("linked\n".utf8))
    let deadline = ProcessInfo.processInfo.systemUptime + seconds
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while !fanOutDone(tally, expected: expected, deadline: deadline) {
        guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
        var batch: [UInt32] = []
        let wall = wallMilliseconds()
        for k in fds.indices where fds[k].revents & Int16(POLLIN) != 0 {
            let n = read(fds[k].fd, &chunk, chunk.count)
            guard n > 0 else { continue }
            readers[k].feed(chunk[0..<n])
            while let (type, body) = readers[k].parse() {
                guard type == 3, body.count >= 2 else { continue }
                let topicLength = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
                let payload = body.dropFirst(2 + topicLength)
                guard payload.count >= 8 else { continue }
                let sent = payload.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                batch.append(UInt32(clamping: wall &- sent))
            }
        }
        guard !batch.isEmpty else { continue }
        let now = ProcessInfo.processInfo.systemUptime
        tally.lock.withLock {
            if tally.deliveries == 0 { tally.first = now }
            tally.deliveries += batch.count
            tally.last = now
            tally.latencies += batch
        }
    }
    tally.lock.withLock {
        let sorted = tally.latencies.sorted()
        func pct(_ p: Double) -> UInt32 { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print("{\"deliveries\":\(tally.deliveries),\"seconds\":\(max(0.000001, tally.last - tally.first)),\"links\":\(subscribers),\"p50_ms\":\(pct(0.5)),\"p99_ms\":\(pct(0.99))}")
    }
}

func runMQTTSender(target: String, count: Int, rate: Double? = nil) throws {
    let fd = try MQTT.connect(target)
    MQTT.writeAll(fd, MQTT.connectPacket(id: "peernode-bench-sender-\(getpid())"))
    let reader = MQTTReader(fd: fd)
    guard let (type, _) = reader.next(), type == 2 else { throw NodeBenchError("mosquitto did not accept the connection") }
    FileHandle.standardError.write(Data("linked\n".utf8))
    var payload = [UInt8](repeating: 0x61, count: 256)
    var pending: [UInt8] = []
    let started = ProcessInfo.processInfo.systemUptime
    for i in 0..<count {
        if let rate { pace(i, rate: rate, from: started) }
        let now = wallMilliseconds()
        for b in 0..<8 { payload[b] = UInt8(truncatingIfNeeded: now >> UInt64(56 - 8 * b)) }
        pending += MQTT.publishPacket(payload)
        if rate != nil || i % 64 == 63 || i == count - 1 {
            MQTT.writeAll(fd, pending)
            pending.removeAll(keepingCapacity: true)
        }
    }
    Thread.sleep(forTimeInterval: 2)
}
