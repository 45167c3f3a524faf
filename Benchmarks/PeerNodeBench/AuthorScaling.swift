import Crypto
import Foundation
import Gossip
import Store

/// `peernode-bench push AUTHORS LINKS`: a node that holds AUTHORS authors,
/// with LINKS links that declared all of them, pushes on one new envelope
/// at a time as it verifies them (`Replicator.verifiedAhead`), stores it
/// (`stored`), and each link answers that it stored it: the time replication's decisions take
/// per envelope, without the wire. A link's
/// state holds a clock of every author, so work that copies it grows with
/// the LAN's authors (docs/SCALE.md).
func runPushBenchmark(authors count: Int, links: Int) throws {
    let author = try SigningKey.generate()
    // The others: every link declared them all; the author is new to everyone.
    var entries: [PublicKey: UInt64] = [:]
    for _ in 1..<max(2, count) { entries[try SigningKey.generate().publicKey] = 1 }
    let clock = VectorClock(entries)
    var replicator = Replicator(me: try SigningKey.generate().publicKey, clock: clock, random: SystemRandomNumberGenerator())
    let declared = entries.map { Dependency(author: $0.key, sequence: $0.value) }
    for link in 0..<links {
        _ = replicator.linkUp(link, now: 0)
        _ = replicator.clockReceived(link, entries: declared, full: true, now: 0)
    }
    let room = RoomID.publicRoom(.general, network: .derived(fromName: NetworkKey.defaultName))
    var previous = MessageID.zero
    let pushes = 2_000
    let envelopes = try (0..<pushes).map { i in
        let e = try Envelope.sign(by: author, sequence: UInt64(i + 1), previous: previous, dependencies: [], timestamp: 1_000,
                                  room: room, kind: .text, body: Array("push".utf8))
        previous = e.id
        return CarriedEnvelope(hops: 0, envelope: e)
    }
    var sent = 0
    let started = ProcessInfo.processInfo.systemUptime
    for c in envelopes {
        // As the node does: pushed on before it is stored, then stored, then each link answers that it stored it.
        let answer = [Dependency(author: c.envelope.author, sequence: c.envelope.sequence)]
        let actions = replicator.verifiedAhead([c])
            + replicator.stored(from: nil, checked: [c], inserted: [c], invalid: 0, newClock: answer, now: 1)
        sent += actions.count { if case .send = $0 { true } else { false } }
        for link in 0..<links { _ = replicator.storedReceived(link, entries: answer, now: 1) }
    }
    let took = ProcessInfo.processInfo.systemUptime - started
    print(String(format: "push: %d authors, %d links: %.1f µs of decisions per envelope pushed and its stored answers (%d sends)",
                 entries.count + 1, links, took / Double(pushes) * 1e6, sent))
}

/// `peernode-bench post-deps DIR AUTHORS`: a store holding one envelope of
/// each of AUTHORS authors, and one author posting: the time to work out a
/// post's dependencies (`Store.dependenciesForNextPost`), which is on the
/// author's path before every post (docs/SCALE.md).
func runPostDependenciesBenchmark(directory path: String, authors count: Int) throws {
    let lan = NetworkKey.derived(fromName: NetworkKey.defaultName)
    let general = RoomID.publicRoom(.general, network: lan)
    let store = try Store(directory: try DataDirectory(path: path))
    try store.registerRoom(general, name: RoomName.general.value)
    let me = try SigningKey.generate()
    var batch: [Envelope] = []
    for i in 0..<count {
        let writer = try SigningKey.generate()
        batch.append(try Envelope.sign(by: writer, sequence: 1, previous: .zero, dependencies: [], timestamp: 1_000 + UInt64(i),
                                       room: general, kind: .text, body: Array("hello".utf8)))
        if batch.count == 1_000 {
            _ = try store.insert(batch, receivedAt: 1)
            batch = []
        }
    }
    _ = try store.insert(batch, receivedAt: 1)
    var previous = MessageID.zero
    let posts = 200
    var took = 0.0
    var stored: [Double] = []
    for sequence in 1...posts {
        let started = ProcessInfo.processInfo.systemUptime
        let dependencies = try store.dependenciesForNextPost(by: me.publicKey)
        took += ProcessInfo.processInfo.systemUptime - started
        let e = try Envelope.sign(by: me, sequence: UInt64(sequence), previous: previous, dependencies: dependencies, timestamp: 5_000,
                                  room: general, kind: .text, body: Array("post".utf8))
        previous = e.id
        let storing = ProcessInfo.processInfo.systemUptime
        _ = try store.insertOwn(e, at: 5_000)
        stored.append(ProcessInfo.processInfo.systemUptime - storing)
    }
    stored.sort()
    print(String(format: "post dependencies: %d authors: %.1f µs per post (the durable insert after it: p50 %.0f µs, p99 %.0f µs)",
                 count, took / Double(posts) * 1e6, stored[posts / 2] * 1e6, stored[posts * 99 / 100] * 1e6))
}

/// `peernode-bench peer-clocks DIR AUTHORS`: the time to save one peer's
/// clocks (both sides, AUTHORS authors) when ten entries changed since the
/// last save, as the node does for each changed peer every 5 s
/// (`NetworkNode.peerClockSaveInterval`), on the loop.
func runPeerClockSaveBenchmark(directory path: String, authors count: Int) throws {
    let store = try Store(directory: try DataDirectory(path: path))
    let peer = try SigningKey.generate().publicKey
    var entries: [PublicKey: UInt64] = [:]
    for _ in 0..<count { entries[try SigningKey.generate().publicKey] = 5 }
    var clock = VectorClock(entries)
    try store.savePeerClocks(PeerClocks(sent: clock, declared: clock), of: peer, at: 1)
    let keys = Array(entries.keys)
    var took: [Double] = []
    for round in 0..<20 {
        for key in keys[(round * 10 % max(1, keys.count - 10))...].prefix(10) { clock[key] += 1 }
        let started = ProcessInfo.processInfo.systemUptime
        try store.savePeerClocks(PeerClocks(sent: clock, declared: clock), of: peer, at: UInt64(2 + round))
        took.append(ProcessInfo.processInfo.systemUptime - started)
    }
    took.sort()
    print(String(format: "peer clocks: %d authors, 10 changed: %.2f ms per peer saved (median of 20)", count, took[10] * 1e3))
}
