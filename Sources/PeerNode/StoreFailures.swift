import Foundation

/// What a failed store read or write means, decided here once. A unit's
/// repository throws `RepositoryError`; where the caller cannot throw (rendering
/// a line, a check on an envelope) it asks through `read`, and a command
/// that fails with one is `heard` by the line's handler. Either way the
/// failure is counted (`store_read_failed`, reads and writes alike) and
/// never taken for "not found" in silence: the newest is kept and the node
/// says it once, as an error with what was being done, at its next output
/// or tick (`NetworkNode.emit`); the caller gets nil and takes the safe
/// side (a message shown as first written, an envelope refused, a check
/// that fails). One per node; confined to the node's loop.
final class StoreFailures {
    /// Seconds before the very words said last are said again: a failure
    /// that recurs on every tick (the search index's write on a full disk)
    /// is said once a minute, not once a second. Still counted each time.
    static let repeatAfter = 60.0

    private(set) var count = 0
    /// The newest failure's words, until `take`.
    private(set) var unsaid: String?
    /// The words said last, and when (`now`).
    private var lastSaid: (words: String, at: Double)?
    /// The monotonic clock, in seconds (a test's own).
    var now: () -> Double = { ProcessInfo.processInfo.systemUptime }

    /// The body's value, or nil (counted and kept) when a repository call fails.
    func read<T>(_ body: () throws(RepositoryError) -> T?) -> T? {
        do { return try body() } catch {
            failed(error)
            return nil
        }
    }

    /// The body's value, or nil (counted and kept) when it throws: for a
    /// store call not yet behind a repository, named by `what`.
    func read<T>(_ what: String, _ body: () throws -> T?) -> T? {
        do { return try body() } catch {
            failed("reading \(what)", error)
            return nil
        }
    }

    /// A repository call failed where nobody can be told at once.
    func failed(_ error: RepositoryError) {
        count &+= 1
        unsaid = "\(error); what is shown may be incomplete"
    }

    /// A read or write failed while `doing`.
    func failed(_ doing: String, _ error: any Error) {
        failed(RepositoryError(doing: doing, cause: error))
    }

    /// A command failed with `error` and its words are shown already: a
    /// store failure among them is counted too.
    func heard(_ error: any Error) {
        if error is RepositoryError { count &+= 1 }
    }

    /// The failure not yet told, once; nil too when it is the one said
    /// last, less than `repeatAfter` ago.
    func take() -> String? {
        guard let words = unsaid else { return nil }
        unsaid = nil
        let t = now()
        if let last = lastSaid, last.words == words, t - last.at < Self.repeatAfter { return nil }
        lastSaid = (words, t)
        return words
    }
}
