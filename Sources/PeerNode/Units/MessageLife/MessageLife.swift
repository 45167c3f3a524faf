import ChatText
import Crypto
import Gossip
import NetworkText
import Store

/// Editing and deleting messages (issue 17; docs/PROTOCOL.md §5, "Edits,
/// reactions and replies", and §4, "Erasure"), and which message a command
/// or a reference names. An edit is a new envelope naming its original; a
/// delete is a tombstone whose clear erase list makes every node, relays
/// included, drop the bodies of the original and of its edits.
///
/// Given the store (`MessageLifeRepository`), the node's one validity
/// check and our chain; owns nothing else. Reads that cannot throw (a line
/// being shown) go through `failures`, and show the message as first
/// written when the store fails. Confined to the node's loop.
final class MessageLife {
    /// How far back `/edit` and `/delete` without a number look for our last message.
    static let ownMessageSearch = 500

    private let repository: MessageLifeRepository
    private unowned let envelopes: any EnvelopeOpening
    private unowned let author: any OwnPosting
    private let failures: StoreFailures
    /// Edits refused by `acceptEdit` (counted as `edit_refused`).
    private(set) var refusedEdits = 0

    init(repository: MessageLifeRepository, envelopes: any EnvelopeOpening, author: any OwnPosting, failures: StoreFailures) {
        self.repository = repository
        self.envelopes = envelopes
        self.author = author
        self.failures = failures
    }

    private var me: PublicKey { author.me }

    // MARK: the message a command names

    /// The message `/edit` or `/delete` acts on: numbered `number` in `room`
    /// (`/history` shows the numbers), else our last message there; `name`
    /// says where that is (a room's name, or a conversation) in a refusal.
    func ownMessage(in room: RoomID, named name: String, number: Int?) throws -> Envelope {
        if let number {
            let e = try message(in: room, named: name, number: number)
            guard e.author == me else { throw NodeError.notYourMessage(number) }
            return e
        }
        for stored in try repository.recent(in: room, limit: Self.ownMessageSearch).reversed() where stored.envelope.author == me {
            if !stored.envelope.isPruned, envelopes.open(stored.envelope)?.isMessage == true { return stored.envelope }
        }
        throw NodeError.noOwnMessage(name)
    }

    /// The message of ours the API names by `id` (for an edit or a delete).
    func ownMessage(id: MessageID) throws -> Envelope {
        let e = try message(id: id)
        guard e.author == me else { throw NodeError.notYourMessageID }
        return e
    }

    /// The message `/react` or `/reply` acts on: numbered `number` in `room`
    /// (`/history` shows the numbers), else the last one there, by anyone.
    func message(in room: RoomID, named name: String, number: Int?) throws -> Envelope {
        if let number {
            guard let stored = try repository.numbered(number, in: room) else { throw NodeError.noMessageNumbered(number) }
            if stored.envelope.isPruned { throw NodeError.alreadyDeleted }
            guard envelopes.open(stored.envelope)?.isMessage == true else { throw NodeError.noMessageNumbered(number) }
            return stored.envelope
        }
        for stored in try repository.recent(in: room, limit: Self.ownMessageSearch).reversed() where !stored.envelope.isPruned {
            if envelopes.open(stored.envelope)?.isMessage == true { return stored.envelope }
        }
        throw NodeError.noMessageIn(name)
    }

    /// The message the API names by `id`: delivered, readable, a message, not deleted.
    func message(id: MessageID) throws -> Envelope {
        guard let e = try repository.delivered(id: id)?.envelope else { throw NodeError.noMessageWithID(id) }
        if e.isPruned { throw NodeError.alreadyDeleted }
        if try repository.isErased(e.author, e.sequence) { throw NodeError.alreadyDeleted }
        guard envelopes.open(e)?.isMessage == true else { throw NodeError.noMessageWithID(id) }
        return e
    }

    /// The message `ref` names, if it is here, in `e`'s room, not deleted,
    /// and a message. A failed read counts as not here (and is said).
    func referenced(_ ref: MessageRef, from e: Envelope) -> Envelope? {
        failures.read { () throws(RepositoryError) -> Envelope? in
            guard let target = try repository.envelope(by: ref.author, sequence: ref.sequence), target.id == ref.id,
                  target.room == e.room, !target.isPruned else { return nil }
            guard try !repository.isErased(ref.author, ref.sequence), envelopes.open(target)?.isMessage == true else { return nil }
            return target
        }
    }

    /// Whether `ref` names a message held here in `e`'s room that was deleted
    /// (nil: the store failed, and that is said).
    func isDeleted(_ ref: MessageRef, from e: Envelope) -> Bool? {
        failures.read { () throws(RepositoryError) -> Bool in
            guard let held = try repository.envelope(by: ref.author, sequence: ref.sequence), held.id == ref.id, held.room == e.room else { return false }
            if held.isPruned { return true }
            return try repository.isErased(ref.author, ref.sequence)
        }
    }

    // MARK: ours

    /// `/delete`: a tombstone erasing `target` and every edit of it.
    @discardableResult
    func delete(_ target: Envelope) throws -> Envelope {
        guard target.version >= 3 else { throw NodeError.cannotErase(version: target.version) }
        if target.isPruned { throw NodeError.alreadyDeleted }
        if try repository.isErased(me, target.sequence) { throw NodeError.alreadyDeleted }
        guard let key = author.sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let erases = [target.sequence] + (try repository.edits(by: me, of: target.sequence))
        return try author.appendOwn(room: target.room, kind: .tombstone, content: [], key: key, erases: erases)
    }

    /// `/edit`: a new text for `target`, which stays where it was in the room.
    @discardableResult
    func edit(_ target: Envelope, text: String) throws -> Envelope {
        if target.isPruned { throw NodeError.alreadyDeleted }
        if try repository.isErased(me, target.sequence) { throw NodeError.alreadyDeleted }
        guard try repository.edits(by: me, of: target.sequence).count < MessageEdit.maximumPerMessage else {
            throw NodeError.tooManyEdits(limit: MessageEdit.maximumPerMessage)
        }
        guard let key = author.sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let edit = MessageEdit(original: MessageRef(target), text: Array(text.utf8))
        return try author.appendOwn(room: target.room, kind: .edit, content: edit.encoded, key: key)
    }

    // MARK: delivered

    /// A delivered edit: the original it changes, recorded, if the edit is
    /// valid (by the original's author, of a text or action of the same
    /// room that is not deleted, within `MessageEdit.maximumPerMessage`);
    /// else nil, and counted (`edit_refused`). A store that fails is said,
    /// and the edit is not applied (it is stored, and applied again when
    /// the room is next joined).
    func acceptEdit(_ e: Envelope, _ opened: OpenedEnvelope) -> Envelope? {
        guard let edit = Self.edit(in: opened),
              edit.original.author == e.author, edit.original.sequence < e.sequence,
              let original = referenced(edit.original, from: e) else {
            refusedEdits &+= 1
            return nil
        }
        return failures.read { () throws(RepositoryError) -> Envelope? in
            let earlier = try repository.edits(by: e.author, of: original.sequence)
            guard earlier.contains(e.sequence) || earlier.count < MessageEdit.maximumPerMessage else {
                refusedEdits &+= 1
                return nil
            }
            try repository.recordEdit(by: e.author, original: original.sequence, edit: e.sequence)
            return original
        }
    }

    /// The edit an opened envelope carries, or nil when it is no edit or
    /// its content does not decode. Content that does not decode is the
    /// author's fault (an edit refused and counted when delivered; one
    /// shown, found or indexed nowhere after), so why it fails is not needed.
    static func edit(in opened: OpenedEnvelope) -> MessageEdit? {
        guard opened.kind == .edit else { return nil }
        return try? MessageEdit.decode(opened.content)
    }

    // MARK: as it reads now

    /// Every version of a message, oldest first: the original, then each
    /// accepted edit (the envelope, and the text it gave).
    func versions(of original: Envelope) -> [(envelope: Envelope, text: PeerText)] {
        guard let opened = envelopes.open(original), opened.isMessage else { return [] }
        let edits = failures.read { () throws(RepositoryError) -> [(envelope: Envelope, text: PeerText)] in
            var found: [(envelope: Envelope, text: PeerText)] = []
            for sequence in try repository.edits(by: original.author, of: original.sequence) {
                if let edit = try repository.envelope(by: original.author, sequence: sequence), let text = editedText(edit) { found.append((edit, text)) }
            }
            return found
        } ?? []
        return [(original, opened.text)] + edits
    }

    /// The text a message shows now: its latest edit's, if it has one.
    func currentText(of original: Envelope, opened: OpenedEnvelope) -> (text: PeerText, edited: Bool) {
        let latest = failures.read { () throws(RepositoryError) -> PeerText? in
            guard let last = try repository.edits(by: original.author, of: original.sequence).last,
                  let edit = try repository.envelope(by: original.author, sequence: last) else { return nil }
            return editedText(edit)
        }
        return latest.map { ($0, true) } ?? (opened.text, false)
    }

    /// The text an accepted edit gives (nil: it cannot be read here).
    private func editedText(_ edit: Envelope) -> PeerText? {
        guard let o = envelopes.open(edit), let parsed = Self.edit(in: o) else { return nil }
        return PeerText(String(decoding: parsed.text, as: UTF8.self))
    }

    /// An envelope opened as it reads now: a message with its latest
    /// edit's text (`edited`); nil when this node cannot read it.
    func openedNow(_ e: Envelope) -> (opened: OpenedEnvelope, edited: Bool)? {
        guard let o = envelopes.open(e) else { return nil }
        guard o.isMessage else { return (o, false) }
        let (text, edited) = currentText(of: e, opened: o)
        return (edited ? o.withText(text.unsanitized) : o, edited)
    }

    /// The message an index match stands for: an edit's match is its
    /// original (shown as it reads now); anything else is itself.
    func matchedMessage(_ stored: StoredEnvelope) -> StoredEnvelope? {
        // What does not stand (a revoked device's, a post its author could not have written) is found by nobody.
        guard let o = envelopes.open(stored.envelope) else { return nil }
        guard o.kind == .edit else { return stored }
        guard let edit = Self.edit(in: o),
              let original = failures.read({ () throws(RepositoryError) in try repository.delivered(id: edit.original.id) }),
              original.envelope.author == stored.envelope.author else { return nil }
        return original
    }

    /// The text `/search` indexes for an envelope (messages and edits), and
    /// what an erasure takes out of the index again: one function for both.
    func indexedText(of e: Envelope, standing: Bool = true) -> String? {
        guard let opened = standing ? envelopes.open(e) : envelopes.openIgnoringStanding(e) else { return nil }
        if opened.isMessage { return opened.text.unsanitized }
        if let edit = Self.edit(in: opened) { return String(decoding: edit.text, as: UTF8.self) }
        return nil
    }

    /// The ids of the envelopes a tombstone erased that this node holds.
    func erasedIDs(by tombstone: Envelope) -> [MessageID] {
        failures.read { () throws(RepositoryError) -> [MessageID] in
            var ids: [MessageID] = []
            for sequence in tombstone.erases {
                if let id = try repository.envelope(by: tombstone.author, sequence: sequence)?.id { ids.append(id) }
            }
            return ids
        } ?? []
    }
}
