import Crypto
import Gossip

/// Catch-up (stored envelopes a peer's clock lacks, or asked for) goes out as
/// the link drains: at most `catchUpWindow` bytes wait unsent on a link at a
/// time, and the next batches are read from the store when the socket has
/// taken most of them. A catch-up of a million envelopes thus costs a window
/// of memory, not the whole history, and the send-queue limit is left to
/// find peers that stopped reading.
extension NetworkNode {
    /// One author's stored envelopes still to send on a link.
    struct CatchUpRange: Equatable {
        let author: PublicKey
        var next: UInt64
        var through: UInt64
        /// Envelopes read from the store at a time: as many as fitted in one
        /// batch message last time (large bodies make it fewer), at most
        /// `Replicator.batchSize`.
        var perRead = Replicator.batchSize
    }

    /// Bytes of catch-up that may wait unsent on one link.
    static let catchUpWindow = 1 << 20

    /// Queues `from...through` of `author` for the link, merged with what is
    /// already queued for that author into one range covering both (a gap
    /// request for a range on its way adds nothing, and a peer that asks
    /// for many scattered ranges while not reading cannot grow the queue:
    /// it holds at most one range per author we store), and starts sending.
    func queueCatchUp(_ id: LinkID, author: PublicKey, from: UInt64, through: UInt64) {
        guard from <= through, var link = links[id] else { return }
        if let i = link.catchUp.firstIndex(where: { $0.author == author }) {
            link.catchUp[i].next = min(link.catchUp[i].next, from)
            link.catchUp[i].through = max(link.catchUp[i].through, through)
        } else {
            link.catchUp.append(CatchUpRange(author: author, next: from, through: through))
        }
        links[id] = link
        pumpCatchUp(id)
    }

    /// Sends batches while the link has room in its window; then waits for
    /// the socket to take half of it.
    func pumpCatchUp(_ id: LinkID) {
        while let link = links[id], let range = link.catchUp.first {
            guard link.connection.unsentBytes < Self.catchUpWindow else {
                link.connection.whenUnsent(below: Self.catchUpWindow / 2) { [self] in pumpCatchUp(id) }
                return
            }
            let count = Int(min(UInt64(range.perRead), range.through - range.next + 1))
            let read = (try? node.store.envelopes(from: range.author, startingAt: range.next, limit: count)) ?? []
            // One batch message (at most `GossipMessage.batchBytes`) per turn, so the window holds.
            var batch = GossipMessage.batches(read.map { CarriedEnvelope(hops: 0, envelope: $0) }).first ?? []
            // A peer on an older link reads no newer envelope: the author's
            // chain ends for it at the first one (the rest could never be
            // delivered there), and the range is done.
            let newest = link.version.envelopeVersion
            let cut = batch.firstIndex { $0.envelope.version > newest }
            if let cut { batch.removeSubrange(cut...) }
            // Done when the store has nothing more in the range (no `+ 1` past the last sequence there can be).
            if cut == nil, let last = batch.last?.envelope.sequence, last < range.through {
                links[id]?.catchUp[0].next = last + 1
                // Fewer next time if they did not all fit; more again once they do.
                links[id]?.catchUp[0].perRead = batch.count < read.count ? max(1, batch.count) : min(Replicator.batchSize, range.perRead * 2)
            } else {
                links[id]?.catchUp.removeFirst()
            }
            if !batch.isEmpty { send(.envelopes(batch), to: id) }
        }
    }
}
