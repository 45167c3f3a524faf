import Crypto
import Gossip
import Store

/// Direct conversations (docs/PROTOCOL.md §5, §15 "Conversation keys").
/// Since envelope version 2 a conversation's room id and key come from the
/// X25519 of the two accounts' conversation keys (`RoomID.direct`,
/// `DirectKey.conversationKey`), so nobody else can tell whose conversation
/// a room is, and every device of either account opens it on its own;
/// version-1 rooms (derived from the two public keys) are still read, for
/// what older nodes stored. Epoch 0 of an account is its identity key
/// converted (what a lone identity always used); the account makes epoch 1
/// when it links its first device, hands the secret to its devices and
/// announces the public key in every device's certificate.
///
/// Owns our conversation keys and those others announced, the rooms mapped
/// from them and each peer's conversation. Given the store
/// (`ConversationRepository`), the identity key, the network key, the book
/// of accounts and our chain. Confined to the node's loop.
final class Conversations {
    /// One peer's conversation with us.
    struct Conversation {
        let key: DirectKey
        /// The room id of version 2, and the one version-1 envelopes used.
        let room: RoomID
        let roomVersion1: RoomID
    }

    /// The key in `ownKeys` of this machine's own identity key when it
    /// is a device of another account: it still opens the conversations it
    /// had before joining, and never seals new ones.
    static let identityEpoch = UInt32.max

    let repository: ConversationRepository
    let identity: SigningKey
    private let network: NetworkKey
    unowned let book: any AccountBook
    unowned let author: any OwnPosting
    let failures: StoreFailures
    /// Called after the keys were read again (our own rooms derive from them).
    var keysReloaded: (() -> Void)?

    /// Conversation room (either version) → the other party, for every peer mapped so far.
    private(set) var peers: [RoomID: PublicKey] = [:]
    /// Conversation rooms recorded in the store this run (the node's `rememberConversation`).
    var remembered: Set<RoomID> = []
    /// Each peer account's conversation with us.
    private var cache: [PublicKey: Conversation] = [:]
    /// How many known authors were mapped by a hash (version-1 rooms) and by
    /// an X25519 (conversations).
    private var version1RoomsMapped = 0
    private var conversationsMapped = 0
    /// Our account's conversation keys by epoch, the public keys other
    /// accounts announced, and the conversation rooms mapped so far.
    private(set) var ownKeys: [UInt32: BoxKeyPair] = [:]
    private(set) var announced: [PublicKey: [UInt32: (publicKey: [UInt8], claim: Dependency)]] = [:]
    private var rooms: [RoomID: (peer: PublicKey, key: DirectKey)] = [:]
    private var mappedPairs: Set<MappedPair> = []
    /// Conversation-key announcements refused (`rekey_refused`).
    var refusedRekeys = 0

    init(repository: ConversationRepository, identity: SigningKey, network: NetworkKey, book: any AccountBook,
         author: any OwnPosting, failures: StoreFailures) {
        self.repository = repository
        self.identity = identity
        self.network = network
        self.book = book
        self.author = author
        self.failures = failures
    }

    var me: PublicKey { identity.publicKey }
    var account: PublicKey { book.account(of: me) }

    /// The conversation we seal new messages to `peer`'s account in: our
    /// sending epoch and theirs, cached; nil when `peer` is us or not a usable key.
    func conversation(with peer: PublicKey) -> Conversation? {
        let other = book.account(of: peer)
        if let known = cache[other] { return known }
        guard other != account else { return nil }
        map(with: other)
        guard let pair = ownKeys[sendingEpoch], let key = directKey(own: pair, peer: other, peerEpoch: sendingEpoch(of: other)) else { return nil }
        let c = Conversation(key: key, room: RoomID.direct(key, network: network),
                             roomVersion1: RoomID.directVersion1(me, other, network: network))
        cache[other] = c
        return c
    }

    /// Signs and stores `content` of `kind` in the conversation with `peer`;
    /// `sendsFirst`: its row may follow the send (`OwnIntent`).
    @discardableResult
    func post(_ content: [UInt8], kind: Kind, to peer: PublicKey, sendsFirst: Bool = false) throws -> Envelope {
        guard let c = conversation(with: peer) else { throw NodeError.notSealable(peer) }
        return try author.appendOwn(room: c.room, kind: kind, content: content, key: c.key.conversationKey, erases: [], requires: nil,
                                    alsoRequires: sendingEpochDependency, sendsFirst: sendsFirst)
    }

    /// The other party of a conversation room mapped so far.
    func peer(in room: RoomID) -> PublicKey? { peers[room] }

    /// Whether `room` is a conversation of ours with anyone whose
    /// version-1 room is computable: every author this store knows is mapped
    /// (one hash each; again only once more authors are known). Enough to
    /// recognise an invite that names a conversation: a version-2 id can be
    /// computed only by its two parties, and the inviter's is checked directly.
    func isKnownConversation(_ room: RoomID) -> Bool {
        if peers[room] == nil, let authors = failures.read({ () throws(RepositoryError) in try repository.authors() }), authors.count != version1RoomsMapped {
            version1RoomsMapped = authors.count
            for author in authors where author != me { peers[RoomID.directVersion1(me, author, network: network)] = author }
        }
        return peers[room] != nil
    }

    /// The other party (an account) and the key of a conversation of ours that `envelope` is in.
    func room(of envelope: Envelope) -> (peer: PublicKey, key: DirectKey)? {
        if let known = rooms[envelope.room] { return known }
        let author = book.account(of: envelope.author)
        if author != account {
            // Someone else's: only their account's conversations with ours can be ours.
            map(with: author)
            return rooms[envelope.room]
        }
        // One of our devices': the other party is among the accounts we know.
        if let authors = failures.read({ () throws(RepositoryError) in try repository.authors() }), authors.count != conversationsMapped {
            conversationsMapped = authors.count
            for author in Set(authors.map { book.account(of: $0) }) { map(with: author) }
        }
        return rooms[envelope.room]
    }

    // MARK: keys

    /// Reads every conversation key the store holds: ours (with secrets)
    /// and the epochs others announced. Cheap (a row per account and epoch).
    func reload() throws(RepositoryError) {
        var own: [UInt32: BoxKeyPair] = [:]
        own[me == account ? 0 : Self.identityEpoch] = BoxKeyPair.converted(from: identity)
        var announced: [PublicKey: [UInt32: (publicKey: [UInt8], claim: Dependency)]] = [:]
        for row in try repository.keys() {
            // A stored secret that is no key is the database's fault (said); one that does not match its public key is not ours to use.
            if row.account == account, let secret = row.secret,
               let pair = failures.read("a conversation key's secret", { try BoxKeyPair(secretBytes: secret) }), pair.publicKey == row.publicKey {
                own[row.epoch] = pair
            }
            if let claim = row.claim {
                announced[row.account, default: [:]][row.epoch] = (row.publicKey, Dependency(author: claim.device, sequence: claim.sequence))
            }
        }
        ownKeys = own
        self.announced = announced
        // Which conversation each peer gets may have changed; the rooms already mapped stay right.
        cache = [:]
        conversationsMapped = 0
        keysReloaded?()
    }

    /// Our keys of epoch 1 or later (one exists once a device was linked).
    var linkedKeys: [(epoch: UInt32, pair: BoxKeyPair)] {
        ownKeys.filter { $0.key != 0 && $0.key != Self.identityEpoch }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The epoch we seal new conversations with: our newest that a claim announced
    /// (peers can compute its rooms), else 0.
    var sendingEpoch: UInt32 {
        ownKeys.keys.filter { $0 != Self.identityEpoch && ($0 == 0 || announced[account]?[$0] != nil) }.max() ?? 0
    }

    /// A peer account's newest announced epoch, else 0.
    func sendingEpoch(of peer: PublicKey) -> UInt32 { announced[peer]?.keys.max() ?? 0 }

    /// A peer account's public conversation key of `epoch` (0: its identity key converted).
    func boxPublic(of peer: PublicKey, epoch: UInt32) -> [UInt8]? {
        epoch == 0 ? BoxKeyPair.convertedPublic(peer) : announced[peer]?[epoch]?.publicKey
    }

    /// What an envelope sealed with our sending epoch must name among its
    /// dependencies: the claim that announced that epoch, when another
    /// device signed it (every node then knows the key before the envelope).
    var sendingEpochDependency: Dependency? {
        let epoch = sendingEpoch
        guard epoch != 0, let claim = announced[account]?[epoch]?.claim, claim.author != me else { return nil }
        return claim
    }

    /// Our newest conversation key of epoch 1 or later: its epoch and pair.
    var newestLinkedKey: (epoch: UInt32, pair: BoxKeyPair)? { linkedKeys.last }

    /// Our newest conversation key, made (epoch 1) when we have none to
    /// hand a device: only the account key does this.
    func newestOwnKey() throws(RepositoryError) -> (epoch: UInt32, pair: BoxKeyPair) {
        if let newest = newestLinkedKey { return newest }
        let pair = BoxKeyPair.generate()
        try repository.save(Store.ConversationKeyRow(account: account, epoch: 1, publicKey: pair.publicKey, secret: pair.exportedSecret, claim: nil))
        try reload()
        return (1, pair)
    }

    /// Registers the rooms of every pair of our epochs and `peer`'s (one
    /// X25519 each, once): what lets us open a conversation message sealed
    /// with any of them.
    func map(with peer: PublicKey) {
        guard peer != account else { return }
        for (ownEpoch, pair) in ownKeys {
            for peerEpoch in [0] + Array(announced[peer]?.keys ?? [:].keys) {
                let tag = MappedPair(peer: peer, own: ownEpoch, theirs: peerEpoch)
                guard !mappedPairs.contains(tag), let key = directKey(own: pair, peer: peer, peerEpoch: peerEpoch) else { continue }
                mappedPairs.insert(tag)
                let room = RoomID.direct(key, network: network)
                rooms[room] = (peer, key)
                peers[room] = peer
                if ownEpoch == 0 || ownEpoch == Self.identityEpoch, peerEpoch == 0 {
                    let v1 = RoomID.directVersion1(me, peer, network: network)
                    rooms[v1] = (peer, key)
                    peers[v1] = peer
                }
            }
        }
    }

    private func directKey(own: BoxKeyPair, peer: PublicKey, peerEpoch: UInt32) -> DirectKey? {
        guard let peerPublic = boxPublic(of: peer, epoch: peerEpoch) else { return nil }
        // A peer's key that is no X25519 point (its fault, or a forged identity) has no conversation: why is not needed.
        return try? DirectKey(own: own, peerPublic: peerPublic, peer: peer)
    }

    /// A kept claim's announcement of its account's conversation key (said when the store fails).
    func announce(_ certificate: DeviceCertificate, claim: Envelope) {
        _ = failures.read { () throws(RepositoryError) in
            try repository.save(Store.ConversationKeyRow(
                account: certificate.account, epoch: certificate.epoch, publicKey: certificate.conversationKey, secret: nil,
                claim: (claim.author, claim.sequence)))
            try reload()
        }
    }
}

/// One pair of epochs whose conversation room is mapped.
struct MappedPair: Hashable {
    let peer: PublicKey
    let own: UInt32
    let theirs: UInt32
}
