import ChatText
import Crypto
import Gossip
import NetworkText
import Store

/// Reactions and replies (issue 17; docs/PROTOCOL.md §5, "Edits, reactions
/// and replies"). Both name a message of anyone in the same room or
/// conversation, and depend on it, so every node delivers the message first.
extension Node {
    /// The message `/react` or `/reply` acts on: numbered `number` in `room`
    /// (`/history` shows the numbers), else the last one there, by anyone.
    func message(in room: RoomID, named name: String, number: Int?) throws -> Envelope {
        if let number {
            guard let stored = try store.envelope(numbered: number, in: room) else { throw NodeError.noMessageNumbered(number) }
            if stored.envelope.isPruned { throw NodeError.alreadyDeleted }
            guard open(stored.envelope)?.isMessage == true else { throw NodeError.noMessageNumbered(number) }
            return stored.envelope
        }
        for stored in try store.history(of: room, limit: Self.ownMessageSearch).reversed() where !stored.envelope.isPruned {
            if open(stored.envelope)?.isMessage == true { return stored.envelope }
        }
        throw NodeError.noMessageIn(name)
    }

    /// The message the API names by `id`: delivered, readable, a message, not deleted.
    func message(id: MessageID) throws -> Envelope {
        guard let e = try store.delivered(id: id)?.envelope else { throw NodeError.noMessageWithID(id) }
        let erased = try store.erasedBy(e.author, e.sequence) != nil
        if e.isPruned || erased { throw NodeError.alreadyDeleted }
        guard open(e)?.isMessage == true else { throw NodeError.noMessageWithID(id) }
        return e
    }

    /// `/react`: gives `reaction` to `target`, or takes it back if ours stands.
    @discardableResult
    func react(to target: Envelope, with reaction: String) throws -> Envelope {
        let content = try Reaction(target: MessageRef(target), reaction: reaction)
        guard let key = sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        return try appendOwn(room: target.room, kind: .reaction, content: content.encoded, key: key, requires: target)
    }

    /// `/reply`: `text` answering `target`.
    @discardableResult
    func reply(to target: Envelope, text: String) throws -> Envelope {
        guard let key = sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let reply = Reply(target: MessageRef(target), text: Array(text.utf8))
        return try appendOwn(room: target.room, kind: .reply, content: reply.encoded, key: key, requires: target)
    }

    /// A delivered reaction applied: the message it is on, the reaction,
    /// and whether it stands now. Nil when refused (the message is not here,
    /// is elsewhere, is deleted, is no message, or the reactor has
    /// `Reaction.maximumPerPersonAndMessage` others on it: counted as
    /// `reaction_refused`) or applied already.
    func acceptReaction(_ e: Envelope, _ opened: OpenedEnvelope) -> (target: Envelope, reaction: String, on: Bool)? {
        guard opened.kind == .reaction, let reaction = try? Reaction.decode(opened.content),
              let target = referenced(reaction.target, from: e) else {
            refusedReactions &+= 1
            return nil
        }
        let recorded: Store.ReactionOutcome
        do { recorded = try store.recordReaction(target: reaction.target, reactor: e.author, reaction: reaction.reaction, sequence: e.sequence) } catch {
            // A write that failed: not applied, and said (the reaction is not lost: it is stored, and applied again at the next join).
            storeFailures.failed("recording a reaction", error)
            return nil
        }
        switch recorded {
        case let .applied(on): return (target, reaction.reaction, on)
        case .alreadyApplied: return nil
        case .tooMany:
            refusedReactions &+= 1
            return nil
        }
    }

    /// Applies the edits and reactions a room held before this node could
    /// read it (they were delivered then, unopened), in delivery order, a
    /// page at a time. Ones applied already change nothing.
    func applyJoinedRoomActions(_ room: RoomID) {
        var after: Int64 = 0
        while let page = storeFailures.read("a room's edits and reactions", { try store.delivered(in: room, kinds: [.edit, .reaction], after: after, limit: Self.indexPage) }),
              let last = page.last {
            after = last.delivery
            for stored in page {
                guard let opened = open(stored.envelope) else { continue }
                if opened.kind == .edit { _ = acceptEdit(stored.envelope, opened) } else { _ = acceptReaction(stored.envelope, opened) }
            }
        }
    }

    /// The message `ref` names, if it is here, in `e`'s room, not deleted, and a message.
    func referenced(_ ref: MessageRef, from e: Envelope) -> Envelope? {
        guard let target = storeFailures.read("a message referred to", { try store.envelope(by: ref.author, sequence: ref.sequence) }), target.id == ref.id,
              target.room == e.room, !target.isPruned, storeFailures.read("an erasure", { try store.erasedBy(ref.author, ref.sequence) }) == nil,
              open(target)?.isMessage == true else { return nil }
        return target
    }

    /// The reactions standing on `e`, most given first.
    func reactions(to e: Envelope) -> [(reaction: String, by: [PublicKey])] {
        storeFailures.read("a message's reactions") { try store.reactions(to: e.author, sequence: e.sequence) } ?? []
    }

    /// What a reply shows of the message it answers (nil: `e` is no reply).
    func quote(of e: Envelope, _ opened: OpenedEnvelope) -> Quote? {
        guard opened.kind == .reply, let reply = try? Reply.decode(opened.content) else { return nil }
        let ref = reply.target
        if let target = referenced(ref, from: e), let o = open(target) { return Quote(target: ref, state: .here(currentText(of: target, opened: o).text)) }
        // Held here and in the room, but erased: deleted; anything else is not here (yet).
        guard let held = storeFailures.read("a message replied to", { try store.envelope(by: ref.author, sequence: ref.sequence) }), held.id == ref.id, held.room == e.room,
              held.isPruned || storeFailures.read("an erasure", { try store.erasedBy(ref.author, ref.sequence) }) != nil else { return Quote(target: ref, state: .missing) }
        return Quote(target: ref, state: .deleted)
    }
}

/// What a reply shows of the message it answers.
struct Quote {
    enum State {
        /// Its text now (the latest edit's).
        case here(PeerText)
        /// Not here yet (it fills in when it arrives), or in another room.
        case missing
        case deleted
    }

    /// Characters of the answered text a quote shows; longer ones end in "…".
    static let maximumCharacters = 48

    let target: MessageRef
    let state: State

    /// The answered text cut to `maximumCharacters` on one line (still to be sanitized).
    static func excerpt(_ text: String) -> String {
        let line = text.map { $0.isNewline ? " " : $0 }
        return line.count > maximumCharacters ? String(line.prefix(maximumCharacters - 1)) + "…" : String(line)
    }
}
