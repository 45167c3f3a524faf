import Foundation
import Gossip
@testable import Store
import TestSupport
import Testing

/// A database written by the build before issue 17 (commit c9a3405: schema
/// 10, envelopes of version 2), made by two nodes of that build: alice
/// posted a line, an action, a line in #old-room and a direct message to
/// bob; bob posted a line. Tests/PeerNodeTests/Fixtures/schema10-alice holds
/// alice's data directory as that build left it.
@Suite("A database of an earlier build")
struct OldDatabaseTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/schema10-alice").path
    static let alice = "9b14b8e4ff0e8e9c00776d80867b09fb181d92776a4ae1e397512dbdf679fcef"
    static let bob = "9d4edb16661b1b55234551e9f126f4a6710a24488a725f1247849d1d2111d5c8"

    @Test("it opens and migrates to the current schema; a new node syncs its history from it (version-2 envelopes, bob's too) and its new posts (version 4); an old message can be edited but not erased; every envelope still verifies")
    func opensMigratesSyncs() async throws {
        let dir = TemporaryDirectory()
        for name in ["identity.key", "peernode.db"] {
            try FileManager.default.copyItem(atPath: Self.fixture + "/" + name, toPath: dir.path + "/" + name)
            // A key file others can read is refused; git keeps no modes.
            chmod(dir.path + "/" + name, 0o600)
        }
        chmod(dir.path, 0o700)
        let before = try await runToEnd("/usr/bin/sqlite3", [dir.path + "/peernode.db", "PRAGMA user_version"]).stdout
        #expect(before.trimmingCharacters(in: .whitespacesAndNewlines) == "10", "the fixture is a schema-10 database")

        let a = try NodeProcess(dir: dir.path, ["--nick", "alice"])
        #expect(await started(a))
        #expect(a.id == Self.alice)
        let other = TemporaryDirectory()
        let c = try NodeProcess(dir: other.path, ["--nick", "carol", "--peer", a.url])
        #expect(await started(c))
        for text in ["an old line from alice", "bob was here before the upgrade", "waves from an older build"] {
            #expect(await c.wait { $0["type"] == "message" && $0["text"] == text } != nil, "\(text): \(c.events.value.suffix(4))")
        }
        #expect(c.events.value.contains { $0["text"] == "bob was here before the upgrade" && $0["author"] == Self.bob })
        a.send("a new line after the upgrade")
        #expect(await c.wait { $0["type"] == "message" && $0["text"] == "a new line after the upgrade" } != nil)
        // Message 2 of #general is the old line (a version-2 envelope): its text cannot go, but it can change.
        a.send("/delete 2")
        #expect(await a.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("version 2") } != nil, "\(a.events.value.suffix(3))")
        a.send("/edit 2 an old line, edited after the upgrade")
        #expect(await c.wait { $0["type"] == "edit" && $0["text"] == "an old line, edited after the upgrade" } != nil, "\(c.events.value.suffix(3))")
        a.send("/delete")
        #expect(await c.wait { $0["type"] == "delete" } != nil, "a new message of ours erases: \(c.events.value.suffix(3))")
        _ = await a.quit()
        _ = await c.quit()

        let store = try Store(directory: try DataDirectory(path: dir.path))
        #expect(try store.db.integer("PRAGMA user_version") == Int64(Store.schemaVersion))
        #expect(try store.db.text("PRAGMA integrity_check") == "ok")
        // Schema 17 numbered the old messages by their old places (message 2 above) and nothing else
        // (an erased message keeps its number, under the sealed kind).
        #expect(try store.db.integer("SELECT count(*) FROM envelopes WHERE number IS NOT NULL AND kind NOT IN (\(Store.numberedKindList), \(Store.sealedKind))") == 0)
        #expect(try store.db.integer("SELECT count(*) FROM envelopes WHERE number IS NULL AND delivery IS NOT NULL AND kind IN (\(Store.numberedKindList))") == 0)
        let s = try store.db.statement("SELECT bytes FROM envelopes")
        var versions: [UInt8: Int] = [:]
        while try s.step() { versions[try Envelope.decode(s.blob(0)).version, default: 0] += 1 }  // each signature checked
        #expect(versions[2] == 7 && (versions[4] ?? 0) >= 3, "\(versions)")
        withExtendedLifetime(other) {}
    }
}
