import Crypto
import Gossip
import Store

/// The store as receipts use it: our messages a receipt covers, and the
/// read mark another device of ours moved. Every call throws a
/// `RepositoryError` naming what it was doing.
struct ReceiptRepository {
    let store: Store

    func envelopes(from author: PublicKey, startingAt sequence: UInt64, limit: Int) throws(RepositoryError) -> [Envelope] {
        try storeCall("reading our messages for receipts") { try store.envelopes(from: author, startingAt: sequence, limit: limit) }
    }

    func markRead(_ room: RoomID, through marks: [(author: PublicKey, sequence: UInt64)]) throws(RepositoryError) {
        try storeCall("moving the read mark") { try store.markRead(room, through: marks) }
    }

    func unreadCount(of room: RoomID, me: PublicKey) throws(RepositoryError) -> Int {
        try storeCall("reading a room's unread count") { try store.unreadCount(of: room, me: me) }
    }
}
