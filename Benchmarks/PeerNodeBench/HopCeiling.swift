import Crypto
import Foundation
import Gossip
import Store
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The ceiling of the forwarding path on this machine (issue 41): each
/// primitive a message passes through, measured here, and what they allow
/// when a node does nothing else. `scripts/bench-gossip.py` (and
/// `bench-relay.py`) print the measured figures beside these ceilings.
///
/// One hop, from a line on A's standard input to B's `--json` line: the
/// two pipe crossings (a line through `cat` and back, measured here) and
/// one loopback TCP crossing between threads; A seals the body, signs,
/// writes its intent (its row and fsync follow the send) and seals the link
/// message; B opens the link message, verifies and opens the body (shown
/// before its store's transaction, which follows). Three hops add two
/// forwards: a crossing, a link open, a verify and a link seal each.
/// Catch-up: per envelope a verify (on both cores), a share of a batched
/// insert, of a link open, and a body open. A relay to 50 links: per
/// message a link open, a verify, an insert, and 50 link seals and socket
/// writes on its loop; beside it, as the benchmark runs them on the same
/// cores, its 50 receivers (50 link opens and reads) and its paced sender
/// (a wake-up, a link seal and a socket write per message: it signs and
/// seals every body before the run).
func runHopCeiling(directory: String) throws {
    let storeFolder = directory + "/hop-ceiling-store"
    try? FileManager.default.removeItem(atPath: storeFolder)
    defer { try? FileManager.default.removeItem(atPath: storeFolder) }
    let store = try Store(directory: try DataDirectory(path: storeFolder))
    try store.registerRoom(room, name: RoomName.general.value)
    // Each primitive timed after a pause, as a message finds it (the hop
    // benchmark's posts are 2 ms apart; a chat's, seconds: caches and the
    // core's clock are not warm from the call before), and back to back,
    // as a catch-up or a busy relay finds it.
    let cold = try PathPrimitives(pause: 2_000, store: store)
    let warm = try PathPrimitives(pause: 0, store: store)
    let batch = try makeEnvelopes(20_000)
    let batchStarted = now()
    for start in stride(from: 0, to: 20_000, by: 1_000) { _ = try store.insert(Array(batch[start..<(start + 1_000)]), receivedAt: 1) }
    let insertBatched = (now() - batchStarted) / 20_000 * 1e6

    let (tcpCrossing, tcpWrite) = try loopbackTCP(size: cold.wireBytes + 2)
    let pipes = try pipeFloor()

    // Our post goes on the links before its row (its intent written first; docs/DECISIONS.md,
    // "Own posts are sent before their row"): the row is not on the hop's path.
    let hopA = cold.seal + cold.sign + cold.intent + cold.linkSeal
    let hopB = cold.linkOpen + cold.decode + cold.verify + cold.open
    let oneHop = pipes + tcpCrossing + hopA + hopB
    let forward = tcpCrossing + cold.linkOpen + cold.decode + cold.verify + cold.linkSeal
    let threeHops = oneHop + 2 * forward
    let verifyRate = 1e6 / warm.verify
    let catchUpRest = insertBatched + warm.open + warm.decode / 8 + warm.linkOpen / 8
    let catchUp = 2e6 / (warm.verify + catchUpRest)
    // A busy relay sends a turn's envelopes in one message per link: per envelope it pays a share of the
    // link open and decode, a batched insert, and its bytes sealed and written 50 times.
    let (sealPerKB, openPerKB, writePerKB) = try bulkLink()
    // Sized as the relay benchmark's messages are (`fanout-send`: 256 bytes of content, padded to 512).
    let relayWireBytes = try fanOutWireBytes()
    let envelopeKB = Double(relayWireBytes) / 1000
    let relayLoop = warm.linkOpen / 8 + warm.decode / 8 + insertBatched + 50 * envelopeKB * (sealPerKB + writePerKB)
    let relayAlone = min(1e6 / relayLoop, 2e6 / (relayLoop + warm.verify))
    // In the benchmark the 50 receivers share the machine: each opens and reads every message's bytes
    // (at the open's own rate: AES-GCM's open is slower than its seal in libsodium 1.0.18).
    let receivers = 50 * envelopeKB * (openPerKB + writePerKB)
    let relay = min(relayAlone, 2e6 / (relayLoop + warm.verify + receivers))
    // And its sender: paced, woken by its timer for each message (a wake-up, half the two-crossing
    // pipe floor), it link-seals and writes each alone. It signs and seals every body before the run
    // (`fanout-send`), so those are not on the cores the relay shares.
    let sender = warm.linkSeal + tcpWrite + pipes / 2
    let relayBench = min(relayAlone, 2e6 / (relayLoop + warm.verify + receivers + sender))
    // With version 4 a run of an author's envelopes that waited together costs one verify: where runs
    // are long (a catch-up, a busy relay's one sender), the verify drops out of the sums and the loop
    // alone bounds catch-up, on one core.
    let catchUpRuns = 1e6 / catchUpRest
    let relayBenchRuns = min(1e6 / relayLoop, 2e6 / (relayLoop + receivers + sender))

    print(try cipherLine(relayWireBytes: relayWireBytes))
    for (name, p) in [("after a 2 ms pause", cold), ("back to back", warm)] {
        print(String(format: "primitives %@ (µs, median, one core): sign %.1f, verify %.1f, body seal %.1f, body open %.1f, link seal %.1f, link open %.1f, decode %.1f (one envelope, %d bytes on the wire); our post's intent %.1f and its row %.1f (no fsync), one envelope a transaction %.1f",
                     name, p.sign, p.verify, p.seal, p.open, p.linkSeal, p.linkOpen, p.decode, p.wireBytes, p.intent, p.row, p.insertOne))
    }
    print(String(format: "store: in batches of 1,000, %.1f µs an envelope", insertBatched))
    print(String(format: "crossings (µs): a line through cat and back (two pipe crossings, two wake-ups) %.1f; loopback TCP between two threads, one way %.1f; a socket write of one message %.1f",
                 pipes, tcpCrossing, tcpWrite))
    print(String(format: "ceiling, one hop (A's stdin to B's line, primitives after a pause): %.0f µs = pipes %.0f + TCP %.0f + A %.0f (seal, sign, the intent's write, link seal; its row follows the send) + B %.0f (link open, decode, verify, open; shown before its store)",
                 oneHop, pipes, tcpCrossing, hopA, hopB))
    print(String(format: "ceiling, three hops: %.0f µs (each forward %.0f: crossing, link open, decode, verify, link seal)", threeHops, forward))
    print(String(format: "ceiling, catch-up (back to back): %.0f envelopes/s on 2 cores = %.2f× the one-core verify ceiling (%.0f/s); per envelope beside the verify %.1f µs (batched insert, open, shares of link open and decode)",
                 catchUp, catchUp / verifyRate, verifyRate, catchUpRest))
    print(String(format: "ceiling, a relay to 50 links (back to back, a turn's envelopes in one message per link; messages of %d bytes on the wire, as the benchmark's): %.0f messages/s alone (its loop %.1f µs a message: shares of link open and decode, a batched insert, 50 × its bytes sealed (%.2f µs/KB) and written (%.2f µs/KB); the verify on the other core); %.0f messages/s with its 50 receivers on the same 2 cores (%.1f µs a message to open and read them); %.0f messages/s with its receivers and its sender, as the benchmark runs them (%.1f µs a message: a wake-up, a link seal and a socket write each; it signs before the run)",
                 relayWireBytes, relayAlone, relayLoop, sealPerKB, writePerKB, relay, receivers, relayBench, sender))
    print(String(format: "ceiling with version-4 runs (one verify a run, none counted a message): catch-up %.0f envelopes/s (the loop's %.1f µs an envelope, one core) = %.2f× the one-core verify ceiling; a relay to 50 links with its receivers and its sender %.0f messages/s",
                 catchUpRuns, catchUpRest, catchUpRuns / verifyRate, relayBenchRuns))
    // Beside the model, not in it: a write as a paced relay makes them, one link after another, each
    // carrying a few messages, the links drained by one thread as the benchmark's receivers are.
    let fanOut = try [1, 20].map { ($0, try fanOutWriteCost(links: 50, bytes: $0 * relayWireBytes)) }
    print("writes to 50 loopback links in turn, one thread draining them (not in the model: what a paced relay's writes cost): "
          + fanOut.map { String(format: "%d message%@ (%d bytes) each %.2f µs/KB", $0.0, $0.0 == 1 ? "" : "s", $0.0 * relayWireBytes, $0.1) }
            .joined(separator: ", ") + String(format: "; the model's bulk write %.2f µs/KB", writePerKB))
    print(String(format: "hop-ceiling-us one %.1f a %.1f b %.1f three %.1f pipes %.1f catchup-per-s %.0f verify-per-s %.0f relay50-per-s %.0f relay50-bench-per-s %.0f catchup-runs-per-s %.0f relay50-bench-runs-per-s %.0f",
                 oneHop, hopA, hopB, threeHops, pipes, catchUp, verifyRate, relay, relayBench, catchUpRuns, relayBenchRuns))
}

/// The primitives on a message's path, each timed alone (median µs),
/// `pause` µs after the one before.
struct PathPrimitives {
    var sign = 0.0, verify = 0.0, seal = 0.0, open = 0.0, linkSeal = 0.0, linkOpen = 0.0, decode = 0.0, row = 0.0, insertOne = 0.0
    /// Our post's intent written before its send (`OwnIntent.write`: the free space looked at, one pwrite, no fsync).
    var intent = 0.0
    var wireBytes = 0

    init(pause: UInt32, store: Store) throws {
        let count = pause > 0 ? 400 : 4_000
        func median(_ body: () throws -> Void) rethrows -> Double {
            var times: [Double] = []
            times.reserveCapacity(count)
            for _ in 0..<count {
                if pause > 0 { usleep(pause) }
                let started = now()
                try body()
                times.append(now() - started)
            }
            times.sort()
            return times[times.count / 2] * 1e6
        }
        let author = try SigningKey.generate()
        let text = Array("a message of a typical length, about sixty bytes, sent".utf8)
        let roomKey = network.publicRoomKey(roomName: "#general")
        var sequence: UInt64 = 0
        var previous = MessageID.zero
        func signed() throws -> Envelope {
            sequence += 1
            let sealed = try SealedBody.seal(kind: .text, content: text, key: roomKey, author: author.publicKey, room: room)
            let e = try Envelope.sign(by: author, sequence: sequence, previous: previous, dependencies: [],
                                      timestamp: 1_764_000_000_000 + sequence, room: room, body: sealed)
            previous = e.id
            return e
        }
        seal = try median { _ = try SealedBody.seal(kind: .text, content: text, key: roomKey, author: author.publicKey, room: room) }
        let sample = try signed()
        sign = try median { _ = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, body: sample.body) }
        verify = median { _ = try? sample.verifySignature() }
        open = median { _ = try? SealedBody.open(sample, key: roomKey) }
        // The link: a finished Noise handshake, one message of one envelope.
        var (sending, receiving) = try transports()
        let message = GossipMessage.envelopes([CarriedEnvelope(hops: 0, envelope: sample)]).encoded
        var wire: [[UInt8]] = []
        wire.reserveCapacity(count)
        linkSeal = try median { wire.append(try sending.encrypt(message)) }
        wireBytes = wire[0].count
        var next = 0
        linkOpen = try median {
            _ = try receiving.decrypt(wire[next])
            next += 1
        }
        decode = median { _ = try? GossipMessage.decode(message) }
        // Our post's intent, written over the last as `OwnIntent` does before the send.
        let intentPath = NSTemporaryDirectory() + "/peernode-hop-intent-\(getpid())"
        let intentFile = Glibc.open(intentPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer {
            if intentFile >= 0 { Glibc.close(intentFile) }
            unlink(intentPath)
        }
        let intentBytes = OwnIntentRecord.encode(sample)
        intent = median {
            var fs = statvfs()
            _ = fstatvfs(intentFile, &fs)
            _ = intentBytes.withUnsafeBytes { pwrite(intentFile, $0.baseAddress, $0.count, 0) }
        }
        // The store: our post's row without its fsync, and someone's envelope in a transaction of its own.
        let own = try (0..<count).map { _ in try signed() }
        var index = 0
        row = try median {
            _ = try store.insertOwn(own[index], at: 1, durable: false)
            index += 1
        }
        try store.syncOwn()
        let peers = try (0..<count).map { _ in try SigningKey.generate() }
        let body = sample.body
        let theirs = try peers.map { try Envelope.sign(by: $0, sequence: 1, previous: .zero, dependencies: [], timestamp: 1, room: room, body: body) }
        index = 0
        insertOne = try median {
            _ = try store.insert([theirs[index]], receivedAt: 1)
            index += 1
        }
    }
}

/// A link's cost per KB in bulk: sealing a 60 KB message, and writing it
/// to a loopback socket another thread drains.
private func bulkLink() throws -> (seal: Double, open: Double, write: Double) {
    let message = [UInt8](repeating: 0x33, count: 60_000)
    return (try sealCost(message, cipher: linkCipher) / 60, try openCost(message) / 60, try writeCost(message, rounds: 2_000) / 60)
}

/// µs to open `message` as a link's transport message, with the cipher the
/// links run: the mean over 1,000, sealed first in order by the end whose
/// nonces the opener follows (one sealed past them fails at its tag, after
/// half the work), and every one must open.
func openCost(_ message: [UInt8]) throws -> Double {
    var (sending, receiving) = try transports()
    let wire = try (0..<1_000).map { _ in try sending.encrypt(message) }
    let started = now()
    for sealed in wire {
        guard (try? receiving.decrypt(sealed)) != nil else { throw NodeBenchError("a link message did not open") }
    }
    return (now() - started) / Double(wire.count) * 1e6
}

/// µs to seal `message` as a link's transport message under `cipher`: the mean over enough rounds to seal 128 MB.
func sealCost(_ message: [UInt8], cipher: NoiseCipher) throws -> Double {
    var (sending, _) = try transports(cipher: cipher)
    let rounds = max(2_000, (128 << 20) / max(1, message.count))
    let started = now()
    for _ in 0..<rounds { _ = try sending.encrypt(message) }
    return (now() - started) / Double(rounds) * 1e6
}

/// The two link ciphers side by side, at a relay message's size and in bulk,
/// and which one this machine's links run.
private func cipherLine(relayWireBytes: Int) throws -> String {
    let small = [UInt8](repeating: 0x33, count: max(0, relayWireBytes - 16)), bulk = [UInt8](repeating: 0x33, count: 60_000)
    let figures = try NoiseCipher.linkPreference.reversed().map { cipher in
        String(format: "%@ %.2f µs a relay message (%d bytes), %.2f µs/KB in bulk", cipher.displayName,
               try sealCost(small, cipher: cipher), relayWireBytes, try sealCost(bulk, cipher: cipher) / 60)
    }
    let why = NoiseCipher.aesGCM.isAvailable ? "this CPU has AES" : "this CPU has no AES instructions"
    return "link cipher: \(linkCipher.displayName) (\(why)); to seal: " + figures.joined(separator: "; ")
}

/// µs to write `payload` whole to a loopback socket another thread drains: the mean over `rounds`.
private func writeCost(_ payload: [UInt8], rounds: Int) throws -> Double {
    let (writer, reader) = try connectedPair()
    let drain = Thread {
        var sink = [UInt8](repeating: 0, count: 1 << 16)
        while sink.withUnsafeMutableBytes({ recv(reader, $0.baseAddress!, $0.count, 0) }) > 0 {}
    }
    drain.start()
    let started = now()
    for _ in 0..<rounds {
        var sent = 0
        while sent < payload.count {
            let n = payload.withUnsafeBytes { send(writer, $0.baseAddress! + sent, payload.count - sent, 0) }
            guard n > 0 else { break }
            sent += n
        }
    }
    let cost = (now() - started) / Double(rounds) * 1e6
    shutdown(writer, Int32(SHUT_RDWR))
    close(writer)
    usleep(20_000)  // the drain sees the end before its socket goes
    close(reader)
    return cost
}

/// µs per KB to write `bytes` to each of `links` loopback sockets in turn,
/// one thread draining them all with poll(2), as the relay benchmark's
/// receivers do: the mean over enough rounds to move 64 MB.
private func fanOutWriteCost(links: Int, bytes: Int) throws -> Double {
    let pairs = try (0..<links).map { _ in try connectedPair() }
    let done = Atomic<Bool>(false)
    let readers = pairs.map(\.1)
    let drain = Thread {
        var sink = [UInt8](repeating: 0, count: 1 << 16)
        var fds = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while !done.load(ordering: .relaxed) {
            guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
            for i in fds.indices where fds[i].revents != 0 {
                _ = sink.withUnsafeMutableBytes { recv(fds[i].fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            }
        }
    }
    drain.start()
    let payload = [UInt8](repeating: 0x5a, count: bytes)
    let rounds = max(20, (64 << 20) / (bytes * links))
    let started = now()
    for _ in 0..<rounds {
        for (writer, _) in pairs {
            var sent = 0
            while sent < bytes {
                let n = payload.withUnsafeBytes { send(writer, $0.baseAddress! + sent, bytes - sent, 0) }
                guard n > 0 else { break }
                sent += n
            }
        }
    }
    let cost = (now() - started) * 1e6 / (Double(rounds * links * bytes) / 1000)
    done.store(true, ordering: .relaxed)
    usleep(200_000)  // the drain sees `done` before the sockets go
    for (writer, reader) in pairs {
        close(writer)
        close(reader)
    }
    return cost
}

/// Bytes on the wire of one envelope as `fanout-send` signs them, alone in a link message.
private func fanOutWireBytes() throws -> Int {
    let author = try SigningKey.generate()
    let sealed = try SealedBody.seal(kind: .text, content: [UInt8](repeating: 0x61, count: fanOutBodyBytes),
                                     key: network.publicRoomKey(roomName: "#general"), author: author.publicKey, room: room)
    let e = try Envelope.sign(by: author, sequence: 1, previous: .zero, dependencies: [], timestamp: 1_764_000_000_000, room: room, body: sealed)
    var (sending, _) = try transports()
    return try sending.encrypt(GossipMessage.envelopes([CarriedEnvelope(hops: 0, envelope: e)]).encoded).count
}

/// The cipher two nodes' links run on this machine: AES-256-GCM where the
/// CPU has AES, else ChaCha20-Poly1305 (docs/PROTOCOL.md §10);
/// `PEERNODE_BENCH_LINK_CIPHER=chachapoly` measures the other, beside a
/// relay started `--link-cipher chachapoly`.
let linkCipher = ProcessInfo.processInfo.environment["PEERNODE_BENCH_LINK_CIPHER"] == "chachapoly"
    ? NoiseCipher.chaChaPoly : NoiseCipher.linkPreference.first ?? .chaChaPoly

/// Both ends of a finished Noise handshake: the initiator's transport and the responder's.
func transports(cipher: NoiseCipher = linkCipher) throws -> (NoiseTransport, NoiseTransport) {
    var initiator = try NoiseHandshake(role: .initiator, identity: try SigningKey.generate(), networkKey: network, cipher: cipher)
    var responder = try NoiseHandshake(role: .responder, identity: try SigningKey.generate(), networkKey: network, cipher: cipher)
    try responder.readMessage(try initiator.writeMessage())
    try initiator.readMessage(try responder.writeMessage())
    try responder.readMessage(try initiator.writeMessage())
    return (try initiator.transport(), try responder.transport())
}

/// A line written to `cat` and read back (median µs of 2,000): two pipe
/// crossings and two wake-ups, what a node's standard input and output
/// add to a hop at the least.
private func pipeFloor() throws -> Double {
    var toCat: [Int32] = [0, 0], fromCat: [Int32] = [0, 0]
    guard pipe(&toCat) == 0, pipe(&fromCat) == 0 else { throw NSError(domain: "hop-ceiling", code: Int(errno)) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toCat[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromCat[1], 1)
    posix_spawn_file_actions_addclose(&actions, toCat[1])
    posix_spawn_file_actions_addclose(&actions, fromCat[0])
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("cat"), nil]
    defer { for a in argv { free(a) } }
    guard posix_spawnp(&pid, "cat", &actions, nil, argv, environ) == 0 else { throw NSError(domain: "hop-ceiling: cat", code: Int(errno)) }
    close(toCat[0])
    close(fromCat[1])
    defer {
        close(toCat[1])
        close(fromCat[0])
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
    let line = [UInt8]("{\"type\":\"message\",\"text\":\"ping 1\"}\n".utf8)
    var buffer = [UInt8](repeating: 0, count: 256)
    var times: [Double] = []
    for i in 0..<2_200 {
        let started = now()
        _ = line.withUnsafeBytes { write(toCat[1], $0.baseAddress!, $0.count) }
        var got = 0
        while got < line.count {
            let n = buffer.withUnsafeMutableBytes { read(fromCat[0], $0.baseAddress!, $0.count) }
            guard n > 0 else { throw NSError(domain: "hop-ceiling: cat ended", code: 0) }
            got += n
        }
        if i >= 200 { times.append(now() - started) }
        // As in the hop benchmark, a pause between lines: each crossing wakes a sleeping process.
        usleep(200)
    }
    times.sort()
    return times[times.count / 2] * 1e6
}

/// Two ends of a loopback TCP connection, without Nagle's delay.
func connectedPair() throws -> (Int32, Int32) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(listener) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
    listen(listener, 1)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }) == 0 else {
        throw NSError(domain: "hop-ceiling: connect", code: Int(errno))
    }
    let server = accept(listener, nil, nil)
    var one: Int32 = 1
    for fd in [client, server] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    return (client, server)
}

/// Loopback TCP between two threads: a message of `size` bytes there and
/// back (half the median round trip, µs: one crossing and its wake-up),
/// and the cost of one socket write of it while another thread drains.
private func loopbackTCP(size: Int) throws -> (crossing: Double, write: Double) {
    let (client, server) = try connectedPair()
    let echo = Thread {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress!, $0.count, 0) }
            guard n > 0 else { return }
            var sent = 0
            while sent < n {
                let m = buffer.withUnsafeBytes { send(server, $0.baseAddress! + sent, n - sent, 0) }
                guard m > 0 else { return }
                sent += m
            }
        }
    }
    echo.start()
    let payload = [UInt8](repeating: 0x42, count: size)
    var buffer = [UInt8](repeating: 0, count: size)
    var times: [Double] = []
    for i in 0..<3_000 {
        let started = now()
        _ = payload.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, 0) }
        var got = 0
        while got < size {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress! + got, size - got, 0) }
            guard n > 0 else { throw NSError(domain: "hop-ceiling: echo ended", code: 0) }
            got += n
        }
        if i >= 200 { times.append(now() - started) }
        usleep(200)
    }
    shutdown(client, Int32(SHUT_RDWR))
    close(client)
    times.sort()
    let crossing = times[times.count / 2] / 2 * 1e6

    usleep(20_000)  // the echo thread sees the end before its socket goes
    close(server)
    let write = try writeCost(payload, rounds: 20_000)
    return (crossing, write)
}
