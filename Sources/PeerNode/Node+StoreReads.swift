import Store

/// Store reads where the caller cannot throw (rendering a line, a check on
/// an envelope): a failure is never taken for "not found" silently. It is
/// counted (`store_read_failed`) and kept, and the node says it once, as an
/// error with the reason, at its next output (`NetworkNode.emit`); the
/// caller gets nil and takes the safe side (a message shown as first
/// written, an envelope refused, a check that fails).
extension Node {
    func read<T>(_ what: String, _ body: () throws -> T?) -> T? {
        do { return try body() } catch {
            storeFailed("reading \(what)", error)
            return nil
        }
    }

    /// A store read or write failed where nothing can throw: counted, and said once.
    func storeFailed(_ doing: String, _ error: any Error) {
        storeReadFailures &+= 1
        unsaidStoreFailure = "the database failed (\(doing)): \(error); what is shown may be incomplete"
    }

    /// The store failure not yet told, once.
    func takeStoreFailure() -> String? {
        defer { unsaidStoreFailure = nil }
        return unsaidStoreFailure
    }
}
