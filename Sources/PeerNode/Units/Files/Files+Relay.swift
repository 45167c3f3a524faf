import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store
#if canImport(Glibc)
import Glibc
#endif

/// What a relay holds to serve (`--max-files`): a file it is asked for and
/// does not hold is fetched from its other links, the oldest it fetched so
/// leaving first when the quota is reached.
extension Files {
    /// The size of a file being fetched (what its asks name).
    func size(of root: [UInt8]) -> UInt64? { rows[root]?.size }

    /// Seconds a `/get` goes without a chunk before the person is told nobody linked holds the file now.
    static let waitingNotice = 30.0

    /// The transfers someone asked for that took no chunk in for
    /// `waitingNotice` seconds, each said once until a chunk comes.
    func waiting(now: Double) -> [Progress] {
        fetch.stalled(for: Self.waitingNotice, now: now).compactMap(tellWaiting)
    }

    /// A `/get` of `root` with no link to ask at all: said at once, not
    /// after `waitingNotice` seconds of nothing (once, as `waiting` says it).
    func waitingWithoutLinks(_ root: [UInt8]) -> [Progress] {
        fetch.roots.contains(root) ? tellWaiting(root).map { [$0] } ?? [] : []
    }

    /// The transfer of `root` said to be waiting, unless it was already since its last chunk.
    func tellWaiting(_ root: [UInt8]) -> Progress? {
        guard var w = wanted[root], !w.toldWaiting else { return nil }
        w.toldWaiting = true
        wanted[root] = w
        return .waiting(number: w.number, place: w.place, root: root, bad: fetch.badPeers(root))
    }

    /// Seconds a relay waits for the first chunk of a file it was asked
    /// for (or for the next one) before it drops the fetch: a root nobody
    /// holds costs it nothing for longer.
    static let relayPatience = 60.0

    /// A relay's fetches one peer's asks may have started that no chunk has
    /// come for yet. Past it, that peer's asks for other files the relay
    /// lacks start no fetch (they are answered as any ask for a file not
    /// held): asks for roots nobody holds, renewed before `relayPatience`
    /// drops them, would otherwise take all `FileFetch.maximumTransfers`
    /// places and keep every member's file from the relay. A fetch counts
    /// until its first chunk verifies (someone holds the file).
    static let relayFetchesPerAsker = 2

    /// Starts fetching `root` to serve it, when it is neither held nor
    /// fetched already, fits the quota, and a place among the transfers is
    /// free. Nothing is evicted yet: a file makes room only once a chunk of
    /// it has come and verified (`makeRoom`), so asks for roots nobody holds
    /// cannot flush the files a relay keeps. True when a fetch started.
    ///
    /// `offer`, the envelope the asker says offered the file: an ask naming
    /// one that a tombstone held here erased starts nothing (the file was
    /// taken back), and a file kept to serve is bound to the first one
    /// named that this relay holds (`bind`), so that the tombstone erasing
    /// it, which a relay reads the erase list of, erases the file too.
    func relay(_ root: [UInt8], size: UInt64, offer: Dependency? = nil, asker: PublicKey, now: UInt64, clock: Double = 0) -> Bool {
        if let offer {
            guard !erased(offer) else { return false }
            bind(root, to: offer)
        }
        guard let quota = maximumHeld, size <= quota, !fetch.fetches(root), fetch.roots.count < FileFetch.maximumTransfers,
              unprovenRelayFetches.values.count(where: { $0 == asker }) < Self.relayFetchesPerAsker else { return false }
        guard let all = failures.read({ () throws(RepositoryError) in try repository.files() }), !all.contains(where: { $0.root == root }) else { return false }
        var row = Store.FileRow(root: root, size: size, origin: .relayed, author: nil, sequence: nil, added: now)
        if let offer, holdsEnvelope(offer) { row = row.offered(by: offer.author, sequence: offer.sequence) }
        guard failures.read({ () throws(RepositoryError) -> Bool in
            try repository.save(row)
            try repository.createChunkFile(root)
            return true
        }) != nil else { return false }
        rows[root] = row
        leaves[root] = [:]
        unprovenRelayFetches[root] = asker
        fetch.start(root, chunks: row.chunks, held: { _ in false }, now: clock)
        return true
    }

    /// Whether a tombstone held here erased the envelope `offer` names
    /// (a store that cannot say: yes, the side that keeps nothing taken back).
    func erased(_ offer: Dependency) -> Bool {
        failures.read { () throws(RepositoryError) in try repository.isErased(offer) } ?? true
    }

    /// Whether an envelope is held at `offer` (a relay holds the offer sealed: it cannot read it).
    private func holdsEnvelope(_ offer: Dependency) -> Bool {
        failures.read { () throws(RepositoryError) in try repository.holdsEnvelope(offer) } ?? false
    }

    /// Binds a relayed file to `offer`, when an envelope is held there: the
    /// first such ask's offer goes in its row (named in the relay's own asks
    /// for it), each later one besides it (`FileRepository.bindAlso`, at most
    /// `Store.maximumFileBindings`). A tombstone erasing any of them erases
    /// the file: so the author's delete erases it even where another member
    /// named an offer of their own for it first. (That member's delete
    /// erases it too: a relay, which cannot read an offer, cannot tell whose
    /// file it is, and a member could as well keep the file and offer it again.)
    private func bind(_ root: [UInt8], to offer: Dependency) {
        guard let row = rows[root] ?? failures.read({ () throws(RepositoryError) in try repository.file(root) }) ?? nil,
              row.origin == .relayed, holdsEnvelope(offer) else { return }
        guard row.author == nil else {
            if row.author != offer.author || row.sequence != offer.sequence {
                _ = failures.read { () throws(RepositoryError) in try repository.bindAlso(root, to: offer) }
            }
            return
        }
        let bound = row.offered(by: offer.author, sequence: offer.sequence)
        guard failures.read({ () throws(RepositoryError) in try repository.save(bound) }) != nil else { return }
        if rows[root] != nil { rows[root] = bound }
    }

    /// The envelope a file being fetched was offered by, where known (named in its asks on links of version 8 on).
    func offer(of root: [UInt8]) -> Dependency? {
        guard let row = rows[root], let author = row.author, let sequence = row.sequence else { return nil }
        return Dependency(author: author, sequence: sequence)
    }

    /// A relayed file's first chunk verified: the oldest files fetched to
    /// serve leave until it fits the quota. False when it cannot fit (the
    /// fetch is dropped).
    func makeRoom(for row: Store.FileRow) -> Bool {
        guard let quota = maximumHeld, let all = failures.read({ () throws(RepositoryError) in try repository.files() }) else { return false }
        var held = all.filter { $0.root != row.root && ($0.complete || fetch.fetches($0.root)) }.reduce(UInt64(0)) { $0 + $1.size }
        for old in all where old.origin == .relayed && old.complete && old.root != row.root && held + row.size > quota {
            erase(old.root)
            held -= old.size
        }
        return held + row.size <= quota
    }

    /// At a relay's start: the files it was fetching to serve when it
    /// stopped are erased. Their fetch does not go on by itself, and a file
    /// held in part is not fetched again when asked (`relay`), so kept it
    /// would stay in part; erased, the next ask or hand-over fetches it whole.
    func eraseUnfinished() {
        let rows = failures.read { () throws(RepositoryError) in try repository.files() } ?? []
        for row in rows where row.origin == .relayed && !row.complete { erase(row.root) }
    }

    /// Relayed fetches that took no chunk in for `relayPatience` are dropped, their rows with them.
    func dropStale(now: Double) {
        for root in fetch.stalled(for: Self.relayPatience, now: now) where rows[root]?.origin == .relayed { erase(root) }
    }
}
