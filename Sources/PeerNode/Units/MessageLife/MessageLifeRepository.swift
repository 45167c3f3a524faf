import Crypto
import Gossip
import Store

/// The store as message life uses it: messages by number and by id, the
/// recent ones of a room, edits, and erasures. Every call throws a
/// `RepositoryError` naming what it was doing.
struct MessageLifeRepository {
    let store: Store

    func numbered(_ number: Int, in room: RoomID) throws(RepositoryError) -> StoredEnvelope? {
        try storeCall("reading message \(number) of a room") { try store.envelope(numbered: number, in: room) }
    }

    func recent(in room: RoomID, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        try storeCall("reading a room's recent messages") { try store.history(of: room, limit: limit) }
    }

    func delivered(id: MessageID) throws(RepositoryError) -> StoredEnvelope? {
        try storeCall("reading a message by its id") { try store.delivered(id: id) }
    }

    func envelope(by author: PublicKey, sequence: UInt64) throws(RepositoryError) -> Envelope? {
        try storeCall("reading a message referred to") { try store.envelope(by: author, sequence: sequence) }
    }

    /// Whether a tombstone of `author` erased its envelope at `sequence`.
    func isErased(_ author: PublicKey, _ sequence: UInt64) throws(RepositoryError) -> Bool {
        try storeCall("reading an erasure") { try store.erasedBy(author, sequence) != nil }
    }

    /// The sequences of the accepted edits of `author`'s message at `original`, oldest first.
    func edits(by author: PublicKey, of original: UInt64) throws(RepositoryError) -> [UInt64] {
        try storeCall("reading a message's edits") { try store.edits(by: author, of: original) }
    }

    func recordEdit(by author: PublicKey, original: UInt64, edit: UInt64) throws(RepositoryError) {
        try storeCall("recording an edit") { try store.recordEdit(by: author, original: original, edit: edit) }
    }
}
