import CSQLite

/// A failed SQLite call: the result code, SQLite's message, and the SQL.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?

    /// Characters of the statement a description quotes at most.
    static let quotedStatement = 120

    public var description: String {
        let raw = "SQLite error \(code): \(message)"
        // The codes a person can act on get a plain sentence first, and no SQL: the words are theirs.
        switch code & 0xFF {
        case SQLITE_FULL: return "the disk is full: nothing was written, and nothing stored before is lost; free some space and try again (\(raw))"
        case SQLITE_READONLY: return "the data directory cannot be written (read-only file or filesystem); nothing was written (\(raw))"
        case SQLITE_IOERR: return "the disk reported an I/O error; nothing was written (\(raw))"
        default:
            // Anything else is ours to mend: which statement, on one line and cut short.
            guard let sql else { return raw }
            let line = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            return raw + " (in: " + (line.count > Self.quotedStatement ? line.prefix(Self.quotedStatement) + "…" : line) + ")"
        }
    }
}

/// One SQLite connection. One owner (the Store, itself owned by one actor
/// or thread) uses it; the one exception is a COMMIT handed to the store's
/// committer thread (`Store.insertCommittingElsewhere`), which every use
/// here waits for first (`beforeUse`). Opened serialized (SQLite's own
/// mutex) all the same, so that a use that slipped past the wait would
/// stall, not corrupt. Statements are cached by SQL.
final class Connection {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    /// Run before each statement or `execute`: the owner's wait for a
    /// COMMIT on another thread (`Store.settleCommit`).
    var beforeUse: (() -> Void)?

    init(path: String) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw SQLiteError(code: rc, message: message, sql: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, _ sql: String?) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return no rows we need.
    func execute(_ sql: String) throws(SQLiteError) {
        beforeUse?()
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    /// A prepared statement, reused across calls (reset and cleared first).
    func statement(_ sql: String) throws(SQLiteError) -> Statement {
        beforeUse?()
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let s = try Statement(connection: self, sql: sql)
        statements[sql] = s
        return s
    }

    /// Resets every cached statement. A statement left part-way through its
    /// rows keeps a read transaction open until it is reset, and while one
    /// is open a checkpoint cannot truncate the WAL (`SQLITE_LOCKED`):
    /// called before such a checkpoint.
    func resetStatements() {
        for s in statements.values { s.reset() }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction; rolls back if it throws.
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try begin {
            let result = try body()
            try execute("COMMIT")
            return result
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction left open for its
    /// COMMIT (`transaction`, or the store's committer); rolls back if it throws.
    func begin<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            return try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The single value of a one-row query, as text (for PRAGMAs).
    func text(_ sql: String) throws(SQLiteError) -> String? {
        let s = try statement(sql)
        defer { s.reset() }
        return try s.step() ? s.text(0) : nil
    }

    func integer(_ sql: String) throws(SQLiteError) -> Int64 {
        let s = try statement(sql)
        defer { s.reset() }
        return try s.step() ? s.int64(0) : 0
    }
}

/// A prepared statement. Finalised in `deinit`.
final class Statement {
    private let connection: Connection
    let handle: OpaquePointer
    let sql: String

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw connection.error(rc, sql) }
        self.connection = connection
        self.handle = stmt
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// The first bind that failed since the last reset (SQLITE_OK if none):
    /// `step` throws it instead of running with that parameter left NULL.
    private var bindFailure = SQLITE_OK

    private func noted(_ rc: Int32) -> Statement {
        if rc != SQLITE_OK, bindFailure == SQLITE_OK { bindFailure = rc }
        return self
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        bindFailure = SQLITE_OK
    }

    @discardableResult
    func bind(_ index: Int32, _ value: Int64) -> Statement {
        noted(sqlite3_bind_int64(handle, index, value))
    }

    @discardableResult
    func bind(_ index: Int32, _ value: Int) -> Statement { bind(index, Int64(value)) }

    @discardableResult
    func bind(_ index: Int32, _ value: some Collection<UInt8>) -> Statement {
        let bytes = Array(value)
        // An empty blob, not SQL NULL.
        guard !bytes.isEmpty else { return noted(sqlite3_bind_zeroblob(handle, index, 0)) }
        guard let length = Int32(exactly: bytes.count) else { return noted(SQLITE_TOOBIG) }
        return noted(bytes.withUnsafeBytes { b in peernode_sqlite3_bind_blob_transient(handle, index, b.baseAddress, length) })
    }

    @discardableResult
    func bind(_ index: Int32, _ value: String) -> Statement {
        var text = value
        let rc = text.withUTF8 { b in
            b.withMemoryRebound(to: CChar.self) { c in
                Int32(exactly: c.count).map { peernode_sqlite3_bind_text_transient(handle, index, c.baseAddress, $0) } ?? SQLITE_TOOBIG
            }
        }
        return noted(rc)
    }

    @discardableResult
    func bindNull(_ index: Int32) -> Statement {
        noted(sqlite3_bind_null(handle, index))
    }

    /// Advances; true when a row is available.
    func step() throws(SQLiteError) -> Bool {
        guard bindFailure == SQLITE_OK else { throw connection.error(bindFailure, sql) }
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc, sql)
        }
    }

    /// The first row read by `read`, or nil when there is none. The statement
    /// is reset afterwards, so it holds no read transaction open.
    func single<R>(_ read: (Statement) throws -> R) throws -> R? {
        defer { sqlite3_reset(handle) }
        return try step() ? try read(self) : nil
    }

    /// Steps to completion (for statements that return no rows).
    func run() throws(SQLiteError) {
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func text(_ column: Int32) -> String? {
        guard let c = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: c)
    }
}
