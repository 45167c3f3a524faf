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
    /// Seconds before the same words are said again: a failure that recurs
    /// on every tick or every batch (the search index's write, the store's,
    /// a peer's clock on a full disk) is said once a minute, not once a
    /// second, even when several take turns. Still counted each time.
    static let repeatAfter = 60.0
    /// Different words remembered as said (the oldest forgotten first): past
    /// it, words said within `repeatAfter` may be said again.
    static let maximumRemembered = 32

    private(set) var count = 0
    /// The newest failure's words, until `take`.
    private(set) var unsaid: String?
    /// Words said within `repeatAfter`, and when (`now`).
    private var said: [String: Double] = [:]
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

    /// Words to say with the next output, once a minute at most, for a
    /// failure that is not the store's (a store failure among them is
    /// counted through `heard`).
    func tell(_ words: String) {
        unsaid = words
    }

    /// A command failed with `error` and its words are shown already: a
    /// store failure among them is counted too.
    func heard(_ error: any Error) {
        if error is RepositoryError { count &+= 1 }
    }

    /// The failure not yet told, once; nil too when the same words were
    /// said less than `repeatAfter` ago.
    func take() -> String? {
        guard let words = unsaid else { return nil }
        unsaid = nil
        let t = now()
        if let at = said[words], t - at < Self.repeatAfter { return nil }
        said = said.filter { t - $0.value < Self.repeatAfter }
        if said.count >= Self.maximumRemembered, let oldest = said.min(by: { $0.value < $1.value }) { said[oldest.key] = nil }
        said[words] = t
        return words
    }
}
