import Crypto
import Gossip
import Store

/// The store as private rooms use it: the rooms and their keys, invites
/// waiting for an answer, membership events, founding pins, and refiling a
/// removed member's posts. Every call throws a `RepositoryError` naming what it was doing.
struct PrivateRoomRepository {
    let store: Store

    func privateRooms() throws(RepositoryError) -> [(room: RoomID, name: String, key: [UInt8])] {
        try storeCall("reading the private rooms") { try store.privateRooms() }
    }

    func addPrivateRoom(_ room: RoomID, name: String, key: [UInt8]) throws(RepositoryError) {
        try storeCall("saving a private room") { try store.addPrivateRoom(room, name: name, key: key) }
    }

    func removePrivateRoom(_ room: RoomID) throws(RepositoryError) {
        try storeCall("dropping a private room") { try store.removePrivateRoom(room) }
    }

    func pendingInvites() throws(RepositoryError) -> [Store.PendingInvite] {
        try storeCall("reading the invites waiting") { try store.pendingInvites() }
    }

    func addPendingInvite(_ invite: Store.PendingInvite) throws(RepositoryError) {
        try storeCall("keeping an invite") { try store.addPendingInvite(invite) }
    }

    func removePendingInvite(_ room: RoomID) throws(RepositoryError) {
        try storeCall("forgetting an answered invite") { try store.removePendingInvite(room) }
    }

    func roomKeys() throws(RepositoryError) -> [Store.RoomKeyRow] {
        try storeCall("reading the private rooms' keys") { try store.roomKeys() }
    }

    func saveRoomKey(_ row: Store.RoomKeyRow) throws(RepositoryError) {
        try storeCall("saving a private room's key") { try store.saveRoomKey(row) }
    }

    func foundingCreate(of room: RoomID) throws(RepositoryError) -> MessageID? {
        try storeCall("reading a room's founding create") { try store.foundingCreate(of: room) }
    }

    func pinFoundingCreate(_ room: RoomID, event: MessageID) throws(RepositoryError) {
        try storeCall("pinning a room's founding create") { try store.pinFoundingCreate(room, event: event) }
    }

    func membershipCandidates(in room: RoomID) throws(RepositoryError) -> [Envelope] {
        try storeCall("reading a room's membership events") { try store.membershipCandidates(in: room) }
    }

    func fileSealed(in room: RoomID) throws(RepositoryError) {
        _ = try storeCall("filing what a new room key opens") { try store.fileSealed(in: room) }
    }

    func messages(by author: PublicKey, in room: RoomID) throws(RepositoryError) -> [Envelope] {
        try storeCall("reading a member's posts") { try store.messages(by: author, in: room) }
    }

    func fileAsRefused(_ e: Envelope) throws(RepositoryError) {
        try storeCall("filing a removed member's post as refused") { try store.fileAsRefused(e) }
    }

    func authors(in room: RoomID) throws(RepositoryError) -> [PublicKey] {
        try storeCall("reading who wrote in a room") { try store.authors(in: room) }
    }

    func head(of author: PublicKey) throws(RepositoryError) -> (sequence: UInt64, id: MessageID)? {
        try storeCall("reading a device's last envelope") { try store.head(of: author) }
    }
}
