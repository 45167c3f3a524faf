import Crypto
import Foundation
import Gossip

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
