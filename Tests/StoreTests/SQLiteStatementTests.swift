import CSQLite
@testable import Store
import TestSupport
import Testing

@Suite("Prepared statements")
struct SQLiteStatementTests {
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
