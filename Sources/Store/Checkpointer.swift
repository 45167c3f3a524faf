import CSQLite
import Dispatch
import Synchronization

/// Moves WAL checkpoints off the writer's path. SQLite's automatic
/// checkpoint runs inside the commit that crosses its threshold, so one
/// commit in a few hundred paid for copying the WAL into the database and
/// two fsyncs: that was the tail of the live-latency figures.
///
/// Here the writer only reports the WAL's size after each commit (a WAL
/// hook, which replaces SQLite's automatic checkpoint); a second connection
/// looks every `interval` seconds and runs a PASSIVE checkpoint (which never
/// blocks the writer) once the WAL holds `backgroundPages`. If the background
/// ever falls far behind, the writer checkpoints by itself at `writerPages`.
final class Checkpointer: @unchecked Sendable {
    /// WAL pages (4 KiB each) that make the background checkpoint: 16 MiB,
    /// a few thousand chat messages, so a quiet node rarely checkpoints.
    static let backgroundPages = 4_096
    /// WAL pages at which the writer checkpoints inside its commit (64 MiB).
    static let writerPages = 16_384

    /// Shared with the C hook: pages in the WAL after the last commit.
    final class Counter: Sendable {
        let pages = Atomic<Int>(0)
    }

    private let connection: Connection
    private let counter = Counter()
    private let queue = DispatchQueue(label: "peernode.checkpoint")
    private var timer: DispatchSourceTimer?
    /// WAL frames copied into the database by this checkpointer so far.
    let framesCheckpointed = Atomic<Int>(0)
    private let threshold: Int

    init(writer: Connection, path: String, interval: Double, threshold: Int = backgroundPages) throws(SQLiteError) {
        self.threshold = threshold
        connection = try Connection(path: path)
        // SQLite opens the file lazily: one read makes the connection see the WAL.
        _ = try connection.integer("SELECT count(*) FROM sqlite_schema")
        // The counter lives as long as this object, which outlives the hook (see `stop`).
        let context = Unmanaged.passUnretained(counter).toOpaque()
        sqlite3_wal_hook(writer.handle, { context, db, _, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<Counter>.fromOpaque(context).takeUnretainedValue().pages.store(Int(pages), ordering: .relaxed)
            if pages >= Int32(Checkpointer.writerPages) { sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
            return SQLITE_OK
        }, context)
        self.writer = writer
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.setEventHandler { [self] in run() }
        self.timer = timer
        timer.resume()
    }

    private let writer: Connection

    private func run() {
        guard counter.pages.load(ordering: .relaxed) >= threshold else { return }
        var log: Int32 = 0
        var done: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
        if rc == SQLITE_OK, done > 0 { framesCheckpointed.add(Int(done), ordering: .relaxed) }
    }

    /// Removes the hook, stops the timer and waits for a checkpoint in progress.
    func stop() {
        sqlite3_wal_hook(writer.handle, nil, nil)
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }

    deinit { timer?.cancel() }
}
