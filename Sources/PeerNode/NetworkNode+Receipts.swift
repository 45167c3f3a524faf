import Crypto
import Foundation
import Gossip
import Store

/// Receipts: a node says, in a receipt message in the room, up to where it
/// has delivered (shown) and read others' messages; an author turns the
/// receipts about its own messages into `receipt` events. Receipts are
/// batched: at most one per room and state every `receiptInterval`.
extension NetworkNode {
    /// Seconds between two receipts for one room.
    static let receiptInterval = 2.0
    /// Most own messages one arriving receipt reports events for.
    static let receiptEventLimit = 1_000

    /// A message from someone else was shown (in the room the person has
    /// open when `current`): owe them a receipt.
    func owe(_ e: Envelope, kind: Kind, room: RoomID, current: Bool) {
        guard !relay, e.author != node.me, kind == .text || kind == .action else { return }
        var owed = receiptsOwed[room, default: [:]]
        owed[.delivered, default: [:]][e.author] = max(owed[.delivered]?[e.author] ?? 0, e.sequence)
        if sendsReadReceipts, current {
            owed[.read, default: [:]][e.author] = max(owed[.read]?[e.author] ?? 0, e.sequence)
        }
        receiptsOwed[room] = owed
    }

    /// Posts what is owed, for rooms whose interval has passed.
    func sendReceipts(now: Double) {
        // Receipts are ours too: they wait (still owed) while a post would.
        guard (try? ensureOwnHistoryIsBack()) != nil else { return }
        for (room, owed) in receiptsOwed where now - (lastReceiptSent[room] ?? 0) >= Self.receiptInterval {
            receiptsOwed[room] = nil
            lastReceiptSent[room] = now
            for state in [Receipt.State.delivered, .read] {
                let marks = (owed[state] ?? [:]).map { Dependency(author: $0.key, sequence: $0.value) }.sorted { $0.author < $1.author }
                var start = 0
                while start < marks.count {
                    let part = Array(marks[start..<min(marks.count, start + Receipt.maximumMarks)])
                    start += Receipt.maximumMarks
                    do {
                        let e = try node.postReceipt(Receipt(state: state, marks: part), in: room)
                        perform(replicator.localPost(e))
                    } catch {
                        log.warning("sending a receipt failed: \(error)")
                    }
                }
            }
        }
    }

    /// A peer stored our messages up to `sequence`: the first peer to store
    /// each of our messages gives it its `stored` event.
    func storedArrived(_ sequence: UInt64, by peer: PublicKey) -> [NodeEvent] {
        let before = storedThrough
        guard sequence > before else { return [] }
        storedThrough = sequence
        return ownMessages(after: before, through: sequence).map { .receipt($0.id, by: peer, state: .stored) }
    }

    /// Our messages (text and actions) after `before` up to `through`, at
    /// most `receiptEventLimit`; none when the presenter shows no receipts.
    private func ownMessages(after before: UInt64, through: UInt64, in room: RoomID? = nil) -> [Envelope] {
        guard presenter.showsReceipts else { return [] }
        let count = Int(min(UInt64(Self.receiptEventLimit), through - before))
        do {
            return try node.store.envelopes(from: node.me, startingAt: before + 1, limit: count)
                .filter { (room == nil || $0.room == room) && node.open($0)?.isMessage == true }
        } catch {
            log.warning("reading our messages for receipts failed: \(error)")
            return []
        }
    }

    /// A receipt from `peer`: events for our messages in that room it newly covers.
    func receiptArrived(_ receipt: Receipt, from peer: PublicKey, room: RoomID) -> [NodeEvent] {
        guard let mark = receipt.marks.first(where: { $0.author == node.me }) else { return [] }
        let key = Acknowledgement(peer: peer, room: room, state: receipt.state)
        let before = acknowledged[key] ?? 0
        guard mark.sequence > before else { return [] }
        acknowledged[key] = mark.sequence
        let state: ReceiptState = receipt.state == .read ? .read : .delivered
        return ownMessages(after: before, through: mark.sequence, in: room).map { .receipt($0.id, by: peer, state: state) }
    }
}

extension NetworkNode {
    /// Where our last message in `room` has got to, as chat apps show it.
    enum OwnMessageState: String {
        /// Stored here only.
        case local = "…"
        /// A linked peer has it (its clock says so, or it sent a receipt).
        case stored = "✓"
        /// Every linked member of the room has shown it.
        case delivered = "✓✓"
        /// Every linked member of the room has read it.
        case read = "read"
    }

    /// The state of our last message in `room`, or nil if we posted none this session.
    func ownMessageState(in room: RoomName) -> OwnMessageState? {
        guard let sequence = lastOwnPost[room] else { return nil }
        let id = node.roomID(room)
        let linked = linkedPeers
        // Members: linked peers that have sent receipts in this room.
        let members = Set(acknowledged.keys.filter { $0.room == id && linked.values.contains($0.peer) }.map(\.peer))
        func all(_ state: Receipt.State) -> Bool {
            !members.isEmpty && members.allSatisfy { (acknowledged[Acknowledgement(peer: $0, room: id, state: state)] ?? 0) >= sequence }
        }
        if all(.read) { return .read }
        if all(.delivered) { return .delivered }
        let declared = linked.keys.contains { (replicator.declaredClock(of: $0)?[node.me] ?? 0) >= sequence }
        let acknowledgedAny = acknowledged.contains { $0.key.room == id && $0.value >= sequence }
        return declared || acknowledgedAny || storedThrough >= sequence ? .stored : .local
    }
}
