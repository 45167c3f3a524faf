import Crypto
import Foundation
import Gossip
import Reactor

// The receiver-only catch-up benchmark's lean sender (run by
// scripts/bench-catchup.py):
//
//   peernode-bench catch-up-send HOST:PORT COUNT
//       signs COUNT envelopes of #general by 20 authors in turn
//       (`signCatchUpHistory`, as `make-store` writes them) before it links, then
//       links to the node at HOST:PORT, sends its full clock, and answers
//       each request the node makes from what it signed, in batches of 64.
//       It does no storage, no verification and no replication logic, so
//       nearly all of the machine is left to the receiving node: what the
//       figure measures is the receiver's pipeline (Noise, decode, verify on
//       both cores, store, JSON out), which `bench-gossip.py`'s catch-up
//       between two full nodes cannot show on two cores.
//
// Prints "linked" on stderr once the link is up and the clock is sent, then
// keeps answering until it is killed (at most `catchUpSenderLifetime`).

/// Authors the lean sender signs for, in turn (as `make-store` does).
let catchUpSenderAuthors = 20
/// Envelopes per answer message (well under a link message's 64 KiB).
let catchUpSenderBatch = 64
/// Seconds the lean sender stays up if no one kills it.
let catchUpSenderLifetime = 900.0

/// `count` envelopes of #general on the default network, signed by
/// `writers` in turn (bodies "catch-up N", which the scripts count), each
/// handed to `each` with its writer's index as it is signed: what
/// `make-store` writes and the lean sender serves.
func signCatchUpHistory(count: Int, writers: [SigningKey], _ each: (_ writer: Int, Envelope) throws -> Void) throws {
    let lan = NetworkKey.derived(fromName: NetworkKey.defaultName)
    let general = RoomID.publicRoom(.general, network: lan)
    let key = lan.publicRoomKey(roomName: RoomName.general.value)
    var heads = [MessageID](repeating: .zero, count: writers.count)
    for i in 0..<count {
        let w = i % writers.count
        let sealed = try SealedBody.seal(kind: .text, content: Array("catch-up \(i)".utf8), key: key, author: writers[w].publicKey, room: general)
        let e = try Envelope.sign(by: writers[w], sequence: UInt64(i / writers.count + 1), previous: heads[w], dependencies: [],
                                  timestamp: 1_764_000_000_000 + UInt64(i), room: general, body: sealed)
        heads[w] = e.id
        try each(w, e)
    }
}

func runCatchUpSender(target: String, count: Int) throws {
    guard let (host, port) = splitHostPort(target) else { throw NodeBenchError("HOST:PORT expected") }
    let writers = try (0..<catchUpSenderAuthors).map { _ in try SigningKey.generate() }
    var chains = [[CarriedEnvelope]](repeating: [], count: writers.count)
    try signCatchUpHistory(count: count, writers: writers) { w, e in chains[w].append(CarriedEnvelope(hops: 0, envelope: e)) }
    var byAuthor: [PublicKey: [CarriedEnvelope]] = [:]
    for (w, writer) in writers.enumerated() { byAuthor[writer.publicKey] = chains[w] }
    let answers = byAuthor

    let loop = try EventLoop()
    loop.start()
    let link = try LeanLink(identity: try SigningKey.generate())
    let up = DispatchSemaphore(value: 0)
    link.onEstablished = { up.signal() }
    link.onMessage = { [link] message in
        guard case let .request(ranges) = message else { return }
        for range in ranges {
            guard let chain = answers[range.author], range.from >= 1, range.from <= UInt64(chain.count) else { continue }
            let start = Int(range.from - 1)
            let end = start + Int(min(range.count, UInt64(chain.count - start)))
            for i in stride(from: start, to: end, by: catchUpSenderBatch) {
                link.send(.envelopes(Array(chain[i..<min(end, i + catchUpSenderBatch)])))
            }
        }
    }
    loop.execute { try? link.connect(host: host, port: port, loop: loop) }
    guard up.wait(timeout: .now() + 10) == .success else { throw NodeBenchError("no link to the node") }
    let clock = writers.enumerated().map { Dependency(author: $1.publicKey, sequence: UInt64(chains[$0].count)) }
    loop.execute { link.send(.clock(entries: clock, full: true)) }
    FileHandle.standardError.write(Data("linked\n".utf8))
    Thread.sleep(forTimeInterval: catchUpSenderLifetime)
}
