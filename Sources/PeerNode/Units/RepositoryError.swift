/// A store read or write that failed, with what was being done: the one
/// error every unit's repository throws (typed throws), so that a failure
/// is never taken for "not found". What it means is decided in one place
/// (`StoreFailures`): a command that meets it fails with these words and
/// the failure is counted (`store_read_failed`); a path that cannot throw
/// (a line being rendered, a check on an envelope) takes the safe side and
/// the failure is counted and said with the node's next output.
struct RepositoryError: Error, CustomStringConvertible {
    /// What was being done, as words that finish "the database failed (…)".
    let doing: String
    let cause: any Error

    var description: String { "the database failed (\(doing)): \(cause)" }
}

/// One call of a repository into `Store`: its failure, whatever it was,
/// comes out as a `RepositoryError` naming `doing`.
func storeCall<T>(_ doing: String, _ body: () throws -> T) throws(RepositoryError) -> T {
    do { return try body() } catch { throw RepositoryError(doing: doing, cause: error) }
}
