import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// A running node: identity, network key, store, and the chat operations
/// on top of them. One owner (the chat loop) uses it.
final class Node: EnvelopeOpening, OwnPosting, AccountBook, RoomDirectory, ReceiptPosting {
    let directory: DataDirectory
    let identity: SigningKey
    let network: NetworkKey
    let networkLabel: String
    /// The name of a network whose key comes from its name (nil for a key
    /// file): anyone who knows the name can join it.
    let openNetworkName: String?
    /// What start-up repaired in the store (forged private rooms), for a warning.
    private(set) var repairs: [String] = []
    let store: Store
    /// The identity key was made by this start (not found on disk).
    let identityIsNew: Bool
    /// Each author's nick (text from the network, printable only sanitized)
    /// and the user's marks: `people[key]` is how to show an identity.
    var people = People()
    var nicks: [PublicKey: PeerText] { people.nicks }
    private var confusables = ConfusableIndex<PublicKey>()
    /// Rooms this node shows, by id: public rooms joined, and private rooms.
    var roomNames: [RoomID: RoomName] = [:]
    var openedAhead = OpenedAhead()  // bodies opened while inserting, for the show after (`NetworkNode.store` clears it)
    /// The network's accounts room (device claims) and its key: every node reads it.
    let accountsRoom: RoomID
    let accountsKey: SymmetricKey
    /// Store failures where the caller cannot throw, counted and said (`StoreFailures`).
    let storeFailures = StoreFailures()
    /// Whether our own history is safe from reusing a sequence number (`OwnDurability`).
    let ownDurability: OwnDurability
    /// Our post sent before its row, written aside (`OwnIntent`).
    let ownIntent: OwnIntent
    /// Our own chain: what signs each envelope of ours.
    let ownChain: OwnChain
    /// Edits and deletes, and which message a command names (`Units/MessageLife`).
    private(set) lazy var messageLife = MessageLife(repository: .init(store: store), envelopes: self, author: self, failures: storeFailures)
    /// Reactions and replies (`Units/Reactions`).
    private(set) lazy var reactions = Reactions(repository: .init(store: store), messages: messageLife, envelopes: self, author: self, failures: storeFailures)
    /// `/search` and `/mentions` (`Units/Search`).
    private(set) lazy var searchIndex = SearchIndex(repository: .init(store: store), messages: messageLife)
    /// Device claims and revocations (`Units/Devices`).
    private(set) lazy var devices = Devices(repository: .init(store: store), book: self, envelopes: self, author: self, failures: storeFailures,
                                            accountsRoom: accountsRoom, accountsKey: accountsKey)
    /// Direct conversations and our account's conversation keys (`Units/Conversations`).
    private(set) lazy var conversations = Conversations(repository: .init(store: store), identity: identity, network: network, book: self,
                                                        author: self, failures: storeFailures)
    /// The account's own rooms, where our devices follow each other (`Units/Following`).
    private(set) lazy var following = Following(network: network, author: self)
    /// Files offered and fetched (`Units/Files`).
    private(set) lazy var files = Files(repository: .init(store: store), envelopes: self, failures: storeFailures)
    /// Private rooms, their invites, membership and keys (`Units/PrivateRooms`).
    private(set) lazy var privateRooms = PrivateRooms(repository: .init(store: store), network: network, directory: self, book: self, envelopes: self,
                                                      author: self, conversations: conversations, devices: devices, failures: storeFailures)
    init(options: Options, environment: [String: String]) throws {
        guard let path = resolveDataDirectory(options, environment: environment) else {
            throw NodeError.noDataDirectory
        }
        if options.networkName != nil && options.networkKeyFile != nil {
            throw NodeError.networkGivenTwice
        }
        directory = try DataDirectory(path: path)
        (identity, identityIsNew) = try KeyFile.loadOrCreateIdentity(at: directory.file(DataDirectory.identityFileName))
        if let file = options.networkKeyFile {
            network = try KeyFile.loadNetworkKey(at: file)
            networkLabel = "private network (\(file))"
            openNetworkName = nil
        } else {
            let name = options.networkName ?? NetworkKey.defaultName
            network = NetworkKey.derived(fromName: name)
            networkLabel = "network \(name)"
            openNetworkName = name
        }
        accountsRoom = RoomID.accounts(network: network)
        accountsKey = network.accountsRoomKey
        store = try Store(directory: directory)
        ownDurability = try OwnDurability(repository: .init(store: store), me: identity.publicKey, identityIsNew: identityIsNew, failures: storeFailures)
        ownIntent = OwnIntent(directory: directory)
        ownChain = OwnChain(identity: identity, store: store, durability: ownDurability, intent: ownIntent)
        try store.checkpointInBackground()
        for (id, name) in try store.namedRooms() {
            // A stored name that breaks the rules is the database's fault: said, and the room left unnamed.
            if let room = storeFailures.read("a room's name", { try RoomName(name) }) { roomNames[id] = room }
        }
        try privateRooms.load()
        // Rows hold each envelope's kind where this node can open it; a public room's body is kept for its show.
        store.kindOf = { [weak self] in self?.open($0, keeping: true)?.kind }
        // A revoked device erases nothing past its limit: a thief with its key cannot take back its owner's words.
        store.honoursErasures = { [weak self] in !(self?.devices.isRevoked($0) ?? false) }
        // What was indexed when it stood comes out whatever its standing now.
        store.indexedText = { [weak self] in self?.messageLife.indexedText(of: $0, standing: false) }
        for row in try devices.claims() { people.accounts[row.device] = row.account }
        try devices.loadRevocations()
        conversations.keysReloaded = { [unowned self] in following.map(conversations.linkedKeys.map(\.pair)) }
        try conversations.reload()
        try privateRooms.loadRoomMemberships()
        try loadNicks()
        repairs = try privateRooms.repairPrivateRooms()
        people.trusted = try store.trustedIdentities()
        people.forked = Set(try store.forks().map(\.author))
        // A post a process that died had sent before its row (`OwnIntent`): stored before anything of ours is signed.
        try ownIntent.recover(into: store, me: me)
    }

    var me: PublicKey { identity.publicKey }

    /// Called before every new envelope of ours is signed: the network node
    /// refuses while our own history may still be elsewhere (no sequence
    /// number is ever used twice).
    var postingGate: (() throws -> Void)?

    /// Leaves a room by name: it is no longer shown or listed, and its texts
    /// leave the search index.
    func leave(_ name: RoomName) throws {
        let id = roomID(name)
        try searchIndex.unindexLeft(id)
        roomNames[id] = nil
        try store.forgetRoomName(id)
        if privateRooms[id] == nil { try follow(.parted(name)) }
    }

    /// Names of the public rooms this node knows, for completion.
    var knownRooms: [String] { roomNames.values.map(\.value).sorted() }

    /// A private room we are in wins over the public room of the same name.
    func roomID(_ name: RoomName) -> RoomID {
        if let id = privateRooms.id(named: name) { return id }
        if let id = publicRoomIDs[name.value] { return id }
        // Derived once a name: the open room's id is asked for each message shown (a hash each time).
        if publicRoomIDs.count >= Self.maximumCachedRoomIDs { publicRoomIDs.removeAll(keepingCapacity: true) }
        let id = RoomID.publicRoom(name, network: network)
        publicRoomIDs[name.value] = id
        return id
    }

    /// Public room names whose ids are kept derived (past it, all are forgotten and derived again).
    static let maximumCachedRoomIDs = 256
    private var publicRoomIDs: [String: RoomID] = [:]

    /// The key of a room we know: a private room's own, or the public one derived from its name.
    func roomKey(_ id: RoomID) -> SymmetricKey? {
        if let own = privateRooms.postingKey(id) { return own }
        if let own = following.rooms[id] { return own }
        if id == accountsRoom { return accountsKey }
        guard let name = roomNames[id]?.value else { return nil }
        if let key = publicRoomKeys[name] { return key }
        let key = network.publicRoomKey(roomName: name)
        publicRoomKeys[name] = key
        return key
    }

    /// Public room name → its key, derived once: each envelope is opened
    /// twice on its way in (its kind filed, then shown), and a derivation
    /// costs a KDF and guarded key memory (three system calls). One entry
    /// per public room name this node has joined.
    private var publicRoomKeys: [String: SymmetricKey] = [:]

    /// Makes a public room known by name (so its messages can be read) and
    /// remembers it in the store.
    func join(_ name: RoomName) throws -> RoomID {
        let id = roomID(name)
        if roomNames[id] == nil {
            roomNames[id] = name
            try store.registerRoom(id, name: name.value)
            if privateRooms[id] == nil { try follow(.joined(name)) }
            // What was stored before we could read it is filed under its kinds now,
            // and found by /search.
            try store.fileSealed(in: id)
            try searchIndex.indexJoined(id)
            applyJoinedRoomActions(id)
        }
        return id
    }

    /// Applies the edits and reactions a room held before this node could
    /// read it (they were delivered then, unopened), in delivery order, a
    /// page at a time. Ones applied already change nothing.
    private func applyJoinedRoomActions(_ room: RoomID) {
        var after: Int64 = 0
        while let page = storeFailures.read("a room's edits and reactions", { try store.delivered(in: room, kinds: [.edit, .reaction], after: after, limit: SearchIndex.page) }),
              let last = page.last {
            after = last.delivery
            for stored in page {
                guard let opened = open(stored.envelope) else { continue }
                if opened.kind == .edit { _ = messageLife.acceptEdit(stored.envelope, opened) } else { _ = reactions.accept(stored.envelope, opened) }
            }
        }
    }

    // MARK: posting (our chain itself: `OwnChain`)

    /// Signs and stores a new envelope of ours (fsynced before return, or
    /// after the send where `OwnDurability.sendsBeforeSync`).
    @discardableResult
    func post(_ text: String, kind: Kind, in room: RoomName, sendsFirst: Bool = false) throws -> Envelope {
        let envelope = try post(content: Array(text.utf8), kind: kind, in: room, sendsFirst: sendsFirst)
        if kind == .nick { setNick(PeerText(text), of: me) }
        return envelope
    }

    /// Signs and stores `content` of `kind` in a room we may write to;
    /// `sendsFirst`: its row may follow the send (`OwnIntent`).
    func post(content: [UInt8], kind: Kind, in room: RoomName, sendsFirst: Bool = false) throws -> Envelope {
        let id = try join(room)
        if let state = privateRooms.memberships[id], state.head != nil, state.roles[account] == nil { throw NodeError.notAMember }
        guard privateRooms.mayPost(in: id) else { throw NodeError.waitingForNewKey(room) }
        guard let key = roomKey(id) else { throw NodeError.noRoomKey(room) }
        return try appendOwn(room: id, kind: kind, content: content, key: key, erases: [], requires: nil, alsoRequires: nil, sendsFirst: sendsFirst)
    }

    /// Signs and stores a receipt in a room (sealed with its key) or
    /// a direct conversation (with the other party's conversation key).
    @discardableResult
    func postReceipt(_ receipt: Receipt, in room: RoomID) throws -> Envelope {
        if let key = roomKey(room) { return try appendOwn(room: room, kind: .receipt, content: receipt.encoded, key: key) }
        guard let peer = conversations.peer(in: room) else { throw NodeError.receiptRoomNotWritable }
        return try conversations.post(receipt.encoded, kind: .receipt, to: peer)
    }

    /// Signs and stores a direct message to `peer` (a text, or an action: `/me`).
    @discardableResult
    func postDirect(_ text: String, to peer: PublicKey, kind: Kind = .text, sendsFirst: Bool = false) throws -> Envelope {
        try conversations.post(Array(text.utf8), kind: kind, to: peer, sendsFirst: sendsFirst)
    }

    /// Our next envelope (`OwnChain`): `erases` names earlier ones of ours to erase;
    /// `requires` a message it refers to (a reaction's, a reply's), named among
    /// its dependencies so that every node delivers that message first.
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64] = [],
                   requires: Envelope? = nil, alsoRequires: Dependency? = nil) throws -> Envelope {
        try appendOwn(room: room, kind: kind, content: content, key: key, erases: erases, requires: requires, alsoRequires: alsoRequires, sendsFirst: false)
    }

    /// `appendOwn`; `sendsFirst`: its row may follow the send (`OwnChain`).
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64],
                   requires: Envelope?, alsoRequires: Dependency?, sendsFirst: Bool) throws -> Envelope {
        try ownChain.append(room: room, kind: kind, content: content, key: key, erases: erases, requires: requires,
                            alsoRequires: alsoRequires, sendsFirst: sendsFirst, gate: postingGate)
    }


    /// Nick messages refused by `setNick` (counted as `bad_nick`).
    private(set) var refusedNicks = 0

    /// Our current nick, if we ever set one.
    var nick: String? { people.nick(me)?.unsanitized }

    static func now() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }

    // MARK: reading

    func roomName(_ id: RoomID) -> RoomName? { roomNames[id] }

    private func loadNicks() throws {
        for stored in try store.latestNicks() {
            if let opened = open(stored.envelope), opened.kind == .nick { setNick(opened.text, of: stored.envelope.author) }
        }
    }

    /// `/trust` and `/untrust`: the mark is kept in the store and shown at once.
    func setTrusted(_ key: PublicKey, _ on: Bool) throws {
        try store.setTrusted(key, on, at: Node.now())
        people.trusted = try store.trustedIdentities()
        try follow(.trusted(key, on))
    }

    /// `/block` and `/unblock`: kept in the store, and said to our other devices.
    func setBlocked(_ key: PublicKey, _ on: Bool) throws {
        try store.setBlocked(key, on, at: Node.now())
        try follow(.blocked(key, on))
    }

    /// An author was found to have signed two envelopes at one sequence;
    /// false if it was known already.
    func noteFork(_ author: PublicKey) -> Bool { people.forked.insert(author).inserted }

    /// Notes a nick change seen in history or live (in a room: a nick is
    /// said to everyone, never in a conversation).
    func observe(_ envelope: Envelope, _ opened: OpenedEnvelope) {
        if opened.kind == .nick, opened.peer == nil { setNick(opened.text, of: envelope.author) }
    }

    /// A nick from a message is held to the same rules as `/nick` (and as
    /// the handshake's): one that breaks them is not shown, and the
    /// author keeps the nick it had.
    func setNick(_ text: PeerText, of author: PublicKey) {
        guard let valid = Nick.checked(text.unsanitized) else {
            refusedNicks &+= 1
            return
        }
        // A device's nick is its account's.
        let account = people.account(author)
        people.nicks[account] = PeerText(valid.value)
        confusables.set(account, nick: valid.value)
        people.lookAlike = confusables.suspicious
    }

    // MARK: accounts and rooms, as the units are given them

    /// Our account: the one this device joined, or our own key.
    var account: PublicKey { people.account(me) }
    func account(of key: PublicKey) -> PublicKey { people.account(key) }
    var deviceAccounts: [PublicKey: PublicKey] { people.accounts }

    /// Gives `id` the name it is shown under, or none (kept in the store when `remember`).
    func name(_ id: RoomID, _ name: RoomName?, remember: Bool) throws {
        roomNames[id] = name
        guard remember else { return }
        if let name { try store.registerRoom(id, name: name.value) } else { try store.forgetRoomName(id) }
    }

    /// Says `change` to our other devices, if we have any (`Following`).
    func follow(_ change: FollowChange) throws {
        try following.say(change, newest: conversations.newestLinkedKey?.pair)
    }

    /// A delivered device claim kept: the device shows as its account from
    /// now on, and the conversation key the claim announces is taken.
    func acceptDeviceClaim(_ e: Envelope, _ opened: OpenedEnvelope) -> Store.DeviceRow? {
        guard let (row, certificate) = devices.acceptClaim(e, opened) else { return nil }
        people.accounts[row.device] = row.account
        conversations.announce(certificate, claim: e)
        return row
    }

    // MARK: the one validity check

    /// The envelope's kind and content, if this node can open it (in a room
    /// it has the key of, or in a conversation of its own) and it stands:
    /// the one validity every reader asks (the live screen, `/history`,
    /// `/search`, the page, the API, `--json`). What a revoked device signed
    /// and may not have (`Devices.isRevoked`) and a room post its author
    /// could not have written (`PrivateRooms.mayHaveWritten`) open nowhere.
    func open(_ envelope: Envelope) -> OpenedEnvelope? { open(envelope, keeping: false) }
    /// `keeping`: a public room's body kept for the show after an insert (`OpenedAhead`).
    func open(_ envelope: Envelope, keeping: Bool) -> OpenedEnvelope? {
        if devices.isRevoked(envelope) { return nil }
        return openBody(envelope, judged: true, keeping: keeping)
    }

    /// The kind and content whether or not the envelope stands: for taking
    /// out of the search index what was put in when it did.
    func openIgnoringStanding(_ envelope: Envelope) -> OpenedEnvelope? { openBody(envelope, judged: false) }

    // A body that does not open under a key is one this node cannot read (another room's, a forgery): nil is
    // the whole answer, the reason is not needed.
    private func openBody(_ envelope: Envelope, judged: Bool, keeping: Bool = false) -> OpenedEnvelope? {
        if privateRooms[envelope.room] != nil {
            // A private room: each of its keys, the current one first.
            for (epoch, key) in privateRooms.openingKeys(envelope.room) {
                guard let body = try? BodyCipher.openAny(envelope, key: key) else { continue }
                // Membership events are judged by the room's rules; posts by who held the key then.
                guard !judged || body.kind == .membership || privateRooms.mayHaveWritten(envelope, sealedAt: epoch) else { return nil }
                return OpenedEnvelope(kind: body.kind, content: body.content, peer: nil)
            }
            return nil
        }
        if let key = roomKey(envelope.room) {
            let fixedKey = roomNames[envelope.room] != nil && following.rooms[envelope.room] == nil  // by its name (`OpenedAhead`)
            if fixedKey, let kept = openedAhead.take(envelope) { return kept }
            guard let body = try? BodyCipher.openAny(envelope, key: key) else { return nil }
            let opened = OpenedEnvelope(kind: body.kind, content: body.content, peer: nil)
            if keeping, fixedKey { openedAhead.keep(opened, for: envelope) }
            return opened
        }
        guard let (peer, key) = conversations.room(of: envelope) else { return nil }
        if let kind = envelope.clearKind {
            guard let plain = try? key.open(envelope.body) else { return nil }
            return OpenedEnvelope(kind: kind, content: plain, peer: peer)
        }
        guard let body = try? SealedBody.open(envelope, key: key.conversationKey) else { return nil }
        return OpenedEnvelope(kind: body.kind, content: body.content, peer: peer)
    }

    /// If `envelope` is a direct message this node can read: the other party and the text.
    func direct(_ envelope: Envelope) -> (peer: PublicKey, text: PeerText)? {
        guard let opened = open(envelope), opened.isMessage, let peer = opened.peer else { return nil }
        return (peer, opened.text)
    }

    /// The key our envelopes in `room` are sealed with: a room's, or a conversation's.
    func sealingKey(for room: RoomID) -> SymmetricKey? {
        if let key = roomKey(room) { return key }
        guard let peer = conversations.peer(in: room) else { return nil }
        return conversations.conversation(with: peer)?.key.conversationKey
    }

    // MARK: linking a device (docs/PROTOCOL.md §15, "Linking a device")

    /// What this account hands a device it links: a certificate for
    /// `device` signed now, our nick, rooms, trust marks and blocks.
    func grant(for device: PublicKey, name: String) throws -> DeviceGrant {
        guard account == me else { throw NodeError.notAccountKey(account) }
        let (epoch, box) = try conversations.newestOwnKey()
        let certificate = try DeviceCertificate.issue(by: identity, for: device, name: name, at: Self.now(), epoch: epoch, conversationKey: box.publicKey)
        let privates = privateRooms.rooms.map { DeviceGrant.PrivateRoom(id: $0.key, key: $0.value.key.exportedBytes, name: $0.value.name) }
        let publics = roomNames.filter { privateRooms[$0.key] == nil }.map(\.value)
        // Our own nick passed the rules when it was set.
        return DeviceGrant(certificate: certificate, conversationSecret: box.exportedSecret, nick: nick.flatMap(Nick.checked), privateRooms: privates,
                           publicRooms: publics.sorted { $0.value < $1.value }, trusted: Array(people.trusted),
                           blocked: Array(try store.blockedIdentities()),
                           roomKeys: try store.roomKeys(),
                           olderSecrets: conversations.linkedKeys.filter { $0.epoch != epoch }.map { ($0.epoch, $0.pair.exportedSecret) })
    }

    /// Takes what an account handed this device: its rooms, keys, marks and
    /// blocks, then signs our claim (the first envelope we post as the
    /// account's device) and the account's nick.
    func accept(_ grant: DeviceGrant) throws {
        guard grant.certificate.device == me else { throw NodeError.notAccountKey(grant.certificate.account) }
        // What the grant gives is the account's already: nothing to tell the other devices.
        try following.applying {
            // A grant whose key is not one is refused whole: it came from our own account, broken.
            for room in grant.privateRooms where privateRooms[room.id] == nil {
                try privateRooms.add(room.id, name: room.name, key: try SymmetricKey(bytes: room.key))
                roomNames[room.id] = room.name
            }
            for k in grant.roomKeys where privateRooms[k.room] != nil {
                _ = try SymmetricKey(bytes: k.key)
                try store.saveRoomKey(k)
            }
            for name in grant.publicRooms { _ = try join(name) }
            for key in grant.trusted { try store.setTrusted(key, true, at: Self.now()) }
            for key in grant.blocked { try store.setBlocked(key, true, at: Self.now()) }
        }
        people.trusted = try store.trustedIdentities()
        let claim = try appendOwn(room: accountsRoom, kind: .device, content: grant.certificate.encoded, key: accountsKey)
        guard let opened = open(claim), acceptDeviceClaim(claim, opened) != nil else {
            throw NodeError.notAccountKey(grant.certificate.account)
        }
        // The account's conversation key, so this device opens conversations on its own.
        let repository = conversations.repository
        try repository.save(Store.ConversationKeyRow(account: grant.certificate.account, epoch: grant.certificate.epoch,
                                                     publicKey: grant.certificate.conversationKey, secret: grant.conversationSecret, claim: nil))
        for older in grant.olderSecrets where older.epoch != 0 {
            let pair = try BoxKeyPair(secretBytes: older.secret)
            try repository.save(Store.ConversationKeyRow(account: grant.certificate.account, epoch: older.epoch,
                                                         publicKey: pair.publicKey, secret: older.secret, claim: nil))
        }
        try conversations.reload()
        try privateRooms.loadRoomMemberships()
        if let nick = grant.nick { try post(nick.value, kind: .nick, in: .general) }
    }
}
