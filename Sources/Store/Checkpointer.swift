import CSQLite
import Dispatch
import Synchronization

/// Moves WAL checkpoints off the writer's path. SQLite's automatic
/// checkpoint runs inside the commit that crosses its threshold, so one
/// commit in a few hundred paid for copying the WAL into the database and
/// two fsyncs: that was the tail of the live-latency figures.
///
/// Here the writer only reports the WAL's size after each commit (a WAL
/// hook, which replaces SQLite's automatic checkpoint); the commit that
/// finds the WAL at `backgroundPages` hands a PASSIVE checkpoint (which
/// never blocks the writer) to a second connection on a queue of its own,
/// at most one at a time and one every `spacing` seconds. Nothing runs on a
/// clock: a quiet node's threads sleep. If the background ever falls far
/// behind, the writer checkpoints by itself at `writerPages`.
final class Checkpointer: @unchecked Sendable {
    /// WAL pages (4 KiB each) that make the background checkpoint: 16 MiB,
    /// a few thousand chat messages, so a quiet node rarely checkpoints.
    static let backgroundPages = 4_096
    /// WAL pages at which the writer checkpoints inside its commit (64 MiB).
    static let writerPages = 16_384

    /// What the writer's WAL hook reaches, inside the writer's commit: the
    /// WAL's size, and the background connection a checkpoint is handed to.
    final class Background: @unchecked Sendable {
        /// Pages in the WAL after the last commit.
        let pages = Atomic<Int>(0)
        /// A checkpoint was handed over and has not finished.
        let pending = Atomic<Bool>(false)
        /// No checkpoint is handed over before this (`DispatchTime` nanoseconds).
        let notBefore = Atomic<UInt64>(0)
        /// WAL frames copied into the database so far.
        let framesCheckpointed = Atomic<Int>(0)
        let threshold: Int
        let spacing: UInt64
        let connection: Connection
        let queue = DispatchQueue(label: "peernode.checkpoint")
        /// Set by `stop`, on `queue`.
        var stopped = false

        init(connection: Connection, threshold: Int, spacing: Double) {
            self.connection = connection
            self.threshold = threshold
            self.spacing = UInt64(max(0, spacing) * 1e9)
        }

        /// In the writer's commit: the WAL holds `count` pages.
        func committed(_ count: Int32, writer: OpaquePointer?) {
            pages.store(Int(count), ordering: .relaxed)
            if count >= Int32(Checkpointer.writerPages) { sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
            guard count >= Int32(threshold) else { return }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now >= notBefore.load(ordering: .relaxed), !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
            notBefore.store(now + spacing, ordering: .relaxed)
            queue.async { [self] in run() }
        }

        private func run() {
            defer { pending.store(false, ordering: .releasing) }
            guard !stopped else { return }
            var log: Int32 = 0
            var done: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
            if rc == SQLITE_OK, done > 0 { framesCheckpointed.add(Int(done), ordering: .relaxed) }
        }
    }

    private let background: Background
    private let writer: Connection

    /// WAL frames copied into the database by the background so far.
    var framesCheckpointed: Int { background.framesCheckpointed.load(ordering: .relaxed) }

    init(writer: Connection, path: String, spacing: Double, threshold: Int = backgroundPages) throws(SQLiteError) {
        let connection = try Connection(path: path)
        // SQLite opens the file lazily: one read makes the connection see the WAL.
        _ = try connection.integer("SELECT count(*) FROM sqlite_schema")
        background = Background(connection: connection, threshold: threshold, spacing: spacing)
        // The background lives as long as this object, which outlives the hook (see `stop`).
        let context = Unmanaged.passUnretained(background).toOpaque()
        sqlite3_wal_hook(writer.handle, { context, db, _, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<Background>.fromOpaque(context).takeUnretainedValue().committed(pages, writer: db)
            return SQLITE_OK
        }, context)
        self.writer = writer
    }

    /// Removes the hook and waits for a checkpoint in progress; none starts after.
    func stop() {
        sqlite3_wal_hook(writer.handle, nil, nil)
        background.queue.sync { background.stopped = true }
    }
}
