import ChatText
import Crypto
import Gossip
import NetworkText
import Store

/// Reactions and replies (issue 17; docs/PROTOCOL.md §5, "Edits, reactions
/// and replies"). Both name a message of anyone in the same room or
/// conversation, and depend on it, so every node delivers the message
/// first; a reply from a node that did not say so is shown with "not here
/// yet" and quoted again once the message comes (`quoted`, `filled`).
///
/// Given the store (`ReactionRepository`), message life (which message a
/// reference names, and its text now), the node's one validity check and
/// our chain. Confined to the node's loop.
final class Reactions {
    /// Replies held for a later quote; past this, a reply is shown without one being filled in.
    static let maximumWaitingReplies = 1_000

    private let repository: ReactionRepository
    private let messages: MessageLife
    private unowned let envelopes: any EnvelopeOpening
    private unowned let author: any OwnPosting
    private let failures: StoreFailures
    /// Reactions refused by `accept` (counted as `reaction_refused`).
    private(set) var refused = 0
    /// Replies shown before the message they answer, by that message; at most `maximumWaitingReplies`.
    private var waitingReplies: [MessageRef: [ShownMessage]] = [:]
    private var waitingCount = 0

    init(repository: ReactionRepository, messages: MessageLife, envelopes: any EnvelopeOpening, author: any OwnPosting, failures: StoreFailures) {
        self.repository = repository
        self.messages = messages
        self.envelopes = envelopes
        self.author = author
        self.failures = failures
    }

    // MARK: ours

    /// `/react`: gives `reaction` to `target`, or takes it back if ours stands.
    @discardableResult
    func react(to target: Envelope, with reaction: String) throws -> Envelope {
        let content = try Reaction(target: MessageRef(target), reaction: reaction)
        guard let key = author.sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        return try author.appendOwn(room: target.room, kind: .reaction, content: content.encoded, key: key, requires: target)
    }

    /// `/reply`: `text` answering `target`.
    @discardableResult
    func reply(to target: Envelope, text: String) throws -> Envelope {
        guard let key = author.sealingKey(for: target.room) else { throw NodeError.receiptRoomNotWritable }
        let reply = Reply(target: MessageRef(target), text: Array(text.utf8))
        return try author.appendOwn(room: target.room, kind: .reply, content: reply.encoded, key: key, requires: target)
    }

    // MARK: delivered

    /// A delivered reaction applied: the message it is on, the reaction,
    /// and whether it stands now. Nil when refused (the message is not here,
    /// is elsewhere, is deleted, is no message, or the reactor has
    /// `Reaction.maximumPerPersonAndMessage` others on it: counted as
    /// `reaction_refused`), applied already, or when the store failed (said;
    /// the reaction is stored, and applied again when the room is next joined).
    func accept(_ e: Envelope, _ opened: OpenedEnvelope) -> (target: Envelope, reaction: String, on: Bool)? {
        // Undecodable content is the author's fault, refused and counted: why it fails is not needed.
        guard opened.kind == .reaction, let reaction = try? Reaction.decode(opened.content),
              let target = messages.referenced(reaction.target, from: e) else {
            refused &+= 1
            return nil
        }
        switch failures.read({ () throws(RepositoryError) in try repository.record(reaction, by: e.author, sequence: e.sequence) }) {
        case let .applied(on): return (target, reaction.reaction, on)
        case .alreadyApplied, nil: return nil
        case .tooMany:
            refused &+= 1
            return nil
        }
    }

    /// The reactions standing on `e`, most given first (none, said, when the store fails).
    func standing(on e: Envelope) -> [(reaction: String, by: [PublicKey])] {
        failures.read { () throws(RepositoryError) in try repository.standing(on: e) } ?? []
    }

    // MARK: replies

    /// What a reply shows of the message it answers (nil: `e` is no reply).
    func quote(of e: Envelope, _ opened: OpenedEnvelope) -> Quote? {
        // A reply whose content does not decode is the author's fault, shown as no reply: why is not needed.
        guard opened.kind == .reply, let reply = try? Reply.decode(opened.content) else { return nil }
        let ref = reply.target
        if let target = messages.referenced(ref, from: e), let o = envelopes.open(target) {
            return Quote(target: ref, state: .here(messages.currentText(of: target, opened: o).text))
        }
        // Held here and in the room, but erased: deleted; anything else is not here (yet).
        return Quote(target: ref, state: messages.isDeleted(ref, from: e) == true ? .deleted : .missing)
    }

    /// `shown` (a reply) with its quote; held if what it answers is not here yet.
    func quoted(_ shown: ShownMessage, book: People) -> ShownMessage {
        var shown = shown
        shown.quote(quote(of: shown.envelope, shown.opened), book: book)
        if let quote = shown.quote, case .missing = quote.state, waitingCount < Self.maximumWaitingReplies {
            waitingReplies[quote.target, default: []].append(shown)
            waitingCount += 1
        }
        return shown
    }

    /// Whether replies shown before `e` wait for it (`filled` reads it from the store).
    func awaited(_ e: Envelope) -> Bool { !waitingReplies.isEmpty && waitingReplies[MessageRef(e)] != nil }

    /// A message was delivered: the replies that waited for it, quoted now.
    func filled(by e: Envelope, book: People) -> [ShownMessage] {
        guard !waitingReplies.isEmpty, let waiting = waitingReplies.removeValue(forKey: MessageRef(e)) else { return [] }
        waitingCount -= waiting.count
        return waiting.map { reply in
            var filled = reply
            filled.quote(quote(of: reply.envelope, reply.opened), book: book)
            return filled
        }
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
