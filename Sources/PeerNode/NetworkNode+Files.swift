import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// Files' chunks on the links (`Files`, `FileFetch`): asks sent as the
/// fetch core decides, chunks checked and written as they come, and asks
/// from peers answered as the link drains, a bounded queue per link.
extension NetworkNode {
    /// Where chunks that came are checked and written, off the loop (`Files.ChunkCheck`), in order.
    static let fileWorkerLabel = "peernode.files"

    /// Unsent bytes on a link below which queued chunk asks are answered.
    static let fileSendWindow = 2 << 20

    /// Links up that speak files (version 7 on), by peer.
    var fileLinks: [LinkID: PublicKey] {
        linkedPeers.filter { core.version(of: $0.key)?.speaksFiles == true }
    }

    /// Sends the asks the fetch core returned.
    func assignFiles(_ actions: [FileFetch.Action]) {
        for case let .want(id, root, chunks) in actions {
            guard let size = node.files.size(of: root) else { continue }
            // The offer is named where the link reads it (version 8 on), for a relay to erase the file with it.
            let offer = core.version(of: id)?.namesFileOffers == true ? node.files.offer(of: root) : nil
            for part in stride(from: 0, to: chunks.count, by: FileMessage.maximumIndices) {
                let some = Array(chunks[part..<min(chunks.count, part + FileMessage.maximumIndices)])
                feed(.send(id, .file(.want(root: root, size: size, chunks: some, offer: offer))))
            }
        }
    }

    /// A file message from `peer` on `id`.
    func fileArrived(_ message: FileMessage, from id: LinkID, peer: PublicKey) {
        let now = monotonic()
        switch message {
        case let .want(root, size, chunks, offer):
            if !relay { node.files.relayHandOver.fetching(root, on: id) }
            node.files.asked(root, chunks: chunks, by: peer)
            // A relay fetches what it is asked for and does not hold, to serve it (within `--max-files`).
            if relay, node.files.relay(root, size: size, offer: offer, now: Node.now(), clock: now) {
                assignFiles(node.files.fetch.assign(links: fileLinks, now: now))
            }
            guard var link = links[id] else { return }
            let room = Files.maximumQueuedWants - link.fileWants.reduce(0) { $0 + $1.chunks.count }
            guard room >= chunks.count else { return count(.fileMessageDropped) }
            link.fileWants.append((root, chunks))
            links[id] = link
            pumpFiles(id)
        case let .chunk(root, index, proof, sealed):
            if !relay { node.files.relayHandOver.served(root, index: index, by: peer, on: id) }
            switch node.files.arrived(root, index: index, proof: proof, sealed: sealed, from: peer, links: fileLinks, now: now) {
            case .ignored: break
            case let .duplicate(actions): assignFiles(actions)
            case let .check(check):
                // The leaf's hash and the write go to the files worker (another core); the loop takes the outcome in.
                nonisolated(unsafe) let store = node.store
                fileWorker.async { [self] in
                    let outcome = check.run(store: store)
                    loop.execute { [self] in
                        let (actions, said) = node.files.apply(outcome, links: fileLinks, now: monotonic())
                        assignFiles(actions)
                        answerFreedAsks()
                        tell(said)
                    }
                }
            }
        case let .none(root, chunks):
            assignFiles(node.files.lacking(root, chunks: chunks, from: peer, links: fileLinks, now: now))
            asksAgainAfterLack()
        }
    }

    /// A peer that said it lacks a file is asked again once `FileFetch.lackFirst`
    /// has passed, not at the tick after: a relay fetching it has chunks by then.
    /// One such timer at a time (a peer flooding "none" sets no more).
    private func asksAgainAfterLack() {
        guard !node.files.askAgainDue else { return }
        node.files.askAgainDue = true
        _ = loop.after(FileFetch.lackFirst + 0.01) { [weak self] in
            guard let self else { return }
            node.files.askAgainDue = false
            assignFiles(node.files.fetch.assign(links: fileLinks, now: monotonic()))
        }
    }

    /// Answers queued asks while the link has room; then waits for it to drain.
    func pumpFiles(_ id: LinkID) {
        while let link = links[id], let next = link.fileWants.first {
            guard link.connection.unsentBytes < Self.fileSendWindow else {
                link.connection.whenUnsent(below: Self.fileSendWindow / 2) { [self] in pumpFiles(id) }
                return
            }
            links[id]?.fileWants.removeFirst()
            let asker = table.links[id]?.remote.map { (id, $0) }
            for answer in node.files.answer(next.root, chunks: next.chunks, asker: asker, now: monotonic()) { feed(.send(id, .file(answer))) }
        }
        checkPatienceLater()
    }

    /// While asks wait for chunks, their patience is looked at as it runs
    /// out (`WaitingAsks.patience`), not at the next tick: one timer at a time.
    private func checkPatienceLater() {
        guard !node.files.waitingAsks.isEmpty, !node.files.patienceCheckDue else { return }
        node.files.patienceCheckDue = true
        _ = loop.after(WaitingAsks.patience / 2) { [weak self] in
            guard let self else { return }
            node.files.patienceCheckDue = false
            answerFreedAsks(expiring: true)
            checkPatienceLater()
        }
    }

    /// Asks that waited for chunks a fetch here had not got (`WaitingAsks`)
    /// and stopped waiting: those whose chunks came are answered with them
    /// as the link drains, the rest (their fetch ended, or, once a second,
    /// they waited `WaitingAsks.patience`) none at once.
    func answerFreedAsks(expiring: Bool = false) {
        for freed in node.files.takeFreedAsks(expiring: expiring ? monotonic() : nil) where links[freed.link] != nil {
            guard freed.held else {
                feed(.send(freed.link, .file(.none(root: freed.root, chunks: freed.chunks))))
                continue
            }
            links[freed.link]?.fileWants.append((freed.root, freed.chunks))
            pumpFiles(freed.link)
        }
    }

    /// Once a second: offers of ours handed to the relays that now hold
    /// their envelopes (`RelayHandOver`): a link holds one once the clock it
    /// declared holds the offer's sequence.
    func handOffersToRelays() {
        guard !relay, !node.files.relayHandOver.waiting.isEmpty else { return }
        let now = monotonic()
        let relays = fileLinks.filter { id, peer in
            core.version(of: id)?.namesFileOffers == true && presence.board.current(peer, now: now)?.state == .relay
        }
        let due = node.files.relayHandOver.due(relays: relays, holds: { id, offer in
            (replicator.declaredClock(of: id)?[offer.author] ?? 0) >= offer.sequence
        }, now: now)
        for (id, want) in due { feed(.send(id, .file(want))) }
    }

    /// Once a second: unanswered asks go to others, and links with room are asked.
    func tickFiles() {
        handOffersToRelays()
        answerFreedAsks(expiring: true)
        guard !node.files.fetch.roots.isEmpty else { return }
        if relay { node.files.dropStale(now: monotonic()) } else { tell(node.files.waiting(now: monotonic())) }
        assignFiles(node.files.fetch.tick(links: fileLinks, now: monotonic()))
    }
}
