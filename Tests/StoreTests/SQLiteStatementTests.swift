import CSQLite
@testable import Store
import TestSupport
import Testing

@Suite("Prepared statements")
struct SQLiteStatementTests {
    @Test("an error's words: a full disk says what to do and no SQL; any other names its statement on one line, up to SQLiteError.quotedStatement characters")
    func errorWords() {
        let full = SQLiteError(code: SQLITE_FULL, message: "database or disk is full", sql: "INSERT INTO settings(key, value)\n    VALUES (?1, ?2)")
        #expect(full.description == "the disk is full: nothing was written, and nothing stored before is lost; free some space and try again (SQLite error 13: database or disk is full)")
        let limit = SQLiteError.quotedStatement
        let atLimit = "SELECT " + String(repeating: "x", count: limit - 7)
        #expect(SQLiteError(code: SQLITE_ERROR, message: "no such table", sql: atLimit).description == "SQLite error 1: no such table (in: \(atLimit))")
        let past = SQLiteError(code: SQLITE_ERROR, message: "no such table", sql: atLimit + "y")
        #expect(past.description == "SQLite error 1: no such table (in: \(atLimit)…)")
        let lines = SQLiteError(code: SQLITE_ERROR, message: "m", sql: "SELECT a\n   FROM t\n  WHERE b = 1")
        #expect(lines.description == "SQLite error 1: m (in: SELECT a FROM t WHERE b = 1)")
    }

    @Test("a bind that fails (an index out of range) makes the step throw, instead of running with the parameter NULL; a reset clears it")
    func failedBind() throws {
        let dir = TemporaryDirectory()
        let db = try Connection(path: dir.file("t.db"))
        try db.execute("CREATE TABLE t (a INTEGER, b BLOB NOT NULL DEFAULT x'')")
        let insert = try db.statement("INSERT INTO t (a) VALUES (?1)")
        insert.bind(2, 7)  // there is no ?2
        #expect(throws: SQLiteError.self) { _ = try insert.step() }
        let again = try db.statement("INSERT INTO t (a) VALUES (?1)")  // the same statement, reset
        again.bind(1, 7)
        #expect(try again.step() == false)
        let count = try db.statement("SELECT count(*) FROM t WHERE a = 7")
        #expect(try count.single { sqlite3_column_int64($0.handle, 0) } == 1)
    }
}
