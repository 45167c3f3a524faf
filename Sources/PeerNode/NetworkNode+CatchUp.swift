import Crypto
import Gossip
import NodeCore

/// Catch-up goes out as the link drains (`CatchUpQueue`, pure, decides
/// what and when); here the store is read and the batches sent.
extension NetworkNode {
    /// Queues `from...through` of `author` for the link and starts sending.
    func queueCatchUp(_ id: LinkID, author: PublicKey, from: UInt64, through: UInt64) {
        guard links[id] != nil else { return }
        // A revoker's chain first: the revocation is held before the revoked device's posts come.
        links[id]?.catchUp.add(author: author, from: from, through: through, first: node.devices.revocationRows.contains { $0.by == author })
        pumpCatchUp(id)
    }

    /// Sends batches while the link has room in its window; then waits for
    /// the socket to take half of it.
    func pumpCatchUp(_ id: LinkID) {
        // While effects are being done a batch sent here would wait in
        // `feed`'s queue, unseen by the window, and the loop would read the
        // whole range into it: a socket that drains then (a forward written
        // at once, `forwardAhead`) pumps once they are done.
        if feeding {
            catchUpDue.insert(id)
            return
        }
        while let link = links[id] {
            switch link.catchUp.next(unsent: link.connection.unsentBytes) {
            case .idle:
                return
            case let .wait(below):
                link.connection.whenUnsent(below: below) { [self] in pumpCatchUp(id) }
                return
            case let .read(author, from, count):
                let read: [Envelope]
                do { read = try node.store.envelopes(from: author, startingAt: from, limit: count, bytes: GossipMessage.batchBytes) } catch {
                    // The range ends here; the peer's next clock exchange asks again.
                    log.warning("reading \(author.shortFingerprint)'s envelopes for a catch-up failed: \(error)")
                    read = []
                }
                // One batch message (at most `GossipMessage.batchBytes`) per turn, so the window holds.
                var batch = GossipMessage.batches(read.map { CarriedEnvelope(hops: 0, envelope: $0) }).first ?? []
                // A peer on an older link reads no newer envelope: the author's
                // chain ends for it at the first one (the rest could never be
                // delivered there).
                let cut = batch.firstIndex { $0.envelope.version > (core.version(of: id) ?? .newest).envelopeVersion }
                if let cut { batch.removeSubrange(cut...) }
                links[id]?.catchUp.took(read: read.count, sent: batch.count, last: batch.last?.envelope.sequence, chainEnds: cut != nil)
                if !batch.isEmpty { feed(.send(id, .envelopes(batch))) }
            }
        }
    }
}
