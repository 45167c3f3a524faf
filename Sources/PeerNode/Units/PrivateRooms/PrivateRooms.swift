import Crypto
import Gossip
import NodeCore
import Store

/// The node's rooms by name, as private rooms are given them: the public
/// rooms joined (a private room may not shadow one), joining a room to
/// show it, and saying a change to our other devices.
protocol RoomDirectory: AnyObject {
    /// Every room shown, by id: public rooms joined, and private rooms.
    var roomNames: [RoomID: RoomName] { get }
    /// Names of the public rooms this node knows.
    var knownRooms: [String] { get }
    func roomName(_ id: RoomID) -> RoomName?
    /// Shows a room by name (its messages become readable) and remembers it.
    func join(_ name: RoomName) throws -> RoomID
    /// Gives `id` the name it is shown under, or none; `remember`: in the store too.
    func name(_ id: RoomID, _ name: RoomName?, remember: Bool) throws
    /// Says `change` to our other devices, if we have any.
    func follow(_ change: FollowChange) throws
}

extension RoomDirectory {
    func name(_ id: RoomID, _ name: RoomName?) throws { try self.name(id, name, remember: true) }
}

/// Private rooms (docs/PROTOCOL.md §14): made here or joined by an invite
/// the user accepted, each with a random key known only to members, and
/// membership events in the room that give every change a new key sealed
/// to each remaining member account, with roles (`RoomMembership`, pure).
/// The invites are in `PrivateRooms+Invites.swift`, membership and keys in
/// `PrivateRooms+Membership.swift`.
///
/// Owns the rooms, their keys by epoch, each room's membership state and
/// its refusal counts. Given the store (`PrivateRoomRepository`), the room
/// directory, the book of accounts, conversations (whose keys seal a
/// room's keys and carry invites), devices (a removal names them; a
/// revoked one's events do not count), the node's one validity check and
/// our chain. Confined to the node's loop.
final class PrivateRooms {
    let repository: PrivateRoomRepository
    let network: NetworkKey
    unowned let directory: any RoomDirectory
    unowned let book: any AccountBook
    unowned let envelopes: any EnvelopeOpening
    unowned let author: any OwnPosting
    let conversations: Conversations
    let devices: Devices
    let failures: StoreFailures

    /// Private rooms we are in: id → name and key (the room's first key).
    var rooms: [RoomID: (name: RoomName, key: SymmetricKey)] = [:]
    /// The state of each room that has a create event, every key held by
    /// the event that made it, and the key posts are sealed with now.
    var memberships: [RoomID: RoomMembership] = [:]
    var roomEpochKeys: [RoomID: [MessageID: (epoch: UInt32, key: SymmetricKey)]] = [:]
    var roomPostingKeys: [RoomID: SymmetricKey] = [:]
    /// Membership events already opened and decoded, by id (`recomputeMembership`).
    var openedMembershipEvents: [MessageID: MembershipEvent] = [:]
    /// Posts sealed with the key of an epoch their author's account was not
    /// a member in, each time one was opened (`room_post_refused`).
    var refusedRoomPosts = 0
    /// What a change said on the side (who could not be invited), until `takeNotices`.
    var notices: [String] = []
    /// Delivered membership events that did not hold (§14's rules), not shown (`membership_refused`).
    var refusedMembership = 0

    init(repository: PrivateRoomRepository, network: NetworkKey, directory: any RoomDirectory, book: any AccountBook,
         envelopes: any EnvelopeOpening, author: any OwnPosting, conversations: Conversations, devices: Devices, failures: StoreFailures) {
        self.repository = repository
        self.network = network
        self.directory = directory
        self.book = book
        self.envelopes = envelopes
        self.author = author
        self.conversations = conversations
        self.devices = devices
        self.failures = failures
    }

    var me: PublicKey { author.me }
    var account: PublicKey { book.account(of: author.me) }

    /// The private room `id`, if we are in it.
    subscript(id: RoomID) -> (name: RoomName, key: SymmetricKey)? { rooms[id] }

    /// The private room of ours named `name`.
    func id(named name: RoomName) -> RoomID? { rooms.first { $0.value.name == name }?.key }

    /// The key posts in `id` are sealed with now, if it is ours.
    func postingKey(_ id: RoomID) -> SymmetricKey? {
        guard let own = rooms[id] else { return nil }
        return roomPostingKeys[id] ?? own.key
    }

    /// Reads the rooms, their keys and each one's membership, at start.
    func load() throws(RepositoryError) {
        for (id, name, key) in try repository.privateRooms() {
            // A row that is no valid room is the database's fault: said, and the room left unread.
            if let room = failures.read("a private room's name", { try RoomName(name) }),
               let secret = failures.read("a private room's key", { try SymmetricKey(bytes: key) }) { rooms[id] = (room, secret) }
        }
    }

    /// The notices not yet shown, once.
    func takeNotices() -> [String] {
        defer { notices = [] }
        return notices
    }

    /// Adds a room we are now in, under `name`, with its first key.
    func add(_ id: RoomID, name: RoomName, key: SymmetricKey) throws(RepositoryError) {
        try repository.addPrivateRoom(id, name: name.value, key: key.exportedBytes)
        rooms[id] = (name, key)
    }
}
