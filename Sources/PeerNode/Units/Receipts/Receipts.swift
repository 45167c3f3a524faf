import Crypto
import Gossip
import NodeCore
import Store

/// How a receipt of ours is signed and sealed (`Node.postReceipt`): with
/// a room's key, or in a conversation.
protocol ReceiptPosting: AnyObject {
    func postReceipt(_ receipt: Receipt, in room: RoomID) throws -> Envelope
}

/// Delivery and read receipts (docs/PROTOCOL.md §6, "Receipts"): the
/// ledger (`ReceiptLedger`, pure) says what is owed and how far our
/// messages have got; this unit posts what is owed and turns the ranges
/// the ledger returns into `receipt` events, for a presenter that shows
/// them.
///
/// Owns the ledger. Given the store (`ReceiptRepository`), the node's one
/// validity check and the poster of receipts; the network node sends what
/// it posts and shows what it returns. Confined to the node's loop.
final class Receipts {
    /// Most own messages one arriving receipt reports events for.
    static let eventLimit = 1_000

    private(set) var ledger: ReceiptLedger
    private let repository: ReceiptRepository
    private unowned let envelopes: any EnvelopeOpening
    private unowned let poster: any ReceiptPosting
    private let failures: StoreFailures
    private let me: PublicKey

    init(me: PublicKey, sendsRead: Bool, repository: ReceiptRepository, envelopes: any EnvelopeOpening, poster: any ReceiptPosting, failures: StoreFailures) {
        ledger = ReceiptLedger(me: me, sendsRead: sendsRead)
        self.me = me
        self.repository = repository
        self.envelopes = envelopes
        self.poster = poster
        self.failures = failures
    }

    /// Whether we say how far we have read (`/set read-receipts`).
    var sendsRead: Bool {
        get { ledger.sendsRead }
        set { ledger.sendsRead = newValue }
    }

    // MARK: what the ledger is told

    func shown(author: PublicKey, sequence: UInt64, in room: RoomID, isMessage: Bool, current: Bool) {
        ledger.shown(author: author, sequence: sequence, in: room, isMessage: isMessage, current: current)
    }

    func read(_ marks: [PublicKey: UInt64], in room: RoomID) { ledger.read(marks, in: room) }

    func posted(_ sequence: UInt64, in room: RoomID) { ledger.posted(sequence, in: room) }

    /// The state of our last message in `room`, or nil if we posted none this session.
    func state(in room: RoomID, linked: Set<PublicKey>, claims: [PublicKey: UInt64]) -> ReceiptLedger.OwnMessageState? {
        ledger.state(in: room, linked: linked, claims: claims)
    }

    /// How far our message `sequence` in `room` has got ("read", "delivered", "stored"), for a page loaded again; nil: here only.
    func reached(_ sequence: UInt64, in room: RoomID) -> ReceiptState? {
        switch ledger.reached(sequence, in: room) {
        case .read?: return .read
        case .delivered?: return .delivered
        case nil: return ledger.storedThrough >= sequence ? .stored : nil
        }
    }

    // MARK: ours

    /// Posts what is owed, for rooms whose interval has passed: the
    /// receipts signed. One that fails is owed no more (the next message
    /// shown owes a newer one); it is counted and said with the next
    /// output, once a minute at most (`StoreFailures`).
    func postDue(now: Double) -> [Envelope] {
        var posted: [Envelope] = []
        for (room, receipt) in ledger.due(now: now) {
            do { posted.append(try poster.postReceipt(receipt, in: room)) } catch {
                failures.heard(error)
                failures.tell("sending a receipt failed: \(error)")
            }
        }
        return posted
    }

    // MARK: others'

    /// A peer stored our messages up to `sequence`: the first peer to store
    /// each of our messages gives it its `stored` event (none when `shown` is false: no presenter shows them).
    func stored(through sequence: UInt64, by peer: PublicKey, shown: Bool) -> [NodeEvent] {
        guard let range = ledger.stored(through: sequence) else { return [] }
        return ownMessages(in: range, shown: shown).map { .receipt($0.id, by: peer, state: .stored) }
    }

    /// A receipt from `peer`: events for our messages in that room it newly covers.
    func arrived(_ receipt: Receipt, from peer: PublicKey, in room: RoomID, shown: Bool) -> [NodeEvent] {
        guard let (state, range) = ledger.arrived(receipt, from: peer, in: room) else { return [] }
        let said: ReceiptState = state == .read ? .read : .delivered
        return ownMessages(in: range, room: room, shown: shown).map { .receipt($0.id, by: peer, state: said) }
    }

    /// A read receipt from another device of our account: the room's read
    /// mark moves up to what it covers. True when nothing is unread there
    /// now (its act-list entry goes); false too when the store failed (said).
    func readElsewhere(_ receipt: Receipt, in room: RoomID) -> Bool {
        let unread = failures.read { () throws(RepositoryError) in
            try repository.markRead(room, through: receipt.marks.map { ($0.author, $0.sequence) })
            return try repository.unreadCount(of: room, me: me)
        }
        return unread == 0
    }

    /// Our messages (text and actions) in `range`, at most `eventLimit`;
    /// none when no presenter shows them, or when the store failed (said).
    private func ownMessages(in range: ClosedRange<UInt64>, room: RoomID? = nil, shown: Bool) -> [Envelope] {
        guard shown else { return [] }
        let count = Int(min(UInt64(Self.eventLimit), range.upperBound - range.lowerBound + 1))
        let read = failures.read { () throws(RepositoryError) in try repository.envelopes(from: me, startingAt: range.lowerBound, limit: count) } ?? []
        return read.filter { (room == nil || $0.room == room) && envelopes.open($0)?.isMessage == true }
    }
}
