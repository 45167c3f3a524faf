import Crypto
import Foundation
import Gossip
import Store

/// `/get`: a fetch started, or taken up again from the chunks held.
extension Files {
    /// `/get`: fetches `offer` (the envelope `e`, message `number` in
    /// `place`) into `folder`. A file held whole already is saved at once;
    /// one held in part from an earlier run first has its chunks read back
    /// and hashed off the loop (`checkingHeld`), then goes on (`resume`).
    func get(_ offer: FileOffer, from e: Envelope, number: Int, place: String, folder: String, now: UInt64, clock: Double) throws -> [Progress] {
        guard offer.size <= FileOffer.maximumSize else { throw NodeError.fileTooLarge(path: offer.name, size: offer.size) }
        guard Self.isFolder(folder) else { throw NodeError.fileNotSaved(path: folder, reason: FileManager.default.fileExists(atPath: folder) ? "not a folder" : "no such folder (a folder is not made for a /get: make it first, or leave the folder out for your download folder)") }
        let row = try repository.file(offer.root) ?? Store.FileRow(root: offer.root, size: offer.size, origin: .fetched, author: e.author, sequence: e.sequence, added: now)
        guard row.size == offer.size else { throw NodeError.fileNotSaved(path: folder, reason: "another file of that root is held here, of another size") }
        // A /get of a file already under way: into the same folder it says
        // where the fetch stands (nothing starts again); into another, the
        // fetch goes on into that one instead, and says so.
        var movedFrom: String?
        if let under = wanted[offer.root], let live = rows[offer.root] {
            if Self.sameFolder(under.opener.folder, folder) {
                return [.progress(number: under.number, place: under.place, root: offer.root, bytes: held(live), of: live.size)]
            }
            movedFrom = under.opener.folder
        }
        let said = try started(offer, row: row, number: number, place: place, room: e.room, folder: folder, clock: clock)
        return said + (movedFrom.map { [.moved(number: number, place: place, root: offer.root, from: $0, to: folder)] } ?? [])
    }

    /// `/cancel`: the `/get` of `root` under way stops, and what came of it
    /// is erased, its chunks and the temporary file in its folder (someone
    /// who cancels a download wants the space back; a `/get` again starts
    /// over). Nil when no `/get` of it is under way (a file held whole
    /// stays: `/delete` is what erases one's own offer for everyone).
    func cancel(_ root: [UInt8]) -> Progress? {
        guard let w = wanted[root] else { return nil }
        erase(root)
        return .cancelled(number: w.number, place: w.place, root: root)
    }

    static func sameFolder(_ a: String, _ b: String) -> Bool {
        URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path
    }

    private func started(_ offer: FileOffer, row: Store.FileRow, number: Int, place: String, room: RoomID, folder: String, clock: Double) throws -> [Progress] {
        var row = row
        // Kept with the row: a restart goes on with it (`NetworkNode.resumeFiles`).
        row.folder = folder
        try repository.save(row)
        try repository.createChunkFile(offer.root)
        // A second /get of a file under way: the first one's temporary file goes before the next is made.
        wanted[offer.root]?.opener.abandon()
        // The temporary file first: a folder that takes no file fails the /get now, not after the fetch.
        let opener = try FileOpener(offer: offer, folder: folder)
        wanted[offer.root] = Wanted(offer: offer, number: number, place: place, room: room, opener: opener)
        if row.complete { return finish(offer.root).map { [$0] } ?? [] }
        rows[offer.root] = row
        // Chunks held from an earlier run, whose leaves are not known yet: read back and hashed on a worker.
        let known = leaves[offer.root] ?? [:]
        let unread = (0..<row.chunks).filter { row.holds($0) && known[$0] == nil }
        guard unread.isEmpty else { return [.checkingHeld(HeldCheck(root: offer.root, row: row, indices: unread, opener: opener))] }
        return start(offer.root, clock: clock)
    }

    /// Chunks held from an earlier run, to be read back off the loop: the
    /// leaf of each that is whole, none for one that is not (a write a crash
    /// or a power loss cut short, a disk that changed it), which is fetched
    /// again. Whole means it opens with the file's key (its tag vouches for
    /// every byte, where a leaf alone, with no proof kept from the run that
    /// fetched it, vouches for nothing); opened, it goes into the file being
    /// saved at once (`FileOpener.takeHeld`), not read again at the end.
    struct HeldCheck: Sendable {
        let root: [UInt8]
        let row: Store.FileRow
        let indices: [UInt64]
        /// The `/get` it was made for (a later one, or an erase, makes it stale).
        let opener: FileOpener

        func run(store: Store) -> HeldLeaves {
            var leaves: [UInt64: [UInt8]] = [:]
            var unreadable: (any Error)?
            for index in indices {
                let sealed: [UInt8]?
                do { sealed = try store.readChunk(index, of: row) } catch StoreError.corruptRow {
                    continue  // the chunk file ends before it: a crash before its write; fetched again
                } catch {
                    unreadable = unreadable ?? error
                    continue
                }
                guard let sealed, opener.takeHeld(sealed, index: index) else { continue }
                leaves[index] = FileTree.leaf(index: index, sealed: sealed)
            }
            return HeldLeaves(root: root, leaves: leaves, unreadable: unreadable, opener: opener)
        }
    }

    struct HeldLeaves: @unchecked Sendable {
        let root: [UInt8]
        let leaves: [UInt64: [UInt8]]
        /// The first read that failed otherwise than by the chunk file being short (said; those chunks are fetched again).
        let unreadable: (any Error)?
        let opener: FileOpener
    }

    /// The chunks held were read back (`HeldCheck.run`): the fetch goes on
    /// with those that are whole. Nothing when the `/get` it was made for
    /// is gone (erased, or another `/get` of the file since).
    func resume(_ held: HeldLeaves, clock: Double) -> [Progress] {
        guard let w = wanted[held.root], w.opener === held.opener, rows[held.root] != nil else { return [] }
        if let failure = held.unreadable { failures.failed("reading the chunks held of a file", failure) }
        leaves[held.root, default: [:]].merge(held.leaves) { known, _ in known }
        return start(held.root, clock: clock)
    }

    /// Starts fetching `root` with the chunks whose leaves are known as held
    /// (what is held but no longer matches, a crash mid-write, is fetched again).
    private func start(_ root: [UInt8], clock: Double) -> [Progress] {
        guard var row = rows[root], let w = wanted[root] else { return [] }
        let known = leaves[root] ?? [:]
        row.held = [UInt8](repeating: 0, count: row.held.count)
        row.heldCount = 0
        for index in known.keys { row.mark(index) }
        rows[root] = row
        fetch.start(root, chunks: row.chunks, held: row.holds, now: clock)
        return [.progress(number: w.number, place: w.place, root: root, bytes: held(row), of: row.size)]
    }
}

/// What `/files`, `/get` alone and `/cancel` alone ask of the files here.
extension Files {
    /// Offers `/files` lists at most (the newest, past them a line says older
    /// ones are not listed), and `/get` alone looks through for one that stands.
    static let maximumListed = 200

    /// The file offers of `room` that stand and read here, newest first,
    /// among its newest `maximumListed`; `more`: older ones were left out.
    func offers(in room: RoomID) throws(RepositoryError) -> (offers: [(stored: StoredEnvelope, offer: FileOffer)], more: Bool) {
        let newest = try repository.fileOffers(in: room, limit: Self.maximumListed + 1)
        let standing = newest.prefix(Self.maximumListed).compactMap { stored in envelopes.open(stored.envelope)?.offer.map { (stored, $0) } }
        return (standing, newest.count > Self.maximumListed)
    }

    /// The number of the one `/get` under way in `room` (`/cancel` alone);
    /// with none or several, says so (naming each), as `place`.
    func onlyFetch(in room: RoomID, place: String) throws(NodeError) -> Int {
        let here = wanted.values.filter { $0.room == room }.map(\.number).sorted()
        guard here.count == 1 else { throw .whichFetch(place, numbers: here) }
        return here[0]
    }

    /// A file opened into its folder (`save`, off the loop), back on the loop:
    /// where it was saved is kept for `/files` (after a restart too). A failure
    /// to keep it is counted and said; the file is saved all the same.
    func opened(_ progress: Progress) -> Progress {
        if case let .done(_, _, root, path, _) = progress {
            do { try repository.recordSaved(root, path: path) } catch { failures.failed(error) }
        }
        return progress
    }

    /// The size of the regular file at `path`; nil when there is none there.
    static func regularFileSize(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return UInt64(info.st_size)
    }

    /// Whether `path` is a folder.
    static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// `~/x` is the home folder's `x`.
    static func expandingHome(_ path: String) -> String {
        guard path.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] else { return path }
        return home + path.dropFirst()
    }
}
