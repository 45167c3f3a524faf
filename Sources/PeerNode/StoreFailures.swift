/// Store reads and writes that failed where the caller cannot throw
/// (rendering a line, a check on an envelope): never taken for "not found"
/// in silence. Each is counted (`store_read_failed`) and the newest kept,
/// and the node says it once, as an error with what was being done, at its
/// next output or tick (`NetworkNode.emit`); the caller gets nil and takes
/// the safe side (a message shown as first written, an envelope refused, a
/// check that fails). One per node; confined to the node's loop.
final class StoreFailures {
    private(set) var count = 0
    /// The newest failure's words, until `take`.
    private(set) var unsaid: String?

    /// The body's value, or nil (counted and kept) when it throws.
    func read<T>(_ what: String, _ body: () throws -> T?) -> T? {
        do { return try body() } catch {
            failed("reading \(what)", error)
            return nil
        }
    }

    /// A read or write failed while `doing`.
    func failed(_ doing: String, _ error: any Error) {
        count &+= 1
        unsaid = "the database failed (\(doing)): \(error); what is shown may be incomplete"
    }

    /// The failure not yet told, once.
    func take() -> String? {
        defer { unsaid = nil }
        return unsaid
    }
}
