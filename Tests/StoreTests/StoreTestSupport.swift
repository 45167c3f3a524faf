import Crypto
import Foundation
import Gossip
import Store
import TestSupport

/// A store in its own temporary data directory.
final class StoreFixture {
    let dir = TemporaryDirectory()
    var store: Store?
    var directory: DataDirectory?

    init() throws { try reopen() }

    var path: String { dir.path }
    var databasePath: String { dir.file(DataDirectory.databaseFileName) }

    func reopen() throws {
        store = nil
        directory = nil
        let d = try DataDirectory(path: dir.path)
        directory = d
        store = try Store(directory: d)
    }

    func close() {
        store = nil
        directory = nil
    }
}

let testNetwork = NetworkKey.derived(fromName: "store-tests")
let general = RoomID.publicRoom(.general, network: testNetwork)

/// An author who signs a chain of envelopes.
final class ChainAuthor {
    let key: SigningKey
    private(set) var chain: [Envelope] = []

    init() throws { key = try SigningKey.generate() }

    var publicKey: PublicKey { key.publicKey }

    /// The next envelope in this author's chain.
    @discardableResult
    func next(_ text: String = "hi", timestamp: UInt64 = 1_000, room: RoomID = general, dependencies: [Dependency] = [],
              kind: Kind = .text) throws -> Envelope {
        let e = try Envelope.sign(
            by: key, sequence: UInt64(chain.count + 1), previous: chain.last?.id ?? .zero, dependencies: dependencies,
            timestamp: timestamp, room: room, kind: kind, body: Array(text.utf8))
        chain.append(e)
        return e
    }

    /// The next envelope in this author's chain with its body sealed under
    /// `key` (version 3: its kind inside, erasable), signed at its sequence.
    @discardableResult
    func nextSealed(_ text: String, kind: Kind = .text, key bodyKey: SymmetricKey, room: RoomID, erases: [UInt64] = []) throws -> Envelope {
        let sequence = UInt64(chain.count + 1)
        let body = try SealedBody.seal(kind: kind, content: Array(text.utf8), key: bodyKey, author: key.publicKey, room: room)
        let e = try Envelope.sign(by: key, sequence: sequence, previous: chain.last?.id ?? .zero, dependencies: [], timestamp: sequence,
                                  room: room, erases: erases, body: body)
        chain.append(e)
        return e
    }

    /// Another envelope for sequence `sequence`, with other bytes: a fork.
    func fork(of sequence: Int) throws -> Envelope {
        let original = chain[sequence - 1]
        return try Envelope.sign(
            by: key, sequence: original.sequence, previous: original.previous, dependencies: original.dependencies,
            timestamp: original.timestamp + 1, room: original.room, kind: original.clearKind ?? .text, body: Array("forked".utf8))
    }
}

/// Runs the sqlite3 shell on a database and returns what it printed.
func sqliteShell(_ database: String, _ sql: String) async throws -> String {
    try await runToEnd("/usr/bin/sqlite3", [database, sql], combined: true).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}
