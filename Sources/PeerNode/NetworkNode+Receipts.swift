import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Receipts: the ledger (`ReceiptLedger`, pure) says what is owed and how
/// far our messages have got; here receipts are posted and the ranges it
/// returns become `receipt` events for a presenter that shows them.
extension NetworkNode {
    /// Most own messages one arriving receipt reports events for.
    static let receiptEventLimit = 1_000

    /// Posts what is owed, for rooms whose interval has passed.
    func sendReceipts(now: Double) {
        // Receipts are ours too: they wait (still owed) while a post would.
        guard ownHistoryRefusal(now: now) == nil else { return }
        for (room, receipt) in receipts.due(now: now) {
            do {
                let e = try node.postReceipt(receipt, in: room)
                sentOwnUpTo = max(sentOwnUpTo, e.sequence)
                feed(.posted(e))
            } catch {
                log.warning("sending a receipt failed: \(error)")
            }
        }
    }

    /// A peer stored our messages up to `sequence`: the first peer to store
    /// each of our messages gives it its `stored` event.
    func storedArrived(_ sequence: UInt64, by peer: PublicKey) -> [NodeEvent] {
        guard let range = receipts.stored(through: sequence) else { return [] }
        return ownMessages(in: range).map { .receipt($0.id, by: peer, state: .stored) }
    }

    /// A receipt from `peer`: events for our messages in that room it newly covers.
    /// A read receipt from another device of our account: the room's read
    /// mark moves up to what it covers, and its unread count and act-list
    /// entry go with it.
    func readElsewhere(_ receipt: Receipt, in room: RoomID) {
        do { try node.store.markRead(room, through: receipt.marks.map { ($0.author, $0.sequence) }) } catch {
            log.warning("moving the read mark failed: \(error)")
            return
        }
        if let name = node.roomName(room), node.storeFailures.read("a room's unread count", { try node.store.unreadCount(of: room, me: node.me) }) == 0 {
            activity.seen(name.value)
        }
    }

    func receiptArrived(_ receipt: Receipt, from peer: PublicKey, room: RoomID) -> [NodeEvent] {
        guard let (state, range) = receipts.arrived(receipt, from: peer, in: room) else { return [] }
        let shown: ReceiptState = state == .read ? .read : .delivered
        return ownMessages(in: range, room: room).map { .receipt($0.id, by: peer, state: shown) }
    }

    /// Our messages (text and actions) in `range`, at most
    /// `receiptEventLimit`; none when the presenter shows no receipts.
    private func ownMessages(in range: ClosedRange<UInt64>, room: RoomID? = nil) -> [Envelope] {
        guard presenter.showsReceipts else { return [] }
        let count = Int(min(UInt64(Self.receiptEventLimit), range.upperBound - range.lowerBound + 1))
        do {
            return try node.store.envelopes(from: node.me, startingAt: range.lowerBound, limit: count)
                .filter { (room == nil || $0.room == room) && node.open($0)?.isMessage == true }
        } catch {
            log.warning("reading our messages for receipts failed: \(error)")
            return []
        }
    }

    /// The state of our last message in `room`, or nil if we posted none this session.
    func ownMessageState(in room: RoomID) -> ReceiptLedger.OwnMessageState? {
        receipts.state(in: room, linked: Set(linkedPeers.values), claims: ownClaims)
    }
}
