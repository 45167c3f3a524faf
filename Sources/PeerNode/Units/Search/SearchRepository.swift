import Crypto
import Gossip
import Store

/// The store as the search index uses it: what was delivered since the
/// index's mark, a room's rows in and out of the index, the index itself,
/// and the blocked identities (whose words stay hidden). Every call throws
/// a `RepositoryError` naming what it was doing.
struct SearchRepository {
    let store: Store

    func indexedThrough() throws(RepositoryError) -> Int64 {
        try storeCall("reading how far the search index reaches") { try store.indexedThrough() }
    }

    func delivered(after: Int64, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        try storeCall("reading new messages for the search index") { try store.delivered(after: after, limit: limit) }
    }

    func index(_ texts: [(author: PublicKey, sequence: UInt64, text: String)], through: Int64) throws(RepositoryError) {
        try storeCall("writing the search index") { try store.index(texts, through: through) }
    }

    func indexed(in room: RoomID, after rowid: Int64, limit: Int) throws(RepositoryError) -> [(rowid: Int64, envelope: Envelope)] {
        try storeCall("reading a room's indexed messages") { try store.indexed(in: room, after: rowid, limit: limit) }
    }

    func unindexed(in room: RoomID, after rowid: Int64, limit: Int) throws(RepositoryError) -> [(rowid: Int64, envelope: Envelope)] {
        try storeCall("reading a room's messages not indexed") { try store.unindexed(in: room, after: rowid, limit: limit) }
    }

    func index(rows: [(rowid: Int64, text: String)]) throws(RepositoryError) {
        try storeCall("writing the search index") { try store.index(rows: rows) }
    }

    func unindex(rows: [(rowid: Int64, text: String)]) throws(RepositoryError) {
        try storeCall("taking a room out of the search index") { try store.unindex(rows: rows) }
    }

    func search(_ query: String, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        try storeCall("searching") { try store.search(query, limit: limit) }
    }

    func blocked() throws(RepositoryError) -> Set<PublicKey> {
        try storeCall("reading the blocked identities") { try store.blockedIdentities() }
    }
}
