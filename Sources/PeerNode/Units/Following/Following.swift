import Crypto
import Gossip

/// Following across devices (docs/PROTOCOL.md §15, "Following across
/// devices"): the rooms one device joins, leaves, makes or accepts, and
/// the trust marks and blocks it sets, are said in the account's own room,
/// which only the account's devices can name and read (its id and key
/// derive from the account's conversation secret of an epoch from 1 on,
/// so a revoked device loses it with the next epoch), and the others do
/// the same.
///
/// Owns the own rooms and whether a change being made follows another
/// device's (then it is not said again). Given the network key (to derive
/// the rooms) and our chain (to say a change). What a followed change does
/// to rooms, marks and blocks is the node's: this unit says which change
/// is ours to follow. Confined to the node's loop.
final class Following {
    private let network: NetworkKey
    private unowned let author: any OwnPosting
    /// Our own rooms by id: one per conversation key of ours from epoch 1 on.
    private(set) var rooms: [RoomID: SymmetricKey] = [:]
    /// A change being made follows another device's (or a grant): not said again.
    private var applying = false

    init(network: NetworkKey, author: any OwnPosting) {
        self.network = network
        self.author = author
    }

    /// The own room of one conversation key: its id and key.
    func room(of pair: BoxKeyPair) -> (id: RoomID, key: SymmetricKey)? {
        let bytes = BLAKE2b.derive(label: "peernode/1 own-devices key", pair.exportedSecret)
        // A 32-byte derivation is always a key.
        guard let key = SymmetricKey(exactly: bytes) else { return nil }
        return (RoomID.ownDevices(secret: bytes, network: network), key)
    }

    /// Maps the own rooms of our conversation keys (`linked`: those from epoch 1 on).
    func map(_ linked: [BoxKeyPair]) {
        var mapped: [RoomID: SymmetricKey] = [:]
        for pair in linked {
            if let (id, key) = room(of: pair) { mapped[id] = key }
        }
        rooms = mapped
    }

    /// Says `change` to our other devices, in the own room of `newest` (our
    /// newest conversation key from epoch 1 on: there is one once a device
    /// was linked). Nil when there is nobody to tell, or the change follows
    /// another device's.
    @discardableResult
    func say(_ change: FollowChange, newest: BoxKeyPair?) throws -> Envelope? {
        guard !applying, let newest, let (id, key) = room(of: newest) else { return nil }
        return try author.appendOwn(room: id, kind: .follow, content: change.encoded, key: key)
    }

    /// A change from another device of ours (`fromOurAccount`) in one of our
    /// own rooms: the change to follow, or nil when it is not ours to follow
    /// (another account's, our own, not in an own room, undecodable).
    func change(in e: Envelope, _ opened: OpenedEnvelope, fromOurAccount: Bool) -> FollowChange? {
        guard rooms[e.room] != nil, e.author != author.me, fromOurAccount else { return nil }
        return FollowChange.decode(opened.content)
    }

    /// Runs `body` as the following of a change made elsewhere: nothing it changes is said again.
    func applying<T>(_ body: () throws -> T) rethrows -> T {
        applying = true
        defer { applying = false }
        return try body()
    }
}

extension FollowChange {
    /// Its name in `--json` (`"change"`) and what it was about, as text.
    var described: (change: String, about: String) {
        switch self {
        case let .joined(name): ("joined", name.value)
        case let .parted(name): ("parted", name.value)
        case let .trusted(key, on): (on ? "trusted" : "untrusted", key.hex)
        case let .blocked(key, on): (on ? "blocked" : "unblocked", key.hex)
        case let .accepted(room): ("accepted", room.hex)
        case let .madePrivate(_, _, name): ("made_private", name.value)
        }
    }
}
