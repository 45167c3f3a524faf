import CSQLite
import Dispatch
import Crypto
import Gossip

/// A write transaction whose COMMIT, the part that waits for the disk,
/// runs on the store's committer thread while its owner goes on.
public final class PendingCommit: @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    /// Set on the committer before `finished` is signalled; read after.
    public internal(set) var failure: SQLiteError?
    /// Seconds the COMMIT took on the committer (set with `failure`).
    public internal(set) var took: Double = 0
    let saved: Store.SavedState
    let undone: [PublicKey: Store.AuthorState?]
    /// The connection, used on the committer only for its COMMIT: the owner
    /// waits for it before any use of its own (`Connection.beforeUse`).
    let handle: OpaquePointer

    init(handle: OpaquePointer, saved: Store.SavedState, undone: [PublicKey: Store.AuthorState?]) {
        self.handle = handle
        self.saved = saved
        self.undone = undone
    }
}

extension Store {
    /// Stores verified envelopes as `insert` does, but hands the COMMIT to
    /// the committer thread and returns once the rows are in the open
    /// transaction; `committed` is called on that thread when the COMMIT
    /// has returned. Until `settleCommit()`, nothing the rows stand for may
    /// be told to anyone as stored.
    public func insertCommittingElsewhere(_ envelopes: [Envelope], receivedAt: UInt64,
                                          committed: @escaping @Sendable (PendingCommit) -> Void) throws -> ([InsertOutcome], PendingCommit) {
        settleCommit()
        let (outcomes, saved, undone) = try keepingUndo { try db.begin { try insertAll(envelopes, receivedAt: receivedAt) } }
        let pending = PendingCommit(handle: db.handle, saved: saved, undone: undone)
        pendingCommit = pending
        committer.async {
            let handle = pending.handle
            var message: UnsafeMutablePointer<CChar>?
            let started = DispatchTime.now().uptimeNanoseconds
            let rc = sqlite3_exec(handle, "COMMIT", nil, nil, &message)
            pending.took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            if rc != SQLITE_OK {
                pending.failure = SQLiteError(code: rc, message: message.map { String(cString: $0) } ?? "commit failed", sql: "COMMIT")
                if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            }
            sqlite3_free(message)
            pending.finished.signal()
            committed(pending)
        }
        return (outcomes, pending)
    }

    /// Waits for the COMMIT handed to the committer, if one is pending. If
    /// it failed, its rows are not stored and what the transaction changed
    /// in memory is put back (`settle` tells the failure).
    public func settleCommit() {
        guard let pending = pendingCommit else { return }
        pendingCommit = nil
        pending.finished.wait()
        guard pending.failure != nil else {
            lastWriteFailed = false
            return
        }
        lastWriteFailed = true
        putBack(pending.saved, pending.undone)
    }

    /// `settleCommit` for `pending` (already settled: nothing to wait for); its failure, if it failed.
    public func settle(_ pending: PendingCommit) -> SQLiteError? {
        if pendingCommit === pending { settleCommit() }
        return pending.failure
    }
}
