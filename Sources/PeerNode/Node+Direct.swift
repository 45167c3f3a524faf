import NetworkText
import Crypto
import Gossip

/// What an envelope holds, once this node opened it.
struct OpenedEnvelope {
    let kind: Kind
    let content: [UInt8]
    /// The other party, when the envelope is in a direct conversation of ours.
    let peer: PublicKey?

    /// The content as text: it came from the network, so it prints only sanitized.
    /// For an edit or a reply, the text after the reference it starts with.
    var text: PeerText {
        let shown = (kind == .edit || kind == .reply) && content.count >= MessageRef.byteCount ? content.dropFirst(MessageRef.byteCount) : content[...]
        return PeerText(String(decoding: shown, as: UTF8.self))
    }
    /// The same message with another text (an edit's), a reply keeping its reference.
    func withText(_ text: String) -> OpenedEnvelope {
        let head = kind == .reply ? Array(content.prefix(MessageRef.byteCount)) : []
        return OpenedEnvelope(kind: kind, content: head + Array(text.utf8), peer: peer)
    }

    /// A message a person wrote: a text, `/me`, or a reply.
    var isMessage: Bool { kind == .text || kind == .action || kind == .reply }
}

/// Direct conversations. Since envelope version 2 a conversation's room id
/// and key come from the pair's X25519 shared key (`RoomID.direct`,
/// `DirectKey.conversationKey`), so nobody else can tell whose conversation
/// a room is; version-1 rooms (derived from the two public keys) are still
/// read, for what older nodes stored.
extension Node {
    /// One peer's conversation with us.
    struct Conversation {
        let key: DirectKey
        /// The room id of version 2, and the one version-1 envelopes used.
        let room: RoomID
        let roomVersion1: RoomID
    }

    /// The conversation we seal new messages to `peer`'s account in: our
    /// sending epoch and theirs (`Node+ConversationKeys.swift`), cached; nil
    /// when `peer` is us or not a usable key.
    func conversation(with peer: PublicKey) -> Conversation? {
        let other = people.account(peer)
        if let known = conversations[other] { return known }
        guard other != account else { return nil }
        mapConversations(with: other)
        guard let pair = ownBoxKeys[sendingEpoch], let theirs = boxPublic(of: other, epoch: sendingEpoch(of: other)),
              let key = try? DirectKey(own: pair, peerPublic: theirs, peer: other) else { return nil }
        let c = Conversation(key: key, room: RoomID.direct(key, network: network),
                             roomVersion1: RoomID.directVersion1(me, other, network: network))
        conversations[other] = c
        return c
    }

    /// Signs and stores `content` of `kind` in the conversation with `peer`.
    @discardableResult
    func postDirect(_ content: [UInt8], kind: Kind, to peer: PublicKey) throws -> Envelope {
        guard let c = conversation(with: peer) else { throw NodeError.notSealable(peer) }
        return try appendOwn(room: c.room, kind: kind, content: content, key: c.key.conversationKey, alsoRequires: sendingEpochDependency)
    }

    /// Maps the version-1 conversation room of every author this store
    /// knows (one hash each; again only once more authors are known). Enough
    /// to recognise an invite that names a conversation: a version-2 id can
    /// be computed only by its two parties, and the inviter's is checked
    /// directly (`forgedPrivateRoom`).
    func learnVersion1RoomsOfKnownAuthors() {
        guard let authors = storeFailures.read("the authors held", { try store.vectorClock().entries.keys }), authors.count != version1RoomsMapped else { return }
        version1RoomsMapped = authors.count
        for author in authors where author != me { dmPeers[RoomID.directVersion1(me, author, network: network)] = author }
    }

    /// Maps the conversations of the account of every author this store
    /// knows, every epoch pair (one X25519 each, cached; again only once
    /// more authors or epochs are known): for envelopes of ours, from any of
    /// our devices, whose other party is not known from the envelope.
    private func learnConversationsOfKnownAuthors() {
        guard let authors = storeFailures.read("the authors held", { try store.vectorClock().entries.keys }), authors.count != conversationsMapped else { return }
        conversationsMapped = authors.count
        for author in Set(authors.map { people.account($0) }) { mapConversations(with: author) }
    }

    /// The key our envelopes in `room` are sealed with: a room's, or a conversation's.
    func sealingKey(for room: RoomID) -> SymmetricKey? {
        if let key = roomKey(room) { return key }
        guard let peer = dmPeers[room] else { return nil }
        return conversation(with: peer)?.key.conversationKey
    }

    /// The envelope's kind and content, if this node can open it (in a room
    /// it has the key of, or in a conversation of its own) and it stands:
    /// the one validity every reader asks (the live screen, `/history`,
    /// `/search`, the page, the API, `--json`). What a revoked device signed
    /// and may not have (`isRevoked`) and a room post its author could not
    /// have written (`mayHaveWritten`) open nowhere.
    func open(_ envelope: Envelope) -> OpenedEnvelope? {
        if isRevoked(envelope) { return nil }
        return openBody(envelope, judged: true)
    }

    /// The kind and content whether or not the envelope stands: for taking
    /// out of the search index what was put in when it did.
    func openIgnoringStanding(_ envelope: Envelope) -> OpenedEnvelope? { openBody(envelope, judged: false) }

    private func openBody(_ envelope: Envelope, judged: Bool) -> OpenedEnvelope? {
        if privateRooms[envelope.room] != nil {
            // A private room: each of its keys, the current one first.
            for (epoch, key) in openingKeys(envelope.room) {
                guard let body = try? BodyCipher.openAny(envelope, key: key) else { continue }
                // Membership events are judged by the room's rules; posts by who held the key then.
                guard !judged || body.kind == .membership || mayHaveWritten(envelope, sealedAt: epoch) else { return nil }
                return OpenedEnvelope(kind: body.kind, content: body.content, peer: nil)
            }
            return nil
        }
        if let key = roomKey(envelope.room) {
            guard let body = try? BodyCipher.openAny(envelope, key: key) else { return nil }
            return OpenedEnvelope(kind: body.kind, content: body.content, peer: nil)
        }
        guard let (peer, key) = directRoom(of: envelope) else { return nil }
        if let kind = envelope.clearKind {
            guard let plain = try? key.open(envelope.body) else { return nil }
            return OpenedEnvelope(kind: kind, content: plain, peer: peer)
        }
        guard let body = try? SealedBody.open(envelope, key: key.conversationKey) else { return nil }
        return OpenedEnvelope(kind: body.kind, content: body.content, peer: peer)
    }

    /// The other party (an account) and the key of a conversation of ours that `envelope` is in.
    private func directRoom(of envelope: Envelope) -> (peer: PublicKey, key: DirectKey)? {
        if let known = directRooms[envelope.room] { return known }
        let author = people.account(envelope.author)
        if author != account {
            // Someone else's: only their account's conversations with ours can be ours.
            mapConversations(with: author)
            return directRooms[envelope.room]
        }
        // One of our devices': the other party is among the accounts we know.
        learnConversationsOfKnownAuthors()
        return directRooms[envelope.room]
    }

    /// If `envelope` is a direct message this node can read: the other party and the text.
    func direct(_ envelope: Envelope) -> (peer: PublicKey, text: PeerText)? {
        guard let opened = open(envelope), opened.isMessage, let peer = opened.peer else { return nil }
        return (peer, opened.text)
    }
}
