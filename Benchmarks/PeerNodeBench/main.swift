import CSQLite
import CSodium
import Crypto
import Foundation
import Gossip
import Store

// Benchmarks print figures; they assert nothing. Each figure comes with its
// ratio to the machine's own ceiling measured in the same run: raw libsodium
// for crypto, raw SQLite for storage.

/// Seconds on the monotonic clock.
func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// Runs `body` repeatedly for about `seconds`, returns operations per second.
/// `body` returns how many operations it did.
func rate(seconds: Double = 1.5, _ body: () throws -> Int) rethrows -> Double {
    _ = try body()  // warm-up
    var operations = 0
    let start = now()
    var elapsed = 0.0
    repeat {
        operations += try body()
        elapsed = now() - start
    } while elapsed < seconds
    return Double(operations) / elapsed
}

/// Runs one of the tool commands (a lean peer, a store maker) and exits:
/// 0 when it finished, 1 with the reason on stderr when it failed (a node
/// gone, a directory that cannot be written), never a runtime trap.
func tool(_ body: () throws -> Void) -> Never {
    do {
        try body()
    } catch {
        FileHandle.standardError.write(Data("peernode-bench \(CommandLine.arguments.dropFirst().first ?? ""): \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

func report(_ name: String, _ perSecond: Double, ceiling: (String, Double)? = nil) {
    var line = name.padding(toLength: 50, withPad: " ", startingAt: 0)
        + String(format: "%12.0f /s", perSecond)
    if let (label, value) = ceiling {
        line += String(format: "   %5.1f%% of %@", perSecond / value * 100, label)
    }
    print(line)
}

let network = NetworkKey.derived(fromName: "bench")
let room = RoomID.publicRoom(.general, network: network)
let roomKey = network.publicRoomKey(roomName: "#general")
let authors = try (0..<20).map { _ in try SigningKey.generate() }
let body = try SealedBody.seal(kind: .text, content: [UInt8](repeating: 0x61, count: 200), key: roomKey, author: authors[0].publicKey, room: room)

/// `count` envelopes: 20 authors in turn, each naming the previous author's latest as a dependency.
func makeEnvelopes(_ count: Int) throws -> [Envelope] {
    var heads: [MessageID] = Array(repeating: .zero, count: authors.count)
    var sequences = [UInt64](repeating: 0, count: authors.count)
    var out: [Envelope] = []
    out.reserveCapacity(count)
    for i in 0..<count {
        let a = i % authors.count
        let p = (a + authors.count - 1) % authors.count
        sequences[a] += 1
        let deps = sequences[p] > 0 ? [Dependency(author: authors[p].publicKey, sequence: sequences[p])] : []
        let e = try Envelope.sign(by: authors[a], sequence: sequences[a], previous: heads[a], dependencies: deps,
                                  timestamp: 1_764_000_000_000 + UInt64(i), room: room, body: body)
        heads[a] = e.id
        out.append(e)
    }
    return out
}

// `peernode-bench make-store DIR N [WRITERS]`: a data directory holding N
// envelopes of #general on the default network by WRITERS authors (20 by
// default), for the catch-up and many-authors benchmarks.
if [4, 5].contains(CommandLine.arguments.count), CommandLine.arguments[1] == "make-store", let count = Int(CommandLine.arguments[3]) {
    tool {
        let writerCount = CommandLine.arguments.count == 5 ? max(1, Int(CommandLine.arguments[4]) ?? 20) : 20
        let directory = try DataDirectory(path: CommandLine.arguments[2])
        let store = try Store(directory: directory)
        try store.registerRoom(RoomID.publicRoom(.general, network: NetworkKey.derived(fromName: NetworkKey.defaultName)), name: RoomName.general.value)
        var batch: [Envelope] = []
        try signCatchUpHistory(count: count, writers: try (0..<writerCount).map { _ in try SigningKey.generate() }) { _, e in
            batch.append(e)
            if batch.count == 1000 {
                _ = try store.insert(batch, receivedAt: 1)
                batch = []
            }
        }
        _ = try store.insert(batch, receivedAt: 1)
        print("wrote \(count) envelopes to \(CommandLine.arguments[2])")
    }
}

// The relay fan-out benchmark's lean peers (FanOut.swift, MQTT.swift).
let arguments = CommandLine.arguments
if arguments.count >= 2, arguments[1] == "overlay" {
    let numbers = arguments.dropFirst(2).compactMap { Int($0) }
    runScaleSimulation(nodes: numbers.count > 0 ? numbers[0] : 1_000, authors: numbers.count > 1 ? numbers[1] : 10_000,
                       messages: numbers.count > 2 ? numbers[2] : 1_000_000, meshMessages: numbers.count > 3 ? numbers[3] : 100)
    exit(0)
}
if arguments.count == 3, arguments[1] == "hop-ceiling" {
    tool { try runHopCeiling(directory: arguments[2]) }
}
if arguments.count == 3, arguments[1] == "files-ceiling" {
    tool { try runFileCeiling(directory: arguments[2]) }
}
if arguments.count == 4, arguments[1] == "peer-clocks", let authors = Int(arguments[3]) {
    tool { try runPeerClockSaveBenchmark(directory: arguments[2], authors: authors) }
}
if arguments.count == 4, arguments[1] == "post-deps", let authors = Int(arguments[3]) {
    tool { try runPostDependenciesBenchmark(directory: arguments[2], authors: authors) }
}
if arguments.count == 4, arguments[1] == "push", let authors = Int(arguments[2]), let links = Int(arguments[3]) {
    tool { try runPushBenchmark(authors: authors, links: links) }
}
if arguments.count == 4, arguments[1] == "catch-up-send", let count = Int(arguments[3]) {
    tool { try runCatchUpSender(target: arguments[2], count: count) }
}
if arguments.count >= 2, ["fanout-receive", "fanout-send", "mqtt-receive", "mqtt-send"].contains(arguments[1]) {
    tool {
        switch (arguments[1], arguments.count) {
        case ("fanout-receive", 6):
            try runFanOutReceiver(target: arguments[2], links: Int(arguments[3]) ?? 50, expected: Int(arguments[4]) ?? 0, seconds: Double(arguments[5]) ?? 30)
        case ("fanout-send", 4), ("fanout-send", 5):
            try runFanOutSender(target: arguments[2], count: Int(arguments[3]) ?? 0, rate: arguments.count == 5 ? Double(arguments[4]) : nil)
        case ("mqtt-receive", 6):
            try runMQTTReceiver(target: arguments[2], subscribers: Int(arguments[3]) ?? 50, expected: Int(arguments[4]) ?? 0, seconds: Double(arguments[5]) ?? 30)
        case ("mqtt-send", 4), ("mqtt-send", 5):
            try runMQTTSender(target: arguments[2], count: Int(arguments[3]) ?? 0, rate: arguments.count == 5 ? Double(arguments[4]) : nil)
        default:
            FileHandle.standardError.write(Data("usage: see Benchmarks/PeerNodeBench/FanOut.swift and MQTT.swift\n".utf8))
            exit(2)
        }
    }
}

// `peernode-bench verify-ceiling`: only the raw single-core verify rate, for
// scripts that put their figures beside it in the same run.
let onlyCeiling = CommandLine.arguments.count == 2 && CommandLine.arguments[1] == "verify-ceiling"
if !onlyCeiling {
print("peernode benchmarks — \(ProcessInfo.processInfo.processorCount) cores; one thread; figures, not tests")
print("")
}

// MARK: ceilings

let sample = try makeEnvelopes(2_000)
let signedParts = sample.map { Array($0.signedBytes) }
let prefixedParts = signedParts.map { Array("peernode/1 envelope\0".utf8) + $0 }
if !onlyCeiling {
print("envelope size: \(sample[0].encoded.count) bytes (body \(body.count) bytes, 1 dependency)")
print("")
print("machine ceilings")
}
func rawVerifyRate() -> Double {
    var index = 0
    return rate {
        for _ in 0..<100 {
            let i = index % sample.count
            index += 1
            let ok = prefixedParts[i].withUnsafeBufferPointer { m in
                sample[i].signature.withUnsafeBufferPointer { s in
                    sample[i].author.bytes.withUnsafeBufferPointer { pk in
                        crypto_sign_verify_detached(s.baseAddress!, m.baseAddress, UInt64(m.count), pk.baseAddress!)
                    }
                }
            }
            if ok != 0 { print("raw verify failed") }
        }
        return 100
    }
}
if onlyCeiling {
    print(String(format: "%.0f", rawVerifyRate()))
    exit(0)
}
let encoded = sample.map(\.encoded)
func decodeVerifyRate() throws -> Double {
    var decodeIndex = 0
    return try rate {
        for _ in 0..<100 {
            _ = try Envelope.decode(encoded[decodeIndex % encoded.count])
            decodeIndex += 1
        }
        return 100
    }
}
// Alternating rounds, best of each, so a noisy moment does not favour either side.
var rawVerify = 0.0
var decodeRate = 0.0
for _ in 0..<3 {
    rawVerify = max(rawVerify, rawVerifyRate())
    decodeRate = max(decodeRate, try decodeVerifyRate())
}
report("raw libsodium Ed25519 verify", rawVerify)

func rawSQLiteInsertRate() throws -> Double {
    let dir = NSTemporaryDirectory() + "peernode-bench-raw-\(getpid())"
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var db: OpaquePointer?
    sqlite3_open(dir + "/raw.db", &db)
    defer { sqlite3_close(db) }
    sqlite3_exec(db, """
        PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;
        CREATE TABLE envelopes(rowid INTEGER PRIMARY KEY, author INTEGER NOT NULL, sequence INTEGER NOT NULL,
          id BLOB NOT NULL, room INTEGER NOT NULL, kind INTEGER NOT NULL, timestamp INTEGER NOT NULL,
          received_at INTEGER NOT NULL, causal_time INTEGER, delivery INTEGER, bytes BLOB NOT NULL, UNIQUE(author, sequence));
        CREATE INDEX by_room_order ON envelopes(room, causal_time, id) WHERE causal_time IS NOT NULL;
        CREATE INDEX by_room_delivery ON envelopes(room, delivery) WHERE delivery IS NOT NULL;
        """, nil, nil, nil)
    var stmt: OpaquePointer?
    sqlite3_prepare_v2(db, "INSERT INTO envelopes(author, sequence, id, room, kind, timestamp, received_at, causal_time, delivery, bytes) VALUES (?,?,?,?,?,?,?,?,?,?)", -1, &stmt, nil)
    defer { sqlite3_finalize(stmt) }
    var n: Int64 = 0
    return rate {
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        for _ in 0..<1000 {
            let e = sample[Int(n) % sample.count]
            n += 1
            sqlite3_bind_int64(stmt, 1, n % 20)
            sqlite3_bind_int64(stmt, 2, n)
            e.id.bytes.withUnsafeBytes { _ = peernode_sqlite3_bind_blob_transient(stmt, 3, $0.baseAddress, 32) }
            sqlite3_bind_int64(stmt, 4, 1)
            sqlite3_bind_int64(stmt, 5, 1)
            sqlite3_bind_int64(stmt, 6, n)
            sqlite3_bind_int64(stmt, 7, n)
            sqlite3_bind_int64(stmt, 8, n)
            sqlite3_bind_int64(stmt, 9, n)
            e.encoded.withUnsafeBytes { _ = peernode_sqlite3_bind_blob_transient(stmt, 10, $0.baseAddress, Int32($0.count)) }
            sqlite3_step(stmt)
            sqlite3_reset(stmt)
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        return 1000
    }
}
let rawInsert = try rawSQLiteInsertRate()
report("raw SQLite insert, same rows+indexes, 1000/txn", rawInsert)

// MARK: peernode

print("")
print("peernode")
var signIndex: UInt64 = 0
let signRate = try rate {
    for _ in 0..<100 {
        signIndex += 1
        _ = try Envelope.sign(by: authors[0], sequence: signIndex + 1, previous: sample[0].id,
                              dependencies: [Dependency(author: authors[1].publicKey, sequence: signIndex)],
                              timestamp: signIndex, room: room, body: body).encoded
    }
    return 100
}
report("envelope sign + encode", signRate)

report("envelope decode + verify", decodeRate, ceiling: ("raw verify", rawVerify))

func storeInsertRate(batch: Int) throws -> Double {
    let dir = NSTemporaryDirectory() + "peernode-bench-store-\(getpid())-\(batch)"
    try? FileManager.default.removeItem(atPath: dir)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // Enough envelopes that the timed loop never runs out (signing them is not timed).
    let envelopes = try makeEnvelopes(200_000)
    let directory = try DataDirectory(path: dir)
    let store = try Store(directory: directory)
    var next = 0
    return try rate(seconds: 2.0) {
        guard next + batch <= envelopes.count else { return 0 }
        _ = try store.insert(Array(envelopes[next..<(next + batch)]), receivedAt: 1)
        next += batch
        return batch
    }
}
let storeRate = try storeInsertRate(batch: 1000)
report("store insert (verified envelopes), 1000/txn", storeRate, ceiling: ("raw SQLite", rawInsert))

print("")
print(String(format: "aims: decode+verify ≥ 90%% of raw verify: %@ (%.1f%%); batched insert ≥ 50,000/s: %@ (%.0f/s)",
             decodeRate >= 0.9 * rawVerify ? "met" : "NOT met", decodeRate / rawVerify * 100,
             storeRate >= 50_000 ? "met" : "NOT met", storeRate))

try clockExchangeBenchmark(authors: 1000)
