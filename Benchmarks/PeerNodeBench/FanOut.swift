import Crypto
import Foundation
import Glibc
import Gossip
import Reactor
import WebSocket

// The relay fan-out benchmark's own lean peers (run by scripts/bench-relay.py):
//
//   peernode-bench fanout-receive HOST:PORT LINKS EXPECTED SECONDS
//       opens LINKS links to a relay (each its own identity; Noise handshake,
//       an empty clock), then counts the envelopes that arrive on all of them
//       without checking signatures, until EXPECTED arrived or SECONDS passed;
//       prints one JSON line: deliveries, seconds (first to last), p50/p99
//       latency in ms (from each envelope's timestamp). EXPECTED 0: idle
//       links (no clock sent, so nothing comes) held open for SECONDS.
//   peernode-bench fanout-send HOST:PORT COUNT [RATE]
//       one link; signs COUNT envelopes with 256-byte bodies (timestamped as
//       they are signed) and sends them in batches of 64, as fast as it can,
//       or one by one at RATE per second.
//
// Each prints "linked" on stderr once its links are up, so the script can
// start the sender after the receivers.

/// One link endpoint: WebSocket + Noise, no replication logic.
final class LeanLink: @unchecked Sendable {
    var session: LinkSession
    var chunker = GossipChunker()
    var connection: WebSocketConnection?
    var onEstablished: (@Sendable () -> Void)?
    var onMessage: (@Sendable (GossipMessage) -> Void)?

    init(identity: SigningKey) throws {
        session = try LinkSession(initiator: true, identity: identity, networkKey: NetworkKey.derived(fromName: NetworkKey.defaultName),
                                  now: ProcessInfo.processInfo.systemUptime, version: .newest)
    }

    func connect(host: String, port: UInt16, loop: EventLoop) throws {
        connection = try WebSocketClient.connect(
            host: host, port: port, path: "/peernode/1",
            configuration: .init(subprotocols: [LinkProtocol.newest.subprotocol], requireSubprotocol: true,
                                 limits: WebSocketLimits(maximumMessageSize: 65_535, acceptsText: false)),
            callbacks: WebSocketCallbacks(
                onOpen: { [self] _ in apply(session.start()) },
                onMessage: { [self] _, message in
                    guard case let .binary(bytes) = message else { return }
                    apply(session.receive(bytes))
                },
                onClose: { _, info in FileHandle.standardError.write(Data("link closed: \(info.reason)\n".utf8)) },
                onHandshakeFailure: { _, error in FileHandle.standardError.write(Data("link failed: \(error)\n".utf8)) }),
            loop: loop)
    }

    private func apply(_ actions: [LinkSession.Action]) {
        for action in actions {
            switch action {
            case let .send(bytes): connection?.send(.binary(bytes))
            case .established:
                // Like a --peer link: kept by the relay outside its overlay bound.
                for chunk in GossipChunker.chunks(GossipMessage.overlay(.keep(port: 0)).encoded) { apply(session.send(chunk)) }
                onEstablished?()
            case let .deliver(chunk):
                if let whole = try? chunker.add(chunk), let message = try? GossipMessage.decode(whole) { onMessage?(message) }
            case let .close(failure): FileHandle.standardError.write(Data("link refused: \(failure)\n".utf8))
            }
        }
    }

    /// Sends a gossip message (on the loop thread).
    func send(_ message: GossipMessage) {
        for chunk in GossipChunker.chunks(message.encoded) { apply(session.send(chunk)) }
    }
}

func wallMilliseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_REALTIME, &t)
    return UInt64(t.tv_sec) * 1000 + UInt64(t.tv_nsec) / 1_000_000
}

func splitHostPort(_ text: String) -> (String, UInt16)? {
    guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
    return (String(text[..<colon]), port)
}

/// Counts per thread, merged at the end (each loop thread owns one).
final class FanOutTally: @unchecked Sendable {
    let lock = NSLock()
    var deliveries = 0
    var first = 0.0
    var last = 0.0
    var latencies: [UInt32] = []
}

func runFanOutReceiver(target: String, links count: Int, expected: Int, seconds: Double) throws {
    guard let (host, port) = splitHostPort(target) else { throw NodeBenchError("HOST:PORT expected") }
    let loops = try (0..<2).map { _ in try EventLoop() }
    for loop in loops { loop.start() }
    let tally = FanOutTally()
    let linked = Atomicish()
    var links: [LeanLink] = []
    for i in 0..<count {
        let link = try LeanLink(identity: try SigningKey.generate())
        let loop = loops[i % loops.count]
        link.onEstablished = { [link] in
            // Nothing held: the relay sends everything it has, then what is new. With
            // EXPECTED 0 the link stays idle: no clock, so the relay sends nothing.
            if expected > 0 { link.send(.clock(entries: [], full: true)) }
            if linked.increment() == count { FileHandle.standardError.write(Data("linked\n".utf8)) }
        }
        link.onMessage = { message in
            guard case let .envelopes(batch) = message, !batch.isEmpty else { return }
            let now = ProcessInfo.processInfo.systemUptime
            let wall = wallMilliseconds()
            tally.lock.withLock {
                if tally.deliveries == 0 { tally.first = now }
                tally.deliveries += batch.count
                tally.last = now
                for c in batch { tally.latencies.append(UInt32(clamping: wall &- c.envelope.timestamp)) }
            }
        }
        loop.execute { try? link.connect(host: host, port: port, loop: loop) }
        links.append(link)
    }
    let deadline = ProcessInfo.processInfo.systemUptime + seconds
    if expected == 0 {
        Thread.sleep(forTimeInterval: seconds)
    } else {
        while !fanOutDone(tally, expected: expected, deadline: deadline) { Thread.sleep(forTimeInterval: 0.01) }
    }
    tally.lock.withLock {
        let sorted = tally.latencies.sorted()
        func pct(_ p: Double) -> UInt32 { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print("{\"deliveries\":\(tally.deliveries),\"seconds\":\(max(0.000001, tally.last - tally.first)),\"links\":\(linked.value),\"p50_ms\":\(pct(0.5)),\"p99_ms\":\(pct(0.99))}")
    }
    withExtendedLifetime(links) {}
}

/// Sleeps until `start + index / rate` (pacing a run at `rate` messages/s).
func pace(_ index: Int, rate: Double, from start: Double) {
    let due = start + Double(index) / rate
    let wait = due - ProcessInfo.processInfo.systemUptime
    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
}

func runFanOutSender(target: String, count: Int, rate: Double? = nil) throws {
    guard let (host, port) = splitHostPort(target) else { throw NodeBenchError("HOST:PORT expected") }
    let loop = try EventLoop()
    loop.start()
    let identity = try SigningKey.generate()
    let lan = NetworkKey.derived(fromName: NetworkKey.defaultName)
    let general = RoomID.publicRoom(.general, network: lan)
    let key = lan.publicRoomKey(roomName: RoomName.general.value)
    let link = try LeanLink(identity: identity)
    let up = DispatchSemaphore(value: 0)
    link.onEstablished = { up.signal() }
    loop.execute { try? link.connect(host: host, port: port, loop: loop) }
    guard up.wait(timeout: .now() + 10) == .success else { throw NodeBenchError("no link to the relay") }
    FileHandle.standardError.write(Data("linked\n".utf8))
    loop.execute { link.send(.clock(entries: [], full: true)) }
    var previous = MessageID.zero
    var sequence: UInt64 = 0
    let body = [UInt8](repeating: 0x61, count: 256)
    var sent = 0
    let started = ProcessInfo.processInfo.systemUptime
    // Paced: one envelope per link message, as live chat sends them; else batches of 64.
    let perMessage = rate == nil ? 64 : 1
    while sent < count {
        if let rate { pace(sent, rate: rate, from: started) }
        var batch: [CarriedEnvelope] = []
        for _ in 0..<min(perMessage, count - sent) {
            sequence += 1
            let sealed = try SealedBody.seal(kind: .text, content: body, key: key, author: identity.publicKey, room: general)
            let e = try Envelope.sign(by: identity, sequence: sequence, previous: previous, dependencies: [], timestamp: wallMilliseconds(),
                                      room: general, body: sealed)
            previous = e.id
            batch.append(CarriedEnvelope(hops: 0, envelope: e))
        }
        sent += batch.count
        let message = GossipMessage.envelopes(batch)
        loop.execute { link.send(message) }
    }
    // Let the last batches leave before the process ends.
    Thread.sleep(forTimeInterval: 2)
}

/// Seconds without a delivery after which the receivers stop waiting for more.
let fanOutIdle = 2.0

/// All expected deliveries arrived, or none for `fanOutIdle` seconds, or the deadline passed.
func fanOutDone(_ tally: FanOutTally, expected: Int, deadline: Double) -> Bool {
    let now = ProcessInfo.processInfo.systemUptime
    return tally.lock.withLock {
        tally.deliveries >= expected || (tally.deliveries > 0 && now - tally.last > fanOutIdle) || now >= deadline
    }
}

struct NodeBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A counter shared by loop threads.
final class Atomicish: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func increment() -> Int { lock.withLock { n += 1; return n } }
    var value: Int { lock.withLock { n } }
}
