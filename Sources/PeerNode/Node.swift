import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Where the data directory is: `--data-dir`, else `$XDG_DATA_HOME/peernode`,
/// else `$HOME/.local/share/peernode` (XDG Base Directory Specification).
func resolveDataDirectory(_ options: Options, environment: [String: String]) -> String? {
    if let dir = options.dataDirectory { return dir }
    if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/peernode" }
    if let home = environment["HOME"], !home.isEmpty { return home + "/.local/share/peernode" }
    return nil
}

/// A running node: identity, network key, store, and the chat operations
/// on top of them. One owner (the chat loop) uses it.
final class Node: EnvelopeOpening, OwnPosting {
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
    /// The network's accounts room (device claims) and its key: every node reads it.
    let accountsRoom: RoomID
    let accountsKey: SymmetricKey
    /// Device claims refused by `acceptDeviceClaim` (counted as `device_refused`).
    var refusedDeviceClaims = 0
    /// Revocations held (`Node+Revocation.swift`), and the limit each revoked device has.
    var revocationRows: Set<Store.RevocationRow> = []
    var revokedAfter: [PublicKey: UInt64] = [:]
    /// For a revoked device, the envelope its revocations name as the last
    /// accepted (`Node.namedHeads`), and its chain as far down from there as
    /// this node can follow it (`namedChains`).
    var revokedHeads: [PublicKey: (sequence: UInt64, id: MessageID)] = [:]
    var namedChains: [PublicKey: NamedChain] = [:]
    /// The limit last shown for each revoked device (`revocationIsNews`).
    var shownRevocationLimits: [PublicKey: UInt64] = [:]
    /// Revocations refused (`revoke_refused`), and envelopes of revoked devices not shown (`revoked_refused`).
    var refusedRevocations = 0
    var refusedRevoked = 0
    /// Refilings of a revoked device's envelopes that the store failed (`revoked_filing_failed`).
    var refusedFilingFailures = 0
    /// Store failures where the caller cannot throw, counted and said (`StoreFailures`).
    let storeFailures = StoreFailures()
    /// Whether our own history is safe from reusing a sequence number (`OwnDurability`).
    let ownDurability: OwnDurability
    /// Edits and deletes, and which message a command names (`Units/MessageLife`).
    private(set) lazy var messageLife = MessageLife(repository: .init(store: store), envelopes: self, author: self, failures: storeFailures)
    /// Reactions and replies (`Units/Reactions`).
    private(set) lazy var reactions = Reactions(repository: .init(store: store), messages: messageLife, envelopes: self, author: self, failures: storeFailures)
    /// Posts in a private room sealed with the key of an epoch their author's
    /// account was not a member in, each time one was opened (`room_post_refused`).
    var refusedRoomPosts = 0
    /// Conversation-key announcements refused (`rekey_refused`).
    var refusedRekeys = 0
    /// Delivered membership events that did not hold (§14's rules), not
    /// shown (`membership_refused`).
    var refusedMembership = 0

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
        try store.checkpointInBackground()
        for (id, name) in try store.namedRooms() {
            if let room = try? RoomName(name) { roomNames[id] = room }
        }
        for (id, name, key) in try store.privateRooms() {
            if let room = try? RoomName(name), let secret = try? SymmetricKey(bytes: key) { privateRooms[id] = (room, secret) }
        }
        // Rows hold each envelope's kind where this node can open it.
        store.kindOf = { [weak self] in self?.open($0)?.kind }
        // A revoked device erases nothing past its limit: a thief with its key cannot take back its owner's words.
        store.honoursErasures = { [weak self] in !(self?.isRevoked($0) ?? false) }
        // What was indexed when it stood comes out whatever its standing now.
        store.indexedText = { [weak self] in self?.messageLife.indexedText(of: $0, standing: false) }
        try loadAccounts()
        try loadRevocations()
        try reloadConversationKeys()
        try loadRoomMemberships()
        try loadNicks()
        repairs = try repairPrivateRooms()
        people.trusted = try store.trustedIdentities()
        people.forked = Set(try store.forks().map(\.author))
    }

    var me: PublicKey { identity.publicKey }

    /// Said at start, in `--help` and in README (issue 13, finding 12).
    static func openNetworkWarning(_ name: String) -> String {
        "network \(name) is open: anyone on this LAN can join it, read its public rooms and see who is here. "
            + "For a private network: peernode network new FILE, copy FILE to each machine, start each with --network-key-file FILE"
    }

    /// Called before every new envelope of ours is signed: the network node
    /// refuses while our own history may still be elsewhere (no sequence
    /// number is ever used twice).
    var postingGate: (() throws -> Void)?

    /// Leaves a room by name: it is no longer shown or listed, and its texts
    /// leave the search index.
    func leave(_ name: RoomName) throws {
        let id = roomID(name)
        try unindexLeftRoom(id)
        roomNames[id] = nil
        try store.forgetRoomName(id)
        if privateRooms[id] == nil { try follow(.parted(name)) }
    }

    /// Names of the public rooms this node knows, for completion.
    var knownRooms: [String] { roomNames.values.map(\.value).sorted() }

    /// A private room we are in wins over the public room of the same name.
    func roomID(_ name: RoomName) -> RoomID {
        privateRooms.first { $0.value.name == name }?.key ?? RoomID.publicRoom(name, network: network)
    }

    /// The key of a room we know: a private room's own, or the public one derived from its name.
    func roomKey(_ id: RoomID) -> SymmetricKey? {
        if let own = privateRooms[id] { return roomPostingKeys[id] ?? own.key }
        if let own = ownRooms[id] { return own }
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

    /// Conversation room (either version) → the other party, for every peer mapped so far.
    var dmPeers: [RoomID: PublicKey] = [:]
    /// Conversation rooms recorded in the store this run (`rememberConversation`).
    var rememberedConversations: Set<RoomID> = []
    /// Each peer's conversation with us (`Node+Direct.swift`).
    var conversations: [PublicKey: Conversation] = [:]
    /// How many known authors were mapped by a hash (version-1 rooms) and by
    /// an X25519 (conversations) (`Node+Direct.swift`).
    var version1RoomsMapped = 0
    var conversationsMapped = 0

    /// Our account's conversation keys by epoch, the public keys other
    /// accounts announced, and the conversation rooms mapped so far
    /// (`Node+ConversationKeys.swift`).
    var ownBoxKeys: [UInt32: BoxKeyPair] = [:]
    var announcedBoxKeys: [PublicKey: [UInt32: (publicKey: [UInt8], claim: Dependency)]] = [:]
    var directRooms: [RoomID: (peer: PublicKey, key: DirectKey)] = [:]
    var mappedPairs: Set<MappedPair> = []

    /// Private rooms' membership (`Node+RoomMembership.swift`): the state
    /// of each room that has a create event, every key held by the event
    /// that made it, and the key posts are sealed with now.
    var memberships: [RoomID: RoomMembership] = [:]
    var roomEpochKeys: [RoomID: [MessageID: (epoch: UInt32, key: SymmetricKey)]] = [:]
    var roomPostingKeys: [RoomID: SymmetricKey] = [:]
    /// Membership events already opened and decoded, by id (`recomputeMembership`).
    var openedMembershipEvents: [MessageID: MembershipEvent] = [:]
    /// The account's own rooms (`Node+Following.swift`), by id, and whether
    /// a change being made follows another device's (then it is not said again).
    var ownRooms: [RoomID: SymmetricKey] = [:]
    var applyingFollow = false

    /// Private rooms we are in: id → name and key (the room's first key).
    var privateRooms: [RoomID: (name: RoomName, key: SymmetricKey)] = [:]

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
            try indexJoinedRoom(id)
            applyJoinedRoomActions(id)
        }
        return id
    }

    /// Applies the edits and reactions a room held before this node could
    /// read it (they were delivered then, unopened), in delivery order, a
    /// page at a time. Ones applied already change nothing.
    private func applyJoinedRoomActions(_ room: RoomID) {
        var after: Int64 = 0
        while let page = storeFailures.read("a room's edits and reactions", { try store.delivered(in: room, kinds: [.edit, .reaction], after: after, limit: Self.indexPage) }),
              let last = page.last {
            after = last.delivery
            for stored in page {
                guard let opened = open(stored.envelope) else { continue }
                if opened.kind == .edit { _ = messageLife.acceptEdit(stored.envelope, opened) } else { _ = reactions.accept(stored.envelope, opened) }
            }
        }
    }

    /// Takes a room's texts out of the search index while its key is still
    /// known: the index must be told a text to forget it, and a message
    /// erased after we left could not be opened then. Joining again indexes
    /// the room anew (`indexJoinedRoom`).
    private func unindexLeftRoom(_ id: RoomID) throws {
        try eachTextPage({ try store.indexed(in: id, after: $0, limit: Self.indexPage) }, store.unindex(rows:))
    }

    /// Indexes for /search what a room held before this node could read it
    /// (the index passed it by then), a page at a time.
    private func indexJoinedRoom(_ id: RoomID) throws {
        try eachTextPage({ try store.unindexed(in: id, after: $0, limit: Self.indexPage) }, store.index(rows:))
    }

    /// Hands `apply` the indexed texts (`indexedText`) of the envelopes
    /// `page` gives out, a page at a time, by row after the last one.
    private func eachTextPage(_ page: (Int64) throws -> [(rowid: Int64, envelope: Envelope)],
                              _ apply: ([(rowid: Int64, text: String)]) throws -> Void) throws {
        var after: Int64 = 0
        while true {
            let rows = try page(after)
            guard let last = rows.last else { return }
            after = last.rowid
            try apply(rows.compactMap { row in messageLife.indexedText(of: row.envelope).map { (row.rowid, $0) } })
        }
    }

    // MARK: posting

    /// Signs and stores a new envelope of ours (fsynced before return, or
    /// after the send where `OwnDurability.sendsBeforeSync`).
    @discardableResult
    func post(_ text: String, kind: Kind, in room: RoomName) throws -> Envelope {
        let id = try join(room)
        if let state = memberships[id], state.head != nil, state.roles[account] == nil { throw NodeError.notAMember }
        guard mayPost(in: id) else { throw NodeError.waitingForNewKey(room) }
        guard let key = roomKey(id) else { throw NodeError.noRoomKey(room) }
        let envelope = try appendOwn(room: id, kind: kind, content: Array(text.utf8), key: key)
        if kind == .nick { setNick(PeerText(text), of: me) }
        return envelope
    }

    /// Signs and stores a receipt in a room (sealed with its key) or
    /// a direct conversation (with the other party's conversation key).
    @discardableResult
    func postReceipt(_ receipt: Receipt, in room: RoomID) throws -> Envelope {
        if let key = roomKey(room) { return try appendOwn(room: room, kind: .receipt, content: receipt.encoded, key: key) }
        guard let peer = dmPeers[room] else { throw NodeError.receiptRoomNotWritable }
        return try postDirect(receipt.encoded, kind: .receipt, to: peer)
    }

    /// Signs and stores a direct message to `peer` (a text, or an action: `/me`).
    @discardableResult
    func postDirect(_ text: String, to peer: PublicKey, kind: Kind = .text) throws -> Envelope {
        try postDirect(Array(text.utf8), kind: kind, to: peer)
    }

    /// Finds who `/msg` means: a 64-hex id, `nick·fp`, or a nick that only one known author uses.
    func resolve(_ who: String) throws -> PublicKey {
        if who.count == 64, let key = try? PublicKey(hex: who) { return key }
        var candidates = Array(Set(nicks.compactMap { $0.value.unsanitized == who ? $0.key : nil }))
        if candidates.isEmpty, let dot = who.firstIndex(of: "·") {
            let nick = String(who[..<dot]), fp = String(who[who.index(after: dot)...])
            candidates = nicks.compactMap { $0.value.unsanitized == nick && $0.key.shortFingerprint == fp ? $0.key : nil }
        }
        guard candidates.count == 1, let key = candidates.first else {
            throw candidates.isEmpty ? NodeError.nobodyKnownAs(who) : NodeError.ambiguous(who, candidates: candidates)
        }
        return key
    }

    /// The next envelope of our own chain (sequence, previous hash and
    /// dependencies from the store), `content` of `kind` sealed under `key`
    /// (kind inside, padded), `erases` naming earlier envelopes of ours to
    /// erase, signed (version 3) and stored (durably, or synced after the send). `requires`: a message
    /// it refers to (a reaction's, a reply's), named among its dependencies
    /// so that every node delivers that message first.
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64] = [],
                   requires: Envelope? = nil, alsoRequires: Dependency? = nil) throws -> Envelope {
        // Sealed first: content over the limit is refused before the gate counts a post.
        let body = try SealedBody.seal(kind: kind, content: content, key: key, author: me, room: room)
        try postingGate?()
        let head = try store.head(of: me)
        let envelope = try Envelope.sign(
            by: identity, sequence: (head?.sequence ?? 0) + 1, previous: head?.id ?? .zero,
            dependencies: dependencies(dependencies(try store.dependenciesForNextPost(by: me), requiring: requires.map { Dependency(author: $0.author, sequence: $0.sequence) }),
                                       requiring: alsoRequires),
            timestamp: Self.now(), room: room, erases: erases, body: body)
        _ = try store.insertOwn(envelope, at: Self.now(), durable: !ownDurability.sendsBeforeSync)
        return envelope
    }

    /// `found` with `required`'s author at its sequence at least (one of
    /// ours needs none: our chain orders it), within `Envelope.maximumDependencies`.
    func dependencies(_ found: [Dependency], requiring required: Dependency?) -> [Dependency] {
        guard let required, required.author != me else { return found }
        var out = found.filter { $0.author != required.author }
        let held = found.first { $0.author == required.author }?.sequence ?? 0
        if out.count >= Envelope.maximumDependencies { out.removeLast(out.count - Envelope.maximumDependencies + 1) }
        out.append(Dependency(author: required.author, sequence: max(held, required.sequence)))
        return out
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

    /// Most messages indexed for `/search` on one tick: small, because the
    /// tick runs on the link loop (a long history is indexed over many
    /// seconds, or all at once when someone searches).
    static let indexPerTick = 500
    /// Most envelope bytes indexed in one go: the envelopes read back, their
    /// texts and SQLite's full-text terms all sit in memory until the
    /// transaction ends. 500 messages of 60 KB (a burst that just passed)
    /// took the node from 42 to 133 MB at once; counted in bytes too, a
    /// batch stays near this.
    static let indexBytes = 256 << 10
    /// Most messages indexed in one go when a search needs the index complete.
    static let indexBatch = 10_000
    /// Envelopes read back from the store at a time while indexing.
    static let indexPage = 64

    /// Adds what was delivered since the last call to the search index
    /// (texts, actions and direct messages this node can read), up to
    /// `limit` envelopes or `indexBytes` of them (at least one). Returns how
    /// many envelopes it looked at: 0 once the index is complete.
    @discardableResult
    func indexNewMessages(limit: Int = Node.indexPerTick) throws -> Int {
        var through = try store.indexedThrough()
        var texts: [(author: PublicKey, sequence: UInt64, text: String)] = []
        var count = 0, bytes = 0
        reading: while count < limit, bytes < Self.indexBytes {
            let page = try store.delivered(after: through, limit: min(Self.indexPage, limit - count))
            guard !page.isEmpty else { break }
            for stored in page {
                let e = stored.envelope
                count += 1
                bytes += e.encoded.count
                through = stored.delivery
                if let text = messageLife.indexedText(of: e) { texts.append((e.author, e.sequence, text)) }
                if bytes >= Self.indexBytes { break reading }
            }
        }
        guard count > 0 else { return 0 }
        try store.index(texts, through: through)
        return count
    }

    /// `/search`: matching messages this node can read, most recent first.
    func search(_ query: String, limit: Int) throws -> [StoredEnvelope] {
        while try indexNewMessages(limit: Self.indexBatch) > 0 {}
        // A blocked identity's messages stay hidden here too.
        let blocked = try store.blockedIdentities()
        // A match in an edit is its message, listed once.
        var seen = Set<MessageID>()
        return try store.search(query, limit: limit).compactMap(messageLife.matchedMessage).filter {
            !blocked.contains($0.envelope.author) && seen.insert($0.envelope.id).inserted
        }
    }

    /// How many index matches `/mentions` looks at for each it shows: the
    /// index also finds our own messages and `bob x` for `bob-x`, which the
    /// rule then leaves out.
    static let mentionCandidates = 4

    /// Messages (newest first, at most `limit`) from others that name our
    /// nick as a word (`Mentions`): the index finds the word, the rule
    /// keeps what names it whole.
    func mentions(limit: Int) throws -> [StoredEnvelope] {
        guard let nick, !nick.isEmpty else { return [] }
        return try search(nick, limit: limit * Self.mentionCandidates).filter { stored in
            stored.envelope.author != me && messageLife.openedNow(stored.envelope).map { $0.opened.isMessage && Mentions.names(nick, in: $0.opened.text.unsanitized) } == true
        }.prefix(limit).map { $0 }
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
    private func setNick(_ text: PeerText, of author: PublicKey) {
        guard let valid = try? Nick(text.unsanitized) else {
            refusedNicks &+= 1
            return
        }
        // A device's nick is its account's.
        let account = people.account(author)
        people.nicks[account] = PeerText(valid.value)
        confusables.set(account, nick: valid.value)
        people.lookAlike = confusables.suspicious
    }
}
