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

/// Fetching and serving chunks, and what a finished transfer becomes.
extension Files {
    /// What a fetch says to the person who asked for it.
    enum Progress {
        case progress(number: Int, place: String, root: [UInt8], bytes: UInt64, of: UInt64)
        case done(number: Int, place: String, root: [UInt8], path: String, hash: [UInt8])
        case failed(number: Int, place: String, root: [UInt8], reason: String)
        /// `/cancel`: the fetch stopped, what came of it erased.
        case cancelled(number: Int, place: String, root: [UInt8])
        /// Nobody linked has served a chunk for `waitingNotice` seconds: said once (it goes on when someone does).
        /// `bad`: the peers that sent a chunk that did not verify, asked no more for it.
        case waiting(number: Int, place: String, root: [UInt8], bad: [PublicKey])
        /// A second `/get` named another folder while the fetch was under way: it is saved into `to`, not `from`.
        case moved(number: Int, place: String, root: [UInt8], from: String, to: String)
        /// Every chunk is here: the file is to be opened into its folder
        /// (`Files.save`, off the loop: a large file takes seconds).
        case opening(Opening)
        /// Chunks held from an earlier run are to be read back and hashed
        /// (`HeldCheck.run`, off the loop: seconds for a large file) before
        /// the fetch goes on (`resume`).
        case checkingHeld(HeldCheck)
    }

    /// A file held whole, to be opened into the folder a `/get` named.
    struct Opening: Sendable {
        let row: Store.FileRow
        let offer: FileOffer
        let number: Int
        let place: String
        /// Opens the chunks into the file's folder (as they come, and what is left at the end).
        let opener: FileOpener
    }

    /// The prompt's tag while files are fetched: `[⎘ ▓▓▓▓░░░░ 45% report.pdf] `, and how many more.
    var promptTag: String {
        guard let root = fetch.roots.first, let row = rows[root], let w = wanted[root] else { return "" }
        let more = fetch.roots.count > 1 ? " +\(fetch.roots.count - 1)" : ""
        let bar = SyncProgress.bar(done: row.chunks == 0 ? 1 : Double(row.heldCount) / Double(row.chunks))
        return "[⎘ \(bar) \(TerminalText.sanitize(String(w.offer.name.prefix(24))))\(more)] "
    }

    /// `row` as it stands now: a file being fetched has held more than its
    /// map says (the map is written every `mapWriteEvery` chunks).
    func live(_ row: Store.FileRow) -> Store.FileRow { rows[row.root] ?? row }

    /// Bytes of plaintext held of `row`'s file.
    func held(_ row: Store.FileRow) -> UInt64 {
        min(row.size, row.heldCount * UInt64(FileOffer.chunkSize))
    }

    /// What becomes of a chunk that came on a link: nothing (a file not
    /// being fetched: nobody asked), the asks a duplicate frees, or a check
    /// to run off the loop (`ChunkCheck.run`) and `apply` after.
    enum Arrival {
        case ignored
        case duplicate([FileFetch.Action])
        case check(ChunkCheck)
    }

    /// A chunk's check against the tree (`checked`, on the loop) and its
    /// write and opening (`write`, on the files worker): no state of the
    /// node, only the chunk file (`Store.writeChunk`) and the opener.
    struct ChunkCheck: Sendable {
        let root: [UInt8]
        let index: UInt64
        let proof: [[UInt8]]
        let sealed: [UInt8]
        let peer: PublicKey
        let row: Store.FileRow
        /// Where the chunk is opened once written, when a `/get` wants the file.
        let opener: FileOpener?

        /// The leaf when the chunk verified and was written; `valid` false
        /// when it did not verify (the peer's fault); `written` false when
        /// it verified but the disk would not take it (asked again).
        func run(store: Store) -> ChunkOutcome {
            guard let leaf = checked() else { return invalid }
            return write(leaf: leaf, store: store)
        }

        /// The chunk's leaf, when it reaches the root through its proof
        /// (nil: the peer sent a bad chunk). The node takes it on the loop,
        /// beside the link's open of the same bytes; `write` follows on the
        /// files worker.
        func checked() -> [UInt8]? {
            guard sealed.count == row.sealedLength(of: index) else { return nil }
            let leaf = FileTree.leaf(index: index, sealed: sealed)
            return FileTree.verify(leaf: leaf, index: index, chunks: row.chunks, proof: proof, root: root) ? leaf : nil
        }

        /// What a chunk that did not check comes to: its peer's fault.
        var invalid: ChunkOutcome { ChunkOutcome(root: root, index: index, peer: peer, leaf: nil, proof: [], valid: false, failure: nil) }

        /// The checked chunk (`leaf`) written to its chunk file and opened into the `/get`'s folder.
        func write(leaf: [UInt8], store: Store) -> ChunkOutcome {
            do { try store.writeChunk(sealed, index: index, of: row) } catch {
                return ChunkOutcome(root: root, index: index, peer: peer, leaf: nil, proof: [], valid: true, failure: error)
            }
            opener?.take(sealed, index: index)
            return ChunkOutcome(root: root, index: index, peer: peer, leaf: leaf, proof: proof, valid: true, failure: opener?.failure)
        }
    }

    struct ChunkOutcome: @unchecked Sendable {
        let root: [UInt8]
        let index: UInt64
        let peer: PublicKey
        let leaf: [UInt8]?
        /// The proof it came with, when it verified: it is served with the chunk to others while the file is still being fetched.
        let proof: [[UInt8]]
        let valid: Bool
        /// Why the chunk could not be kept (the chunk file's write) or the
        /// file not opened into its folder: the fetch stops (`stop`).
        let failure: (any Error)?
    }

    /// A chunk came on a link from `peer`: what to do with it (on the loop).
    func arrived(_ root: [UInt8], index: UInt64, proof: [[UInt8]], sealed: [UInt8], from peer: PublicKey,
                 links: [LinkID: PublicKey], now: Double) -> Arrival {
        // Only what was asked of this peer is looked at: a chunk nobody asked for costs no hashing and no write.
        guard fetch.fetches(root), let row = rows[root], fetch.asked(root, index: index, of: peer) else { return .ignored }
        if row.holds(index) { return .duplicate(fetch.received(root, index: index, from: peer, valid: true, links: links, now: now)) }
        return .check(ChunkCheck(root: root, index: index, proof: proof, sealed: sealed, peer: peer, row: row, opener: wanted[root]?.opener))
    }

    /// A chunk checked (and written) off the loop, taken in: the asks it
    /// frees and what to say. One that does not verify is counted and its
    /// peer asked nothing more for that file; one the disk did not take is
    /// said and asked again.
    func apply(_ outcome: ChunkOutcome, links: [LinkID: PublicKey], now: Double) -> (actions: [FileFetch.Action], said: [Progress]) {
        let root = outcome.root, index = outcome.index
        guard fetch.fetches(root), var row = rows[root] else { return ([], []) }
        if let failure = outcome.failure { return ([], stop(root, because: failure)) }
        var said: [Progress] = []
        if let leaf = outcome.leaf, !row.holds(index) {
            // A relay makes room for a file once it knows someone holds it (and its asker's place is free again).
            if row.origin == .relayed, row.heldCount == 0 {
                unprovenRelayFetches[root] = nil
                guard makeRoom(for: row) else {
                    erase(root)
                    return ([], [])
                }
            }
            row.mark(index)
            for link in waitingAsks.came(root, index: index) { freedAsks.append(FreedAsk(link: link, root: root, chunks: [index], held: true)) }
            leaves[root, default: [:]][index] = leaf
            if partial[root] == nil { partial[root] = PartialTree(chunks: row.chunks) }
            partial[root]?.learn(leaf: leaf, index: index, proof: outcome.proof)
            rows[root] = row
            if var w = wanted[root] {
                w.toldWaiting = false
                w.sinceMapWrite += 1
                if w.sinceMapWrite >= Self.mapWriteEvery {
                    w.sinceMapWrite = 0
                    _ = failures.read { () throws(RepositoryError) in try repository.save(row) }
                }
                if now - w.lastProgress >= Self.progressInterval {
                    w.lastProgress = now
                    said.append(.progress(number: w.number, place: w.place, root: root, bytes: held(row), of: row.size))
                }
                wanted[root] = w
            }
        } else if !outcome.valid {
            badChunks &+= 1
        }
        let actions = fetch.received(root, index: index, from: outcome.peer, valid: outcome.valid, links: links, now: now)
        // The last linked holder sent a bad chunk: said at once, not after `waitingNotice` of silence.
        if !outcome.valid, !fetch.canAsk(root, links: links), let told = tellWaiting(root) { said.append(told) }
        for case let .complete(done) in actions { if let told = finish(done) { said.append(told) } }
        return (actions.filter { if case .complete = $0 { return false }; return true }, said)
    }

    /// A write failed (a full disk, most often): the fetch of `root` stops
    /// at once, said once, rather than asking again for chunks it cannot
    /// keep (which went round as fast as the link, each failure said). What
    /// is held stays, with the folder: a `/get`, or the next start, takes it
    /// up again.
    func stop(_ root: [UInt8], because failure: any Error) -> [Progress] {
        let (w, row) = endTransfer(root)
        // The chunk map as it stands, for the next /get. On the full disk that stopped the fetch this fails
        // too: counted, not said beside the stop's own words (the map written 64 chunks ago stands, and
        // the chunks since are fetched again).
        if let row {
            do { try repository.save(row) } catch { failures.heard(error) }
        }
        guard let w else {
            failures.failed("keeping a file fetched to serve", failure)
            return []
        }
        return [.failed(number: w.number, place: w.place, root: root,
                        reason: "\(failure); what came is kept, and /get \(w.number) goes on from it")]
    }

    /// A chunk checked on the spot (tests, and a caller with no worker): `arrived`, `run` and `apply` in one.
    func received(_ root: [UInt8], index: UInt64, proof: [[UInt8]], sealed: [UInt8], from peer: PublicKey,
                  links: [LinkID: PublicKey], now: Double) -> (actions: [FileFetch.Action], said: [Progress]) {
        switch arrived(root, index: index, proof: proof, sealed: sealed, from: peer, links: links, now: now) {
        case .ignored: return ([], [])
        case let .duplicate(actions): return (actions, [])
        case let .check(check): return apply(check.run(store: repository.store), links: links, now: now)
        }
    }

    /// The transfer of `root` has every chunk: its tree is kept (to serve
    /// it), and, where someone asked for it, the file opened chunk by chunk
    /// into its folder under a safe name, checked against the offer's hash.
    /// Nil for a file a relay fetched to serve (nobody to tell).
    func finish(_ root: [UInt8]) -> Progress? {
        let w = wanted.removeValue(forKey: root)
        fetch.cancel(root)
        partial[root] = nil
        endWaiting(root, held: true)
        do {
            guard var row = try rows.removeValue(forKey: root) ?? repository.file(root) else { throw NodeError.notAFile(w?.number ?? 0) }
            for index in 0..<row.chunks { row.mark(index) }
            row.folder = nil
            try repository.save(row)
            if let fetched = leaves.removeValue(forKey: root), fetched.count == Int(row.chunks) {
                let ordered = (0..<row.chunks).compactMap { fetched[$0] }
                try repository.saveLeaves(ordered, of: root)
            }
            guard let w else { return nil }
            return .opening(Opening(row: row, offer: w.offer, number: w.number, place: w.place, opener: w.opener))
        } catch {
            w?.opener.abandon()
            failures.heard(error)
            guard let w else {
                failures.failed("keeping a file fetched to serve", error)
                return nil
            }
            return .failed(number: w.number, place: w.place, root: root, reason: "\(error)")
        }
    }

    /// Opens a file held whole into its folder and names it: what became of it. Reads
    /// only its chunk file (`Store.readChunk`, no database), so it runs off the loop.
    static func save(_ o: Opening, store: Store) -> Progress {
        do {
            let (path, hash) = try o.opener.finish(o.row, store: store)
            return .done(number: o.number, place: o.place, root: o.offer.root, path: path, hash: hash)
        } catch {
            return .failed(number: o.number, place: o.place, root: o.offer.root, reason: "\(error)")
        }
    }

    /// A peer does not hold these chunks.
    func lacking(_ root: [UInt8], chunks: [UInt64], from peer: PublicKey, links: [LinkID: PublicKey], now: Double) -> [FileFetch.Action] {
        fetch.lacking(root, chunks: chunks, from: peer, links: links, now: now)
    }

    // MARK: serving

    /// Answers an ask for chunks of `root`: each chunk with its proof, where
    /// the file is held whole here, or, for a file still being fetched, each
    /// chunk already held with the proof it came with (a swarm: whoever has
    /// part of a file serves that part); "not held" for the rest. Asked by
    /// `asker` (on its link), a chunk the fetch here has asked another peer
    /// for waits for it (`WaitingAsks`) instead, as many as the link's room
    /// takes: not one asked of the asker itself, nor one not yet asked of
    /// anyone, nor, when the peer it was asked of is fetching the file too,
    /// one whose asker's key is not below that peer's. Along a ring of
    /// fetchers each waiting on the next, the keys would have to rise all
    /// the way round: at least one of them answers none at once.
    func answer(_ root: [UInt8], chunks: [UInt64], asker: (link: LinkID, peer: PublicKey)? = nil, now: Double = 0) -> [FileMessage] {
        let proof: (UInt64) -> [[UInt8]]?
        let row: Store.FileRow
        var fetching = false
        if let part = rows[root], !part.complete {
            row = part
            fetching = fetch.fetches(root)
            let known = partial[root]
            proof = { part.holds($0) ? known?.proof(index: $0) : nil }
        } else {
            guard let (whole, levels) = held(root) else { return [.none(root: root, chunks: chunks)] }
            row = whole
            proof = { FileTree.proof(index: Int($0), levels: levels) }
        }
        let proofs = chunks.map { $0 < row.chunks ? proof($0) : nil }
        let read = proofs.contains { $0 != nil } ? failures.read({ () throws(RepositoryError) in try repository.read(chunks, of: row) }) : nil
        var out: [FileMessage] = [], lacking: [UInt64] = [], coming: [UInt64] = []
        for (i, index) in chunks.enumerated() {
            guard let path = proofs[i], let sealed = read?[i] else {
                // Not held, and to be fetched here: it waits for the chunk (a chunk held without its proof does not).
                if fetching, let asker, let source = fetch.askedOf(root, index: index), source != asker.peer, !row.holds(index),
                   fetchersOf[root]?.contains(source) != true || asker.peer < source {
                    coming.append(index)
                } else {
                    lacking.append(index)
                }
                continue
            }
            out.append(.chunk(root: root, index: index, proof: path, sealed: sealed))
        }
        if let asker, !coming.isEmpty { lacking = (lacking + waitingAsks.hold(root, chunks: coming, on: asker.link, now: now)).sorted() }
        if !lacking.isEmpty { out.append(.none(root: root, chunks: lacking)) }
        return out
    }

    /// A file held whole, its row and its tree: kept in memory for the last
    /// few served (`treesKept`), so that asks 16 chunks at a time do not read
    /// the chunk map from the database each time; forgotten when erased.
    private func held(_ root: [UInt8]) -> (Store.FileRow, [[[UInt8]]])? {
        if let i = trees.firstIndex(where: { $0.root == root }), let row = trees[i].row { return (row, trees[i].levels) }
        guard let whole = failures.read({ () throws(RepositoryError) in try repository.file(root) }), whole.complete else { return nil }
        let levels: [[[UInt8]]]
        if let i = trees.firstIndex(where: { $0.root == root }) {
            levels = trees[i].levels
        } else {
            guard let leafHashes = failures.read({ () throws(RepositoryError) in try repository.leaves(of: root, chunks: whole.chunks) }) else { return nil }
            levels = FileTree.levels(leafHashes)
            guard levels.last?.first == root else { return nil }
        }
        keep(root, levels, row: whole)
        return (whole, levels)
    }

    func keep(_ root: [UInt8], _ levels: [[[UInt8]]], row: Store.FileRow? = nil) {
        trees.removeAll { $0.root == root }
        trees.append((root, levels, row))
        if trees.count > Self.treesKept { trees.removeFirst() }
    }

    // MARK: erasure

    /// A delete of the offer `author` posted as `sequence`: its file's
    /// chunks leave the disk, and a transfer of it stops (said, as a
    /// `/get` that failed, to whoever asked for it).
    func erase(offeredBy author: PublicKey, sequence: UInt64) -> [Progress] {
        let roots = failures.read { () throws(RepositoryError) in try repository.files(offeredBy: author, sequence: sequence) } ?? []
        return roots.compactMap { root in
            erase(root).map { .failed(number: $0.number, place: $0.place, root: root, reason: "its author deleted it for everyone: what came is erased") }
        }
    }

    /// Envelopes just stored: the files offered by what a tombstone among
    /// them erases leave the disk, here too where the offer cannot be read
    /// (a relay holds such a file bound to its offer by the asks that named
    /// it, `relay`). As the store honours the tombstone: not a revoked
    /// device's past its limit.
    func erase(takenBackBy stored: [Envelope]) -> [Progress] {
        var said: [Progress] = []
        for e in stored where !e.erases.isEmpty && repository.store.honoursErasures?(e) != false {
            for sequence in e.erases { said += erase(offeredBy: e.author, sequence: sequence) }
        }
        return said
    }

    /// Erases `root`'s chunks and ends its transfer; the `/get` that was waiting for it, if any.
    @discardableResult
    func erase(_ root: [UInt8]) -> Wanted? {
        let ended = endTransfer(root).wanted
        relayHandOver.forget(root)
        trees.removeAll { $0.root == root }
        guard let detached = failures.read({ () throws(RepositoryError) in try repository.detach(root) }) ?? nil else { return ended }
        Self.overwrite(detached)
        return ended
    }

    /// Ends the transfer of `root` here: its fetch, what was learned of its
    /// tree, and its `/get` (the temporary file removed). The `/get` and the
    /// chunk map as they were.
    private func endTransfer(_ root: [UInt8]) -> (wanted: Wanted?, row: Store.FileRow?) {
        fetch.cancel(root)
        unprovenRelayFetches[root] = nil
        endWaiting(root, held: false)
        partial[root] = nil
        leaves[root] = nil
        let w = wanted.removeValue(forKey: root)
        w?.opener.abandon()
        return (w, rows.removeValue(forKey: root))
    }

    /// Chunk files up to this size are overwritten at once, on the loop (64
    /// MiB, ~50 ms); a larger one, already moved aside under a name of its
    /// own, on `eraser` (a 4 GiB file takes seconds, which held the loop:
    /// the chat, and a relay's forwarding).
    static let eraseInlineLimit: off_t = 64 << 20
    /// Where large chunk files are overwritten, one after another.
    static let eraser = DispatchQueue(label: "peernode.erase")

    /// Overwrites and removes a chunk file moved aside (`Store.detachFile`):
    /// at once when it is small, else on `eraser`.
    static func overwrite(_ detached: String) {
        var info = stat()
        guard stat(detached, &info) == 0, info.st_size > eraseInlineLimit else { return Store.overwrite(detached) }
        eraser.async { Store.overwrite(detached) }
    }

    /// Chunk files a stopped process left half-erased: erased now, on `eraser`.
    func eraseLeftovers() {
        for path in repository.store.erasing() { Self.eraser.async { Store.overwrite(path) } }
    }
}

/// What the page is served of a file held whole (`GET /file/ROOT`).
extension Files {
    /// Whether `root` is held whole here (none said when the store fails: the safe side is "no").
    func holdsWhole(_ root: [UInt8]) -> Bool {
        failures.read { () throws(RepositoryError) in try repository.file(root) }?.complete ?? false
    }

    /// The offer of a file held whole, its key and its chunk file, for the
    /// page to read it from (`FileBodyReader`); nil when it is not held
    /// whole or its offer cannot be read here.
    func served(_ root: [UInt8]) throws -> (offer: FileOffer, key: FileKey, path: String)? {
        guard let row = try repository.file(root), row.complete, let author = row.author, let sequence = row.sequence,
              let e = try storeCall("reading a file's offer", { try repository.store.envelope(by: author, sequence: sequence) }),
              let offer = envelopes.open(e)?.offer, offer.root == root, offer.size == row.size,
              let key = FileKey(exactly: offer.key) else { return nil }
        return (offer, key, repository.store.chunkPath(root))
    }

    /// The folder a `/get` under way saves `root` into.
    func savingInto(_ root: [UInt8]) -> String? { wanted[root]?.opener.folder }
}

