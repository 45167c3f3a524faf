import Foundation
import Gossip
import TestSupport
import Testing

@Suite("Golden vectors against an implementation written elsewhere")
struct IndependentCheckTests {
    @Test("scripts/check-golden.py (Python hashlib, cryptography and libsodium through ctypes) agrees with docs/PROTOCOL.md and the fixtures")
    func python() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let r = try await runToEnd("/usr/bin/python3", [root.appendingPathComponent("scripts/check-golden.py").path], combined: true)
        let text = r.stdout
        #expect(r.status == 0, "\(text) (needs Debian's python3-cryptography: make test installs it)")
        #expect(text.contains("4 envelopes of version 1, 4 of version 2 and 4 of version 3 and 4 of version 4 ok; 2 typing notices ok"), "\(text)")
    }
}

@Suite("Decoding hostile bytes")
struct EnvelopeMutationTests {
    /// Version 3: the golden text, tombstone and a pruned form (with its proof).
    func erasableSeeds() throws -> [Envelope] {
        let items = try #require(ErasableGoldenFile.loaded).envelopes
        return try items.flatMap { item in
            try [Envelope.decode(hex(item.bytes))] + (item.pruned_bytes.map { [try Envelope.decode(hex($0))] } ?? [])
        }
    }

    @Test("20,000 mutated envelopes: every one is refused with a typed error or decodes to itself, none crashes")
    func mutations() throws {
        let a = try Author()
        let b = try Author()
        let seeds = [
            try a.envelope(), try a.envelope(2, previous: try a.envelope().id, dependencies: [Dependency(author: b.key.publicKey, sequence: 3)]),
            try a.envelope(body: [UInt8](repeating: 9, count: 300)),
        ] + (try erasableSeeds())
        var rng = SeededRandom(seed: 42)
        var refused = 0
        for i in 0..<20_000 {
            var bytes = seeds[i % seeds.count].encoded
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:  // flip bits
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                }
            case 1:  // cut
                bytes = Array(bytes[0..<Int.random(in: 0..<bytes.count, using: &rng)])
            case 2:  // insert junk
                let at = Int.random(in: 0...bytes.count, using: &rng)
                bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            default:  // lengths set to extremes
                let at = Int.random(in: 0..<max(1, bytes.count - 4), using: &rng)
                for k in 0..<4 where at + k < bytes.count { bytes[at + k] = 0xff }
            }
            do {
                let e = try Envelope.decode(bytes)
                #expect(e.encoded == bytes)
            } catch {
                refused += 1
            }
        }
        #expect(refused > 19_000)
    }
}
