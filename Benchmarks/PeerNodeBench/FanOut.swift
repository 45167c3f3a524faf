import CEpoll
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
//       and reads each one's timestamp, without decoding, hashing or checking
//       it (`LeanBatch`: the receiver must not be what is measured),
//       until EXPECTED arrived or SECONDS passed;
//       prints one JSON line: deliveries, seconds (first to last), p50/p99
//       latency in ms (from each envelope's timestamp), and the largest
//       latency of each tenth of a second from the first delivery
//       (`worst_ms_by_tenth`: where a tail came from; `first_uptime`, the
//       first delivery's monotonic time, lines them up with a relay's
//       log). EXPECTED 0: idle
//       links (no clock sent, so nothing comes) held open for SECONDS.
//   peernode-bench fanout-send HOST:PORT COUNT [RATE]
//       one link; signs COUNT envelopes with 256-byte bodies (timestamped as
//       they are signed) and sends them in batches of 64, as fast as it can,
//       or one by one at RATE per second: then all are signed before the
//       first is sent, each timestamped with the moment it is due, so that
//       signing takes no core from the run (a late send counts as latency).
//
// Each prints "linked" on stderr once its links are up, so the script can
// start the sender after the receivers.


/// The content of each message `fanout-send` signs (`bench-relay.py`'s messages of 256 bytes);
/// the relay's ceiling model (`hop-ceiling`) sizes its messages by it.
let fanOutBodyBytes = 256
/// One link endpoint: WebSocket + Noise (the cipher a node here would
/// agree on), no replication logic.
final class LeanLink: @unchecked Sendable {
    var session: LinkSession
    var chunker = GossipChunker()
    var connection: WebSocketConnection?
    var onEstablished: (@Sendable () -> Void)?
    var onMessage: (@Sendable (GossipMessage) -> Void)?
    /// Instead of `onMessage`: each whole message's bytes, not decoded.
    var onBytes: (@Sendable ([UInt8]) -> Void)?

    /// What it offers, alone: the newest version with the cipher two nodes on this machine agree on.
    static let terms = LinkTerms(version: .newest, cipher: linkCipher)

    init(identity: SigningKey) throws {
        session = try LinkSession(initiator: true, identity: identity, networkKey: NetworkKey.derived(fromName: NetworkKey.defaultName),
                                  now: ProcessInfo.processInfo.systemUptime, version: Self.terms.version, cipher: Self.terms.cipher)
    }

    func connect(host: String, port: UInt16, loop: EventLoop) throws {
        connection = try WebSocketClient.connect(
            host: host, port: port, path: "/peernode/1",
            configuration: .init(subprotocols: [Self.terms.subprotocol], requireSubprotocol: true,
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
                guard let whole = try? chunker.add(chunk) else { continue }
                if let onBytes { onBytes(whole) } else if let message = try? GossipMessage.decode(whole) { onMessage?(message) }
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
    /// The largest latency of each 100 ms since the first delivery (where a run's tail comes from).
    var worstByTenth: [UInt32] = []
}

func runFanOutReceiver(target: String, links count: Int, expected: Int, seconds: Double) throws {
    guard let (host, port) = splitHostPort(target) else { throw NodeBenchError("HOST:PORT expected") }
    try LeanBatch.check()
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
        link.onBytes = { bytes in
            guard let stamps = LeanBatch.timestamps(bytes), !stamps.isEmpty else { return }
            let now = ProcessInfo.processInfo.systemUptime
            let wall = wallMilliseconds()
            tally.lock.withLock {
                if tally.deliveries == 0 { tally.first = now }
                tally.deliveries += stamps.count
                tally.last = now
                let tenth = Int((now - tally.first) * 10)
                if tally.worstByTenth.count <= tenth { tally.worstByTenth += [UInt32](repeating: 0, count: tenth + 1 - tally.worstByTenth.count) }
                for t in stamps {
                    let latency = UInt32(clamping: wall &- t)
                    tally.latencies.append(latency)
                    tally.worstByTenth[tenth] = max(tally.worstByTenth[tenth], latency)
                }
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
        print("{\"deliveries\":\(tally.deliveries),\"seconds\":\(max(0.000001, tally.last - tally.first)),\"links\":\(linked.value),\"p50_ms\":\(pct(0.5)),\"p99_ms\":\(pct(0.99)),\"worst_ms_by_tenth\":\(tally.worstByTenth),\"first_uptime\":\(tally.first)}")
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
    let body = [UInt8](repeating: 0x61, count: fanOutBodyBytes)
    func signed(at timestamp: UInt64) throws -> CarriedEnvelope {
        sequence += 1
        let sealed = try SealedBody.seal(kind: .text, content: body, key: key, author: identity.publicKey, room: general)
        let e = try Envelope.sign(by: identity, sequence: sequence, previous: previous, dependencies: [], timestamp: timestamp,
                                  room: general, body: sealed)
        previous = e.id
        return CarriedEnvelope(hops: 0, envelope: e)
    }
    guard let rate else {
        // As fast as it can, in batches of 64, each signed as it goes.
        var sent = 0
        while sent < count {
            let batch = try (0..<min(64, count - sent)).map { _ in try signed(at: wallMilliseconds()) }
            sent += batch.count
            let message = GossipMessage.envelopes(batch)
            loop.execute { link.send(message) }
        }
        Thread.sleep(forTimeInterval: 2)
        return
    }
    // Paced: one envelope per link message, as live chat sends them. All are
    // signed first, each stamped with the moment it is due, so the sender's
    // signing takes no core from the run; one sent late counts its lateness
    // as latency. A first 64 signed (and thrown away) time the signing.
    let calibration = ProcessInfo.processInfo.systemUptime
    for _ in 0..<64 { _ = try signed(at: 0) }
    let signingTime = (ProcessInfo.processInfo.systemUptime - calibration) / 64 * Double(count)
    (sequence, previous) = (0, .zero)
    let lead = signingTime * 1.5 + 0.5
    let startWall = Double(wallMilliseconds()) + lead * 1000
    let startMonotonic = ProcessInfo.processInfo.systemUptime + lead
    let envelopes = try (0..<count).map { i in try signed(at: UInt64(startWall + Double(i) * 1000 / rate)) }
    // Sent from the link's own loop, woken by a timer at each one's moment: one wake-up a message, as
    // mosquitto's sender sleeps and writes on one thread (a pacing thread handing each to the loop cost
    // two, and 0.24 of a core at 8,000/s: CPU the relay under test shares).
    let done = DispatchSemaphore(value: 0)
    let paced = PacedSends(envelopes, link: link, start: startMonotonic, rate: rate, done: done)
    loop.execute { paced.start(on: loop) }
    done.wait()
    // Let the last batches leave before the process ends.
    Thread.sleep(forTimeInterval: 2)
}

/// Envelopes sent one per link message, each at `start + i / rate`, from
/// the loop, woken by a timerfd armed for the next one's moment; one that
/// is late goes at once (its lateness counts as latency at the receivers).
final class PacedSends: LoopHandler, @unchecked Sendable {
    private let envelopes: [CarriedEnvelope]
    private let link: LeanLink
    private let start: Double
    private let rate: Double
    private let done: DispatchSemaphore
    private var next = 0
    private var fd: Int32 = -1

    init(_ envelopes: [CarriedEnvelope], link: LeanLink, start: Double, rate: Double, done: DispatchSemaphore) {
        (self.envelopes, self.link, self.start, self.rate, self.done) = (envelopes, link, start, rate, done)
    }

    /// On the loop: registers the timer and arms it for the first.
    func start(on loop: EventLoop) {
        fd = peernode_timerfd()
        guard fd >= 0, (try? loop.register(fd, events: peernode_EPOLLIN, handler: self)) != nil else {
            FileHandle.standardError.write(Data("no timer: \(String(cString: strerror(errno)))\n".utf8))
            done.signal()
            return
        }
        arm()
    }

    private func arm() {
        guard next < envelopes.count else {
            done.signal()
            return
        }
        _ = peernode_timerfd_at(fd, start + Double(next) / rate)
    }

    func handle(events: UInt32) {
        var expirations: UInt64 = 0
        _ = read(fd, &expirations, 8)
        let now = ProcessInfo.processInfo.systemUptime
        while next < envelopes.count, start + Double(next) / rate <= now {
            link.send(.envelopes([envelopes[next]]))
            next += 1
        }
        arm()
    }

    func tick(now: Double) -> Double? { nil }
    func shutdown() { if fd >= 0 { close(fd) } }
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

/// The lean receiver's reading of an `envelopes` gossip message
/// (docs/PROTOCOL.md §9 and §4): the count, and each envelope's timestamp
/// read in place. Nothing is hashed, copied or checked beyond the lengths.
enum LeanBatch {
    static let envelopesTag: UInt8 = 3
    /// version 1 ‖ author 32 ‖ sequence 8 ‖ previous 32, then the dependency count (u16).
    static let dependencyCountOffset = 73
    static let dependencySize = 40

    /// Reads what the real decoder reads, on envelopes with and without dependencies, or throws.
    static func check() throws {
        let lan = NetworkKey.derived(fromName: NetworkKey.defaultName)
        let room = RoomID.publicRoom(.general, network: lan)
        let key = lan.publicRoomKey(roomName: RoomName.general.value)
        let a = try SigningKey.generate(), b = try SigningKey.generate()
        func envelope(_ by: SigningKey, _ dependencies: [Dependency], _ timestamp: UInt64) throws -> CarriedEnvelope {
            let body = try SealedBody.seal(kind: .text, content: Array("x".utf8), key: key, author: by.publicKey, room: room)
            let e = try Envelope.sign(by: by, sequence: 1, previous: .zero, dependencies: dependencies, timestamp: timestamp, room: room, body: body)
            return CarriedEnvelope(hops: 3, envelope: e)
        }
        let batch = [try envelope(a, [], 1_700_000_000_123), try envelope(b, [Dependency(author: a.publicKey, sequence: 1)], 1_700_000_000_456)]
        let bytes = GossipMessage.envelopes(batch).encoded
        guard case let .envelopes(decoded) = try GossipMessage.decode(bytes), timestamps(bytes) == decoded.map(\.envelope.timestamp) else {
            throw NodeBenchError("the lean reading of an envelopes message disagrees with the decoder")
        }
    }

    static func timestamps(_ bytes: [UInt8]) -> [UInt64]? {
        guard bytes.first == envelopesTag else { return nil }
        var at = 1
        func varint() -> Int? {
            var value = 0, shift = 0
            while at < bytes.count, shift < 63 {
                let byte = bytes[at]
                at += 1
                value |= Int(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        guard let count = varint() else { return nil }
        var stamps: [UInt64] = []
        stamps.reserveCapacity(count)
        for _ in 0..<count {
            at += 1  // hops
            guard let length = varint(), at + length <= bytes.count, length >= dependencyCountOffset + 2 else { return nil }
            let dependencies = Int(bytes[at + dependencyCountOffset]) << 8 | Int(bytes[at + dependencyCountOffset + 1])
            let stamp = at + dependencyCountOffset + 2 + dependencies * dependencySize
            guard stamp + 8 <= at + length else { return nil }
            stamps.append(bytes[stamp..<(stamp + 8)].reduce(0) { $0 << 8 | UInt64($1) })
            at += length
        }
        return stamps
    }
}
