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

    /// The conversation with `peer` (one X25519 per peer, then cached); nil
    /// when `peer` is not a usable key.
    func conversation(with peer: PublicKey) -> Conversation? {
        if let known = conversations[peer] { return known }
        guard peer != me, let key = try? DirectKey(own: identity, peer: peer) else { return nil }
        let c = Conversation(key: key, room: RoomID.direct(key, network: network),
                             roomVersion1: RoomID.directVersion1(me, peer, network: network))
        conversations[peer] = c
        dmPeers[c.room] = peer
        dmPeers[c.roomVersion1] = peer
        return c
    }

    /// Signs and durably stores `content` of `kind` in the conversation with `peer`.
    @discardableResult
    func postDirect(_ content: [UInt8], kind: Kind, to peer: PublicKey) throws -> Envelope {
        guard let c = conversation(with: peer) else { throw NodeError.notSealable(peer) }
        return try appendOwn(room: c.room, kind: kind, content: content, key: c.key.conversationKey)
    }

    /// Maps the version-1 conversation room of every author this store
    /// knows (one hash each; again only once more authors are known). Enough
    /// to recognise an invite that names a conversation: a version-2 id can
    /// be computed only by its two parties, and the inviter's is checked
    /// directly (`forgedPrivateRoom`).
    func learnVersion1RoomsOfKnownAuthors() {
        guard let authors = try? store.vectorClock().entries.keys, authors.count != version1RoomsMapped else { return }
        version1RoomsMapped = authors.count
        for author in authors where author != me { dmPeers[RoomID.directVersion1(me, author, network: network)] = author }
    }

    /// Maps the conversations of every author this store knows, both
    /// versions (one X25519 each, cached; again only once more authors are
    /// known): for our own envelopes from before this run.
    private func learnConversationsOfKnownAuthors() {
        guard let authors = try? store.vectorClock().entries.keys, authors.count != conversationsMapped else { return }
        conversationsMapped = authors.count
        for author in authors { _ = conversation(with: author) }
    }

    /// The envelope's kind and content, if this node can open it: in a room
    /// it has the key of, or in a conversation of its own.
    func open(_ envelope: Envelope) -> OpenedEnvelope? {
        if let key = roomKey(envelope.room) {
            guard let body = try? BodyCipher.openAny(envelope, key: key) else { return nil }
            return OpenedEnvelope(kind: body.kind, content: body.content, peer: nil)
        }
        guard let peer = directPeer(of: envelope), let c = conversation(with: peer) else { return nil }
        if let kind = envelope.clearKind {
            guard let plain = try? c.key.open(envelope.body) else { return nil }
            return OpenedEnvelope(kind: kind, content: plain, peer: peer)
        }
        guard let body = try? SealedBody.open(envelope, key: c.key.conversationKey) else { return nil }
        return OpenedEnvelope(kind: body.kind, content: body.content, peer: peer)
    }

    /// The other party of a conversation of ours that `envelope` is in.
    private func directPeer(of envelope: Envelope) -> PublicKey? {
        if envelope.author != me {
            // Someone else's: only their conversation with us can be ours (cached, not a scan).
            guard let c = conversation(with: envelope.author), envelope.room == c.room || envelope.room == c.roomVersion1 else { return nil }
            return envelope.author
        }
        // Our own, from before this run: find the other party among the
        // authors we know, by a hash each (version 1) before an X25519 each.
        if dmPeers[envelope.room] == nil { learnVersion1RoomsOfKnownAuthors() }
        if dmPeers[envelope.room] == nil { learnConversationsOfKnownAuthors() }
        return dmPeers[envelope.room]
    }

    /// If `envelope` is a direct message this node can read: the other party and the text.
    func direct(_ envelope: Envelope) -> (peer: PublicKey, text: PeerText)? {
        guard let opened = open(envelope), opened.isMessage, let peer = opened.peer else { return nil }
        return (peer, opened.text)
    }
}
