import ChatText
import Crypto
import Gossip
import NetworkText
import Store

/// Editing and deleting messages (issue 17; docs/PROTOCOL.md §5, "Edits,
/// reactions and replies", and §4, "Erasure"). An edit is a new envelope
/// naming its original; a delete is a tombstone whose clear erase list
/// makes every node, relays included, drop the bodies of the original and
/// of its edits.
extension Node {
    /// How far back `/edit` and `/delete` without a number look for our last message.
    static let ownMessageSearch = 500

    /// The message `/edit` or `/delete` acts on: numbered `number` in `room`
    /// (`/history` shows the numbers), else our last message there; `name`
    /// says where that is (a room's name, or a conversation) in a refusal.
    func ownMessage(in room: RoomID, named name: String, number: Int?) throws -> Envelope {
        if let number {
            guard let stored = try store.envelope(numbered: number, in: room) else { throw NodeError.noMessageNumbered(number) }
            let e = stored.envelope
            if e.isPruned { throw NodeError.alreadyDeleted }
            guard let opened = open(e), opened.isMessage else { throw NodeError.noMessageNumbered(number) }
            guard e.author == me else { throw NodeError.notYourMessage(number) }
            return e
        }
        for stored in try store.history(of: room, limit: Self.ownMessageSearch).reversed() where stored.envelope.author == me {
            if !stored.envelope.isPruned, let opened = open(stored.envelope), opened.isMessage { return stored.envelope }
        }
        throw NodeError.noOwnMessage(name)
    }

    /// The message of ours the API names by `id` (for an edit or a delete).
    func ownMessage(id: MessageID) throws -> Envelope {
        let e = try message(id: id)
        guard e.author == me else { throw NodeError.notYourMessageID }
        return e
    }

    /// The key our envelopes in `room` are sealed with: a room's, or a conversation's.
    func sealingKey(for room: RoomID) -> SymmetricKey? {
        if let key = roomKey(room) { return key }
        guard let peer = dmPeers[room] else { return nil }
        return conversation(with: peer)?.key.conversationKey
    }

    /// `/delete`: a tombstone erasing `target` and every edit of it.
    @discardableResult
    func deleteMessage(_ target: Envelope) throws -> Envelope {
        guard target.version >= 3 else { throw NodeError.cannotErase(version: target.version) }
        guard !target.isPruned, try store.erasedBy(me, target.sequence) == nil else { throw NodeError.alreadyDeleted }
        guard let key = sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let erases = [target.sequence] + (try store.edits(by: me, of: target.sequence))
        return try appendOwn(room: target.room, kind: .tombstone, content: [], key: key, erases: erases)
    }

    /// `/edit`: a new text for `target`, which stays where it was in the room.
    @discardableResult
    func editMessage(_ target: Envelope, text: String) throws -> Envelope {
        guard !target.isPruned, try store.erasedBy(me, target.sequence) == nil else { throw NodeError.alreadyDeleted }
        guard try store.edits(by: me, of: target.sequence).count < MessageEdit.maximumPerMessage else {
            throw NodeError.tooManyEdits(limit: MessageEdit.maximumPerMessage)
        }
        guard let key = sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let edit = MessageEdit(original: MessageRef(target), text: Array(text.utf8))
        return try appendOwn(room: target.room, kind: .edit, content: edit.encoded, key: key)
    }

    /// A delivered edit: the original it changes, recorded, if the edit is
    /// valid (by the original's author, of a text or action of the same
    /// room that is not deleted, within `MessageEdit.maximumPerMessage`);
    /// else nil, and counted (`edit_refused`).
    func acceptEdit(_ e: Envelope, _ opened: OpenedEnvelope) -> Envelope? {
        guard opened.kind == .edit, let edit = try? MessageEdit.decode(opened.content),
              edit.original.author == e.author, edit.original.sequence < e.sequence,
              let original = referenced(edit.original, from: e),
              let earlier = storeFailures.read("a message's edits", { try store.edits(by: e.author, of: original.sequence) }) else {
            refusedEdits &+= 1
            return nil
        }
        guard earlier.contains(e.sequence) || earlier.count < MessageEdit.maximumPerMessage else {
            refusedEdits &+= 1
            return nil
        }
        do { try store.recordEdit(by: e.author, original: original.sequence, edit: e.sequence) } catch { return nil }
        return original
    }

    /// Every version of a message, oldest first: the original, then each
    /// accepted edit (the envelope, and the text it gave).
    func versions(of original: Envelope) -> [(envelope: Envelope, text: PeerText)] {
        guard let opened = open(original), opened.isMessage else { return [] }
        let edits = (storeFailures.read("a message's edits") { try store.edits(by: original.author, of: original.sequence) } ?? []).compactMap { sequence -> (Envelope, PeerText)? in
            guard let edit = storeFailures.read("an edit", { try store.envelope(by: original.author, sequence: sequence) }), let o = open(edit),
                  let parsed = try? MessageEdit.decode(o.content) else { return nil }
            return (edit, PeerText(String(decoding: parsed.text, as: UTF8.self)))
        }
        return [(original, opened.text)] + edits
    }

    /// The text a message shows now: its latest edit's, if it has one.
    func currentText(of original: Envelope, opened: OpenedEnvelope) -> (text: PeerText, edited: Bool) {
        guard let last = storeFailures.read("a message's edits", { try store.edits(by: original.author, of: original.sequence) })?.last,
              let edit = storeFailures.read("an edit", { try store.envelope(by: original.author, sequence: last) }), let o = open(edit),
              let parsed = try? MessageEdit.decode(o.content) else { return (opened.text, false) }
        return (PeerText(String(decoding: parsed.text, as: UTF8.self)), true)
    }

    /// An envelope opened as it reads now: a message with its latest
    /// edit's text (`edited`); nil when this node cannot read it.
    func openedNow(_ e: Envelope) -> (opened: OpenedEnvelope, edited: Bool)? {
        guard let o = open(e) else { return nil }
        guard o.isMessage else { return (o, false) }
        let (text, edited) = currentText(of: e, opened: o)
        return (edited ? o.withText(text.unsanitized) : o, edited)
    }

    /// The message an index match stands for: an edit's match is its
    /// original (shown as it reads now); anything else is itself.
    func matchedMessage(_ stored: StoredEnvelope) -> StoredEnvelope? {
        // What does not stand (a revoked device's, a post its author could not have written) is found by nobody.
        guard let o = open(stored.envelope) else { return nil }
        guard o.kind == .edit else { return stored }
        guard let edit = try? MessageEdit.decode(o.content), let original = storeFailures.read("an edited message", { try store.delivered(id: edit.original.id) }),
              original.envelope.author == stored.envelope.author else { return nil }
        return original
    }

    /// The text `/search` indexes for an envelope (messages and edits), and
    /// what an erasure takes out of the index again: one function for both.
    func indexedText(of e: Envelope, standing: Bool = true) -> String? {
        guard let opened = standing ? open(e) : openIgnoringStanding(e) else { return nil }
        if opened.isMessage { return opened.text.unsanitized }
        if opened.kind == .edit, let edit = try? MessageEdit.decode(opened.content) { return String(decoding: edit.text, as: UTF8.self) }
        return nil
    }

    /// The ids of the envelopes a tombstone erased that this node holds.
    func erasedIDs(by tombstone: Envelope) -> [MessageID] {
        tombstone.erases.compactMap { sequence in storeFailures.read("an erased envelope") { try store.envelope(by: tombstone.author, sequence: sequence) }?.id }
    }
}
