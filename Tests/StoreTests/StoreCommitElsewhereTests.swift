import CSQLite
import Dispatch
import Foundation
import Gossip
@testable import Store
import TestSupport
import Testing

/// A relay's transactions whose COMMIT runs on the store's committer thread
/// (`Store.insertCommittingElsewhere`): the loop goes on while the disk
/// takes the commit, and any use of the store waits for it first.
@Suite("A COMMIT on the committer thread")
struct StoreCommitElsewhereTests {
    /// Called on the committer once its COMMIT has returned.
    final class Calls: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        let onCaller = Locked(false)
    }

    @Test("the outcomes at once, the rows in memory and on disk once committed; `committed` runs off the caller's thread and says which; a second insert after it")
    func commits() async throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let batch = [try alice.next("one"), try alice.next("two")]
        let calls = Calls()
        let caller = pthread_self()
        let handedOver = Locked<PendingCommit?>(nil)
        let (outcomes, pending) = try store.insertCommittingElsewhere(batch, receivedAt: 1) { done in
            calls.onCaller.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 }
            handedOver.withLock { $0 = done }
            calls.done.signal()
        }
        #expect(outcomes == [.inserted, .inserted])
        // In memory at once: a relay forwards on what the open transaction holds.
        #expect(store.contiguous(of: alice.publicKey) == 2)
        calls.done.wait()
        #expect(!calls.onCaller.value && handedOver.value === pending)
        #expect(store.settle(pending) == nil && !store.lastWriteFailed)
        #expect(try await sqliteShell(fixture.databasePath, "SELECT count(*) FROM envelopes") == "2")
        #expect(try store.insert([try alice.next("three")], receivedAt: 2) == [.inserted])
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 10).count == 3)
    }

    @Test("while the COMMIT is held on the committer, the store's own transactions (an insert, a peer's clocks) and reads wait for it instead of running inside it")
    func usesWait() async throws {
        let fixture = try StoreFixture()
        let store = try #require(fixture.store)
        let alice = try ChainAuthor()
        let bob = try ChainAuthor()
        let first = try alice.next("first")
        // The committer is held until the caller has gone on to use the store.
        store.committer.suspend()
        let (_, pending) = try store.insertCommittingElsewhere([first], receivedAt: 1) { _ in }
        let released = Locked(false)
        let committer = store.committer
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
            released.withLock { $0 = true }
            committer.resume()
        }
        // A transaction of its own (BEGIN inside the open one would fail), then a plain read.
        try store.savePeerClocks(PeerClocks(sent: VectorClock([alice.publicKey: 1]), declared: nil), of: bob.publicKey, at: 1)
        #expect(released.value, "the clocks were written before the COMMIT ran")
        #expect(store.pendingCommit == nil, "the COMMIT was not waited for when the store was used again")
        #expect(try store.peerClocks(of: bob.publicKey)?.sent == VectorClock([alice.publicKey: 1]))
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 10) == [first])
        #expect(store.settle(pending) == nil)
        #expect(try await sqliteShell(fixture.databasePath, "SELECT count(*) FROM peer_clocks") == "1")
    }

    @Test("a COMMIT that fails (a full disk, root: tmpfs): settle says so, the rows are not there and the author's state is put back; the same envelopes go in once there is room")
    func failedCommit() async throws {
        try #require(geteuid() == 0, "needs root to mount a small tmpfs (CI runs as root)")
        let dir = TemporaryDirectory()
        let mount = dir.file("small")
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let mounted = try await runToEnd("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mount], combined: true)
        try #require(mounted.status == 0, "mount: \(mounted.stdout)")
        defer { _ = try? runToEndBlocking("/usr/bin/umount", ["-l", mount]) }
        let data = try DataDirectory(path: mount + "/data")
        let store = try Store(directory: data)
        let alice = try ChainAuthor()
        _ = try store.insert([try alice.next("before")], receivedAt: 1)
        // Filled to the last byte: the transaction's pages fit in the cache, its COMMIT cannot write the log.
        let fd = open(mount + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        for size in [65_536, 4_096, 1] {
            let zeros = [UInt8](repeating: 0, count: size)
            while write(fd, zeros, size) == size {}
        }
        let big = try (0..<40).map { _ in try alice.next(String(repeating: "x", count: 4_000)) }
        let outcomes: [InsertOutcome], pending: PendingCommit
        do {
            (outcomes, pending) = try store.insertCommittingElsewhere(big, receivedAt: 2) { _ in }
        } catch {
            Issue.record("the inserts failed before their COMMIT, so this checks nothing of it: \(error)")
            return
        }
        #expect(outcomes.allSatisfy { $0 == .inserted })
        let failure = try #require(store.settle(pending), "the COMMIT did not fail on a full disk")
        #expect(failure.code & 0xFF == SQLITE_FULL, "\(failure)")
        #expect(store.lastWriteFailed)
        #expect(store.contiguous(of: alice.publicKey) == 1, "the author's state was not put back")
        #expect(try store.envelopes(from: alice.publicKey, startingAt: 1, limit: 100).count == 1)
        // A second settle of the same one says the same and puts nothing back twice.
        #expect(store.settle(pending)?.code == failure.code)
        close(fd)
        try FileManager.default.removeItem(atPath: mount + "/filler")
        // "Once there is room": the filler's space is back only when nothing holds it (a child another
        // test spawns holds every descriptor between its fork and its exec); wait for the room itself.
        let roomBack = await eventually(10) {
            var fs = statvfs()
            return statvfs(mount, &fs) == 0 && UInt64(fs.f_bavail) * UInt64(fs.f_frsize) >= 4 << 20
        }
        try #require(roomBack, "the filler's space did not come back to the tmpfs")
        do {
            #expect(try store.insert(big, receivedAt: 3).allSatisfy { $0 == .inserted })
        } catch {
            Issue.record("with room again, the same envelopes were refused: \(error)")
        }
        #expect(store.contiguous(of: alice.publicKey) == 41 && !store.lastWriteFailed)
    }
}
