import CSQLite
import Crypto
import Dispatch
import Glibc
import Gossip

/// The node's SQLite database (WAL): the envelope log, authors and their
/// clock entries, rooms, forks. One owner uses it (not thread-safe); a
/// relay's COMMITs alone run on `committer`, and every use waits for them
/// (`insertCommittingElsewhere`).
///
/// The vector clock is kept in the `authors` rows as envelopes arrive, never
/// recomputed by scanning the log. Envelopes ahead of a gap are stored and
/// become contiguous when the gap fills. Delivery is causal: an envelope is
/// delivered (gets a causal time and a place in room history) once the
/// author's previous envelope and every dependency are delivered.
public final class Store {
    /// The schema version this build writes (`PRAGMA user_version`).
    public static var schemaVersion: Int { Schema.currentVersion }

    struct AuthorState {
        let rowid: Int64
        var contiguous: UInt64
        var delivered: UInt64
        var highest: UInt64
        /// Causal time of envelope `delivered` (0 when none).
        var lastCausalTime: Int64
        /// Id of envelope `contiguous`, when known without a query.
        var contiguousID: MessageID?
    }

    public let path: String
    let directory: DataDirectory
    let db: Connection
    /// Every author's state, changed only through `setAuthor` (which keeps
    /// `undeliveredAuthors` and a transaction's undo log with it).
    private(set) var authors: [PublicKey: AuthorState] = [:]
    /// Authors holding envelopes not delivered yet (`delivered < contiguous`):
    /// what `deliverPending` looks at, instead of every author there is.
    var undeliveredAuthors: Set<PublicKey> = []
    /// What our own posts have named so far, per author (`sent_clock`), in
    /// memory: a post's dependencies were a scan of that table and of every
    /// author's state (9 ms a post at 10,000 authors).
    var sentClock: [PublicKey: UInt64] = [:]
    /// Authors whose delivered envelopes may have gone past `sentClock`: a
    /// superset (whatever a failed transaction put back stays in it), checked
    /// when a post reads it, and trimmed after each post.
    var unsentAuthors: Set<PublicKey> = []
    /// In a write transaction: each touched author's state before it (nil:
    /// not there), put back if the commit fails. An undo log, not a copy of
    /// `authors`: a copy made the first change of every transaction cost a
    /// copy of every author's state (10,000 authors: 10,000 entries, for one
    /// envelope).
    var undo: [PublicKey: AuthorState?]?
    var roomRows: [RoomID: Int64] = [:]
    var lastDelivery: Int64 = 0
    /// The highest message number given in each room (by row), read from
    /// the rows the first time a room numbers a message (`StoreNumbers.swift`).
    var lastNumbers: [Int64: Int] = [:]
    /// The newest deliveries as written, for `delivered(after:limit:)`.
    var recentDeliveries = RecentDeliveries()
    /// Whether deliveries are held in memory for `delivered(after:limit:)`
    /// (`RecentDeliveries`). A relay shows nothing and never asks: it keeps
    /// none (an envelope's copy and its accounting per insert, on its loop).
    /// Asked all the same, the rows answer.
    public var holdsRecentDeliveries = true {
        didSet { if !holdsRecentDeliveries { recentDeliveries.removeAll() } }
    }
    /// The clocks last written for each of a few peers (`savePeerClocks`), so
    /// that a write compares with these instead of reading the rows back.
    var writtenPeerClocks: [PublicKey: PeerClocks] = [:]
    /// The last write transaction failed (a full disk, say): until one succeeds, nothing is shown before it is stored.
    public internal(set) var lastWriteFailed = false
    /// An own envelope was committed without its fsync (`insertOwn(durable: false)`) and `syncOwn` has not run since.
    public private(set) var ownUnsynced = false

    /// How far ahead of this node's clock an author's timestamp may be when
    /// it orders a room: later is read as now + this. A timestamp near 2^63
    /// would otherwise place the message after everything posted since,
    /// for ever (docs/PROTOCOL.md §6).
    public static let maximumFutureSkew: UInt64 = 60_000
    /// Milliseconds since the epoch (tests set it).
    public var wallClock: @Sendable () -> UInt64 = {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return UInt64(max(0, t.tv_sec)) * 1000 + UInt64(max(0, t.tv_nsec)) / 1_000_000
    }
    var dirtyAuthors: Set<PublicKey> = []

    /// The kind a row holds for an envelope whose kind this node cannot read
    /// (version 2 seals it with the body): not one of `Kind`'s values.
    public static let sealedKind: Int64 = 0
    /// Opens a version-2 envelope's kind where this node holds the key
    /// (the node sets it; a relay holds few keys). Called as envelopes are
    /// inserted and by `fileSealed(in:)`; nil: `sealedKind`.
    public var kindOf: ((Envelope) -> Kind?)?
    /// Whether an envelope's erase list is honoured (the node sets it): not
    /// a revoked device's past its limit, whose key may be a thief's. Nil
    /// (a relay's, which knows no revocations): every erase list is.
    public var honoursErasures: ((Envelope) -> Bool)?
    /// The text the node indexed for an envelope (`index`), so that an erased
    /// one can be taken out of the contentless index (which needs it). Nil
    /// on a relay, which indexes nothing.
    public var indexedText: ((Envelope) -> String?)?
    /// Authors with erasures recorded (`StoreErasure.swift`): only their
    /// arrivals are looked up in `erasures`.
    var erasingAuthors: Set<PublicKey> = []
    /// Bodies erased since the last `purgeErased`.
    var erasedSincePurge = 0

    private var checkpointer: Checkpointer?
    /// A transaction whose COMMIT runs on `committer` (`insertCommittingElsewhere`).
    var pendingCommit: PendingCommit?
    let committer = DispatchQueue(label: "peernode.commit")

    /// Runs WAL checkpoints on a background connection instead of inside
    /// commits (see `Checkpointer`): one handed over by the commit that
    /// finds the WAL at `pages`, at most one every `spacing` seconds.
    public func checkpointInBackground(spacing: Double = 1.0, pages: Int? = nil) throws(StoreError) {
        guard checkpointer == nil else { return }
        do {
            checkpointer = try Checkpointer(writer: db, path: path, spacing: spacing, threshold: pages ?? Checkpointer.backgroundPages)
        } catch {
            throw .sqlite(error)
        }
    }

    deinit {
        settleCommit()
        checkpointer?.stop()
    }

    /// At a clean exit: stops the background checkpointer and folds the
    /// whole WAL into the database file, so `peernode.db` alone holds
    /// everything (a copy of it is a backup). Best effort: what is left in
    /// the WAL is replayed at the next open anyway.
    public func checkpointForExit() {
        settleCommit()
        checkpointer?.stop()
        checkpointer = nil
        db.resetStatements()
        // Best effort as the rest: an erasure still owed is purged at the next open.
        if erasedSincePurge > 0 { _ = try? purgeErased() }
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// WAL frames the background checkpointer has copied into the database.
    public var framesCheckpointedInBackground: Int {
        checkpointer?.framesCheckpointed ?? 0
    }

    /// Opens (or creates) `peernode.db` in a locked data directory.
    public init(directory: DataDirectory) throws(StoreError) {
        self.directory = directory
        path = directory.file(DataDirectory.databaseFileName)
        do {
            db = try Connection(path: path)
        } catch {
            throw .sqlite(error)
        }
        try Schema.prepare(db, path: path)
        // Every use of the connection first waits for a COMMIT handed to the committer.
        db.beforeUse = { [unowned self] in settleCommit() }
        do {
            try loadState()
        } catch let e as StoreError {
            throw e
        } catch {
            throw .corruptRow("\(error)")
        }
    }

    private func loadState() throws {
        let rows = try db.statement(
            """
            SELECT a.rowid, a.key, a.contiguous, a.delivered,
                   coalesce((SELECT max(sequence) FROM envelopes WHERE author = a.rowid), 0),
                   coalesce((SELECT causal_time FROM envelopes WHERE author = a.rowid AND sequence = a.delivered), 0)
            FROM authors a
            """)
        while try rows.step() {
            let key = try PublicKey(bytes: rows.blob(1))
            setAuthor(key, AuthorState(
                rowid: rows.int64(0), contiguous: UInt64(rows.int64(2)), delivered: UInt64(rows.int64(3)),
                highest: UInt64(rows.int64(4)), lastCausalTime: rows.int64(5), contiguousID: nil))
        }
        let rooms = try db.statement("SELECT rowid, room_id FROM rooms")
        while try rooms.step() {
            roomRows[try RoomID(bytes: rooms.blob(1))] = rooms.int64(0)
        }
        lastDelivery = try db.integer("SELECT coalesce(max(delivery), 0) FROM envelopes WHERE delivery IS NOT NULL")
        let sent = try db.statement("SELECT a.key, c.sequence FROM sent_clock c JOIN authors a ON a.rowid = c.author")
        while try sent.step() { sentClock[try PublicKey(bytes: sent.blob(0))] = UInt64(clamping: sent.int64(1)) }
        trimUnsentAuthors()
        try loadErasingAuthors()
        // Erasures a process did not live to purge (killed between a delete
        // and its purge) leave the files now, before anything else runs.
        if erasedSincePurge > 0 { _ = try purgeErased() }
    }

    // MARK: inserting

    /// Makes every commit so far durable (the WAL flushed to the disk), when
    /// an own envelope was committed without it. A failure leaves it to
    /// the next call: the rows are committed, only not yet on the disk.
    public func syncOwn() throws(SQLiteError) {
        guard ownUnsynced else { return }
        try sync()
    }

    /// Makes every commit so far durable: the WAL flushed to the disk.
    public func sync() throws(SQLiteError) {
        settleCommit()
        let rc = peernode_sqlite3_sync_wal(db.handle)
        guard rc == SQLITE_OK else { throw db.error(rc, "fsync of the write-ahead log") }
        ownUnsynced = false
    }

    /// Stores verified envelopes received from the network, in one transaction
    /// (`synchronous=NORMAL`: a power cut may lose the last batches, which
    /// gossip fetches again).
    public func insert(_ envelopes: [Envelope], receivedAt: UInt64) throws -> [InsertOutcome] {
        try writeTransaction { try insertAll(envelopes, receivedAt: receivedAt) }
    }

    /// Inserts and delivers what is ready, in the caller's transaction.
    /// `proven`: envelopes a revocation's named chain proves (`insertProven`),
    /// stored whatever is held below them.
    func insertAll(_ envelopes: [Envelope], receivedAt: UInt64, proven: Bool = false) throws -> [InsertOutcome] {
        var outcomes: [InsertOutcome] = []
        outcomes.reserveCapacity(envelopes.count)
        var pending: [Envelope] = []
        for e in envelopes {
            let outcome = try insertOne(e, receivedAt: receivedAt, proven: proven)
            outcomes.append(outcome)
            if outcome.isNew, let st = authors[e.author], e.sequence > st.delivered { pending.append(e) }
        }
        try deliverPending(batch: pending)
        try flushAuthors()
        return outcomes
    }

    /// Stores this node's own new envelope. `durable`: the commit is
    /// fsynced (`synchronous=FULL`) before this returns, so nothing is sent
    /// that a crash could take back. Otherwise the commit is in the kernel's
    /// cache (safe from the process dying, not from the machine stopping)
    /// and `syncOwn()` makes it durable: the node sends first and syncs
    /// after (docs/DECISIONS.md, "Own posts are sent before their fsync").
    /// Also records the dependencies it named.
    public func insertOwn(_ envelope: Envelope, at time: UInt64, durable: Bool = true) throws -> InsertOutcome {
        if durable { try db.execute("PRAGMA synchronous=FULL") }
        defer { if durable { try? db.execute("PRAGMA synchronous=NORMAL") } }
        let outcome = try writeTransaction {
            let outcome = try insertOne(envelope, receivedAt: time)
            if outcome == .inserted {
                for d in envelope.dependencies {
                    let row = try authorRow(d.author)
                    try db.statement(
                        """
                        INSERT INTO sent_clock(author, sequence) VALUES (?1, ?2)
                        ON CONFLICT(author) DO UPDATE SET sequence = max(sequence, ?2)
                        """
                    ).bind(1, row.rowid).bind(2, Int64(clamping: d.sequence)).run()
                }
                try deliverPending(batch: [envelope])
            }
            try flushAuthors()
            return outcome
        }
        // A durable commit synced the WAL: every earlier frame with it.
        ownUnsynced = !durable
        // Committed: what it named is sent.
        if outcome == .inserted {
            for d in envelope.dependencies { sentClock[d.author] = max(sentClock[d.author] ?? 0, d.sequence) }
            trimUnsentAuthors()
        }
        return outcome
    }

    /// Keeps in `unsentAuthors` only those whose delivered envelopes are past what we named.
    private func trimUnsentAuthors() {
        unsentAuthors = unsentAuthors.filter { (authors[$0]?.delivered ?? 0) > sentClock[$0] ?? 0 }
    }

    private func insertOne(_ arrived: Envelope, receivedAt: UInt64, proven: Bool = false) throws -> InsertOutcome {
        var st = try authorRow(arrived.author)
        let sequence = Int64(clamping: arrived.sequence)

        // Same author and sequence already held: a duplicate or a fork. The
        // same envelope pruned is a duplicate that erases the held body.
        if arrived.sequence <= st.highest, let existing = try storedRow(st.rowid, arrived.sequence) {
            if existing.bytes == arrived.encoded { return .duplicate }
            let held = try Envelope.decode(existing.bytes, verification: .trustedStorage)
            if held.id == arrived.id {
                if arrived.isPruned, !held.isPruned { try replace(row: existing.rowid, held, with: arrived) }
                return .duplicate
            }
            try recordFork(arrived, author: st.rowid, kept: held.id, reason: "same author and sequence, other bytes", at: receivedAt)
            return .fork(kept: held.id)
        }
        // An envelope its author erased before it came is stored without its body.
        let e = try erasedForm(of: arrived, author: st.rowid)
        // Must link to the envelope before it (unless a revocation's named chain proves it: `insertProven`),
        // and the one after it must link to this.
        if e.sequence > 1, !proven, let before = try id(of: st, e.sequence - 1), before != e.previous {
            try recordFork(e, author: st.rowid, kept: before, reason: "previous hash does not match sequence \(e.sequence - 1)", at: receivedAt)
            return .brokenChain(kept: before)
        }
        if e.sequence < st.highest, let after = try storedRow(st.rowid, e.sequence + 1) {
            let next = try Envelope.decode(after.bytes, verification: .trustedStorage)
            if next.previous != e.id {
                try recordFork(e, author: st.rowid, kept: next.id, reason: "sequence \(e.sequence + 1) links to another envelope", at: receivedAt)
                return .brokenChain(kept: next.id)
            }
        }

        // The common case, in order with its dependencies present: delivered
        // as it is inserted, with no second write.
        var causal: Int64?
        if e.sequence == st.delivered + 1 && st.delivered == st.contiguous {
            causal = try causalTime(of: e, after: st)
        }
        let insert = try db.statement(
            """
            INSERT INTO envelopes(author, sequence, id, room, kind, timestamp, received_at, bytes, causal_time, delivery, number)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            """
        )
        let room = try roomRow(e.room)
        let kind = kindColumn(e)
        insert.bind(1, st.rowid).bind(2, sequence).bind(3, e.id.bytes).bind(4, room)
        .bind(5, kind).bind(6, Int64(clamping: e.timestamp))
        .bind(7, Int64(clamping: receivedAt)).bind(8, e.encoded)
        if let causal {
            lastDelivery += 1
            let number = try Self.isNumbered(kind) ? nextNumber(room: room) : nil
            insert.bind(9, causal).bind(10, lastDelivery)
            if let number { insert.bind(11, Int64(number)) }
            if holdsRecentDeliveries { recentDeliveries.append(StoredEnvelope(envelope: e, causalTime: causal, delivery: lastDelivery, number: number)) }
            st.delivered = e.sequence
            st.lastCausalTime = causal
        }
        try insert.run()

        st.highest = max(st.highest, e.sequence)
        if e.sequence == st.contiguous + 1 {
            st.contiguous = e.sequence
            st.contiguousID = e.id
            // Filling a gap makes the envelopes held beyond it contiguous.
            while st.contiguous < st.highest, let next = try id(of: st, st.contiguous + 1) {
                st.contiguous += 1
                st.contiguousID = next
            }
        }
        setAuthor(e.author, st)
        dirtyAuthors.insert(e.author)
        if !e.erases.isEmpty, honoursErasures?(e) ?? true { try applyErasures(of: e, author: st.rowid) }
        return e.isPruned && !arrived.isPruned ? .insertedErased : .inserted
    }

    /// A transaction whose failure (a full disk, a read-only file, an I/O
    /// error: the commit is rolled back) also puts back the in-memory
    /// mirrors of the rows it touched, so they never describe a commit that
    /// did not happen: the next envelope gets the same sequence again, not one
    /// past a hole.
    func writeTransaction<R>(_ body: () throws -> R) throws -> R {
        // Inside another: the outer one's log covers this one.
        if undo != nil { return try db.transaction(body) }
        settleCommit()
        let result = try keepingUndo { try db.transaction(body) }.result
        lastWriteFailed = false
        return result
    }

    /// What a write changed in memory besides the authors' states (their undo log).
    typealias SavedState = (rooms: [RoomID: Int64], lastDelivery: Int64, dirty: Set<PublicKey>)

    /// Runs `body` (the store's writes and whatever of its transaction it
    /// runs) with the undo log open. If it throws, what it changed in memory
    /// is put back; else what a later failure of its COMMIT would put back
    /// comes with its result (`insertCommittingElsewhere`).
    func keepingUndo<R>(_ body: () throws -> R) throws -> (result: R, saved: SavedState, undone: [PublicKey: AuthorState?]) {
        let saved = (roomRows, lastDelivery, dirtyAuthors)
        undo = [:]
        defer { undo = nil }
        do {
            return (try body(), saved, undo ?? [:])
        } catch {
            lastWriteFailed = true
            putBack(saved, undo ?? [:])
            throw error
        }
    }

    /// What a transaction changed in memory, put back after it rolled back.
    func putBack(_ saved: SavedState, _ undone: [PublicKey: AuthorState?]) {
        (roomRows, lastDelivery, dirtyAuthors) = saved
        recentDeliveries.removeAll()
        // Read again from the rows, which the rollback put back.
        lastNumbers.removeAll()
        for (key, before) in undone {
            authors[key] = before
            updateUndelivered(key)
        }
    }

    /// The one way an author's state changes.
    func setAuthor(_ key: PublicKey, _ state: AuthorState) {
        if undo != nil, undo?.index(forKey: key) == nil { undo?[key] = .some(authors[key]) }
        authors[key] = state
        updateUndelivered(key)
        if state.delivered > sentClock[key] ?? 0 { unsentAuthors.insert(key) }
    }

    private func updateUndelivered(_ key: PublicKey) {
        if let st = authors[key], st.delivered < st.contiguous {
            undeliveredAuthors.insert(key)
        } else {
            undeliveredAuthors.remove(key)
        }
    }

    // MARK: rows

    func authorRow(_ key: PublicKey) throws -> AuthorState {
        if let st = authors[key] { return st }
        try db.statement("INSERT INTO authors(key) VALUES (?1)").bind(1, key.bytes).run()
        let st = AuthorState(
            rowid: try db.integer("SELECT last_insert_rowid()"), contiguous: 0, delivered: 0, highest: 0,
            lastCausalTime: 0, contiguousID: nil)
        setAuthor(key, st)
        return st
    }

    func roomRow(_ room: RoomID) throws -> Int64 {
        if let row = roomRows[room] { return row }
        try db.statement("INSERT INTO rooms(room_id) VALUES (?1)").bind(1, room.bytes).run()
        let row = try db.integer("SELECT last_insert_rowid()")
        roomRows[room] = row
        return row
    }

    private func flushAuthors() throws {
        for key in dirtyAuthors {
            guard let st = authors[key] else { continue }
            try db.statement("UPDATE authors SET contiguous = ?1, delivered = ?2 WHERE rowid = ?3")
                .bind(1, Int64(clamping: st.contiguous)).bind(2, Int64(clamping: st.delivered)).bind(3, st.rowid).run()
        }
        dirtyAuthors.removeAll(keepingCapacity: true)
    }

    /// The row and bytes of `author`'s envelope at `sequence`, if held.
    func storedRow(_ author: Int64, _ sequence: UInt64) throws -> (rowid: Int64, bytes: [UInt8])? {
        let s = try db.statement("SELECT rowid, bytes FROM envelopes WHERE author = ?1 AND sequence = ?2")
            .bind(1, author).bind(2, Int64(clamping: sequence))
        return try s.single { ($0.int64(0), $0.blob(1)) }
    }

    func id(of st: AuthorState, _ sequence: UInt64) throws -> MessageID? {
        if sequence == st.contiguous, let known = st.contiguousID { return known }
        let s = try db.statement("SELECT id FROM envelopes WHERE author = ?1 AND sequence = ?2")
            .bind(1, st.rowid).bind(2, Int64(clamping: sequence))
        return try s.single { try MessageID(bytes: $0.blob(0)) }
    }

    func loadEnvelope(_ author: Int64, _ sequence: UInt64) throws -> Envelope? {
        try storedRow(author, sequence).map { try Envelope.decode($0.bytes, verification: .trustedStorage) }
    }

    /// Forks kept per author: each is a whole envelope the author signed, and
    /// an author can sign as many as it likes; one is proof enough.
    public static let maximumForksPerAuthor: Int64 = 16

    func recordFork(_ e: Envelope, author: Int64, kept: MessageID, reason: String, at time: UInt64) throws {
        let held = try db.statement("SELECT count(*) FROM forks WHERE author = ?1").bind(1, author).single { $0.int64(0) } ?? 0
        guard held < Self.maximumForksPerAuthor else { return }
        try db.statement(
            """
            INSERT OR IGNORE INTO forks(author, sequence, kept_id, fork_id, reason, detected_at, bytes)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """
        )
        .bind(1, author).bind(2, Int64(clamping: e.sequence)).bind(3, kept.bytes).bind(4, e.id.bytes)
        .bind(5, reason).bind(6, Int64(clamping: time)).bind(7, e.encoded).run()
    }
}
