import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store
#if canImport(Glibc)
import Glibc
#endif

/// Files in conversations (issue 39; docs/PROTOCOL.md §16). A file is
/// offered by a message of kind `file` (`FileOffer`, sealed like a text);
/// its bytes are sealed chunk by chunk under the offer's key and kept once
/// in the data directory, under a hash tree whose root the offer names.
/// `/get` fetches the chunks from every linked peer that holds them
/// (`FileFetch`, pure), checks each against the tree before it is written,
/// and saves the opened file where it was asked to go.
///
/// Owns the transfers running and the trees it serves proofs from. Given
/// the store (`FileRepository`) and the node's one validity check (to read
/// an offer again after a restart). Its answers are values: the offer to
/// post, the messages to send on a link, the events to show. Confined to
/// the node's loop.
final class Files {
    /// Chunk asks one link may have waiting to be answered here; more are dropped (`file_message_dropped`).
    static let maximumQueuedWants = 256
    /// Seconds between two progress events of one transfer.
    static let progressInterval = 0.25
    /// Chunk maps written to the store every this many chunks (and at the end): a crash re-fetches at most these.
    static let mapWriteEvery = 64
    /// What a relay keeps of files to serve unless `--max-files` says otherwise.
    static let relayDefaultQuota: UInt64 = 1 << 30
    /// Trees kept in memory for answering asks.
    static let treesKept = 4

    /// A transfer someone asked for: where it goes and how it is told.
    struct Wanted {
        let offer: FileOffer
        /// The message number and the place it was offered in, for events.
        let number: Int
        let place: String
        /// The room or conversation it was offered in (`/cancel` alone finds it by this).
        let room: RoomID
        var lastProgress = 0.0
        var sinceMapWrite = 0
        /// Said to be waiting for someone who holds it (`Files.waiting`), since the last chunk.
        var toldWaiting = false
        /// Opens the file into its folder as its chunks come (`FileOpener`).
        let opener: FileOpener
    }

    let repository: FileRepository
    unowned let envelopes: any EnvelopeOpening
    let failures: StoreFailures
    var fetch = FileFetch()
    var wanted: [[UInt8]: Wanted] = [:]
    var rows: [[UInt8]: Store.FileRow] = [:]
    /// Leaves of the chunks fetched so far, per transfer.
    var leaves: [[UInt8]: [UInt64: [UInt8]]] = [:]
    /// What is known of the tree of each file being fetched: the leaves and
    /// the hashes beside them that came with its chunks, from which a chunk
    /// held is served with its proof (gone once the file is whole).
    var partial: [[UInt8]: PartialTree] = [:]
    /// Trees of files held whole, the last few served or completed, with the
    /// file's row where it was read (`answer`).
    var trees: [(root: [UInt8], levels: [[[UInt8]]], row: Store.FileRow?)] = []
    /// Bytes of files a relay keeps to serve (`--max-files`); nil: it fetches none.
    var maximumHeld: UInt64?
    /// A relay's fetches that a peer's ask started and no chunk has come
    /// for yet, by who asked (`relayFetchesPerAsker`).
    var unprovenRelayFetches: [[UInt8]: PublicKey] = [:]
    /// Chunks that did not verify (`file_bad_chunk`).
    var badChunks = 0
    /// Files we offered, to be handed to the relays we are linked to.
    var relayHandOver = RelayHandOver()
    /// A fetch is to be dealt again once `FileFetch.lackFirst` has passed (a timer is set).
    var askAgainDue = false
    /// Peers' asks for chunks of files being fetched here that have not come yet.
    var waitingAsks = WaitingAsks()
    /// Peers known to be fetching each file being fetched here too (they
    /// asked us for its chunks), for the order that keeps waits from
    /// forming a ring (`answer`).
    var fetchersOf: [[UInt8]: Set<PublicKey>] = [:]
    /// A check of the waiting asks' patience is set on the loop.
    var patienceCheckDue = false

    /// An ask that stopped waiting, to be answered: `held`, with the chunks
    /// (they came); otherwise none.
    struct FreedAsk {
        let link: LinkID
        let root: [UInt8]
        let chunks: [UInt64]
        let held: Bool
    }

    /// Asks that stopped waiting, to be answered (`takeFreedAsks`).
    var freedAsks: [FreedAsk] = []

    /// Asks that stopped waiting since the last call (their chunks came, their
    /// fetch ended, or, with `expiring`, they waited `WaitingAsks.patience`:
    /// looked at by the patience timer, not at every chunk), for the node to answer.
    func takeFreedAsks(expiring now: Double? = nil) -> [FreedAsk] {
        if let now, !waitingAsks.isEmpty {
            for (root, link, chunks) in waitingAsks.expired(now: now) { freedAsks.append(FreedAsk(link: link, root: root, chunks: chunks, held: false)) }
        }
        defer { freedAsks = [] }
        return freedAsks
    }

    /// `peer` asked for `chunks` of `root`: if this node fetches it too, the
    /// peer is known to be fetching it (the hand-over's ask, the file's last
    /// chunk alone from its author, does not make it one).
    func asked(_ root: [UInt8], chunks: [UInt64], by peer: PublicKey) {
        guard let row = rows[root], fetch.fetches(root), chunks != [row.chunks - 1] else { return }
        fetchersOf[root, default: []].insert(peer)
    }

    /// The fetch of `root` ended: the asks waiting for it are answered (with
    /// the chunks if it is held whole now, else none), its fetchers forgotten.
    func endWaiting(_ root: [UInt8], held: Bool) {
        fetchersOf[root] = nil
        for (link, chunks) in waitingAsks.ended(root) { freedAsks.append(FreedAsk(link: link, root: root, chunks: chunks, held: held)) }
    }

    init(repository: FileRepository, envelopes: any EnvelopeOpening, failures: StoreFailures) {
        self.repository = repository
        self.envelopes = envelopes
        self.failures = failures
    }

    // MARK: sending

    /// A file sealed into the data directory, not yet kept: its offer, the
    /// leaves of its tree, and the staging file its sealed chunks are in.
    struct SealedFile: Sendable {
        let offer: FileOffer
        let leaves: [[UInt8]]
        let staging: String
    }

    /// Staging files start with this (a sealing cut short leaves one; they are removed at start).
    static let stagingPrefix = "staging-"

    /// Reads, seals and writes, then keeps: `seal` and `keep` in one go, on the loop.
    func prepare(path: String, name: String? = nil, caption: String, now: UInt64) throws -> FileOffer {
        try keep(try Self.seal(path: path, name: name, caption: caption, folder: try stagingFolder()), now: now)
    }

    /// The folder staging files go to (made if missing).
    func stagingFolder() throws(RepositoryError) -> String {
        try storeCall("making the files folder") { try repository.store.ensureFilesFolder() }
    }

    /// Reads the file at `path`, seals it chunk by chunk under a new key
    /// into a staging file in `folder`, and builds its tree. Touches no
    /// state of the node: it runs off the loop, a large file taking seconds.
    static func seal(path: String, name: String?, caption: String, folder: String) throws -> SealedFile {
        var info = stat()
        guard stat(path, &info) == 0 else { throw NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let reason = info.st_mode & S_IFMT == S_IFDIR ? "a folder is not sent (send the files in it, or an archive of it)" : "not a regular file"
            throw NodeError.fileUnreadable(path: path, reason: reason)
        }
        // A file the system gives no size (0: /proc, /sys) is read to its end instead; any other is read for the size it has.
        let stated = UInt64(info.st_size)
        if stated > 0 { try check(size: stated, of: path) }
        // Not blocking: a file that gives its bytes only as they come (/proc/kmsg) is refused, not waited on for ever.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        let staging = folder + "/" + stagingPrefix + Hex.encode(secureRandomBytes(8))
        let out = open(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard out >= 0 else { throw NodeError.fileNotSaved(path: staging, reason: String(cString: strerror(errno))) }
        var kept = false
        defer {
            close(out)
            if !kept { unlink(staging) }
        }
        let key = FileKey.generate()
        let plain = BLAKE2bStream()
        var leafHashes: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: FileOffer.chunkSize)
        var size: UInt64 = 0
        var index: UInt64 = 0
        while stated == 0 || index < FileOffer.chunks(size: stated) {
            let offset = off_t(index) * off_t(FileOffer.chunkSize)
            let length: Int
            if stated > 0 {
                length = FileOffer.plainLength(of: index, size: stated)
                try readFully(fd, into: &buffer, length, at: offset, path: path)
            } else {
                length = try read(fd, into: &buffer, upTo: FileOffer.chunkSize, at: offset, path: path)
                guard length > 0 else { break }
                try check(size: size + UInt64(length), of: path)
            }
            size += UInt64(length)
            let sealed = buffer.withUnsafeBytes { b in
                plain.update(UnsafeRawBufferPointer(rebasing: b[0..<length]))
                return key.seal(chunk: UnsafeRawBufferPointer(rebasing: b[0..<length]), index: index)
            }
            leafHashes.append(FileTree.leaf(index: index, sealed: sealed))
            // In index order, so each lands at its `FileOffer.sealedOffset`.
            do { try Syscall.writeAll(out, sealed) } catch { throw NodeError.fileNotSaved(path: staging, reason: "\(error)") }
            index += 1
            // Read to its end: a chunk cut short was the last.
            if stated == 0, length < FileOffer.chunkSize { break }
        }
        guard size > 0, let root = FileTree.root(leafHashes) else { throw NodeError.fileEmpty(path: path) }
        let name = name ?? String(path.split(separator: "/").last ?? "file")
        kept = true
        return SealedFile(offer: FileOffer(size: size, root: root, plainHash: plain.finish(), key: key.exportedBytes, name: name,
                                           type: mediaType(of: name), caption: caption),
                          leaves: leafHashes, staging: staging)
    }

    /// A file of `size` bytes can be sent: 1 to `FileOffer.maximumSize`.
    static func check(size: UInt64, of path: String) throws {
        guard size > 0 else { throw NodeError.fileEmpty(path: path) }
        guard size <= FileOffer.maximumSize else { throw NodeError.fileTooLarge(path: path, size: size) }
    }

    /// A sealed file made ours: its chunks under their root's name, its row
    /// (held whole, sent from here) and its tree kept. The offer to post.
    func keep(_ sealed: SealedFile, now: UInt64) throws -> FileOffer {
        let offer = sealed.offer
        var row = Store.FileRow(root: offer.root, size: offer.size, origin: .sent, author: nil, sequence: nil, added: now)
        for index in 0..<row.chunks { row.mark(index) }
        guard rename(sealed.staging, repository.store.chunkPath(offer.root)) == 0 else {
            unlink(sealed.staging)
            throw NodeError.fileNotSaved(path: repository.store.chunkPath(offer.root), reason: String(cString: strerror(errno)))
        }
        try repository.save(row)
        try repository.saveLeaves(sealed.leaves, of: offer.root)
        keep(offer.root, FileTree.levels(sealed.leaves))
        return offer
    }

    /// Removes staging files a sealing cut short left (at start).
    func removeStaging() {
        guard let folder = failures.read({ () throws(RepositoryError) in try stagingFolder() }),
              let names = FileManager.default.enumerator(atPath: folder) else { return }
        for case let name as String in names where name.hasPrefix(Self.stagingPrefix) { unlink(folder + "/" + name) }
    }

    /// Reads up to `length` bytes at `offset` into `buffer`: fewer only at the file's end (0: past it).
    static func read(_ fd: Int32, into buffer: inout [UInt8], upTo length: Int, at offset: off_t, path: String) throws -> Int {
        var got = 0
        while got < length {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, length - got, offset + off_t(got)) }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN { throw NodeError.fileUnreadable(path: path, reason: "it gives its bytes only as they come") }
            guard n >= 0 else { throw NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            got += n
        }
        return got
    }

    /// Reads exactly `length` bytes at `offset` into `buffer`: a file that ends sooner got shorter while being read.
    static func readFully(_ fd: Int32, into buffer: inout [UInt8], _ length: Int, at offset: off_t, path: String) throws {
        guard try read(fd, into: &buffer, upTo: length, at: offset, path: path) == length else {
            throw NodeError.fileUnreadable(path: path, reason: "it got shorter while being read")
        }
    }

    /// The offer was posted as `e`: a delete of it erases the chunks.
    /// Our offer `e` of a file kept: recorded with its row, and to be handed to our relays.
    func offered(_ offer: FileOffer, as e: Envelope, clock: Double) throws {
        guard let row = try repository.file(offer.root) else { return }
        try repository.save(row.offered(by: e.author, sequence: e.sequence))
        relayHandOver.offered(root: offer.root, size: offer.size, as: Dependency(author: e.author, sequence: e.sequence), now: clock)
    }

    /// At start: our offers of the last `RelayHandOver.patience` among the
    /// files held (`rows`, read once at start), to be handed to the relays
    /// linked from now on (`now` the wall clock in milliseconds, `clock` the
    /// node's monotonic one).
    func handOverKept(_ rows: [Store.FileRow], now: UInt64, clock: Double) {
        for row in rows where row.origin == .sent && row.complete {
            guard let author = row.author, let sequence = row.sequence else { continue }
            let age = Double(now > row.added ? now - row.added : 0) / 1000
            guard age < RelayHandOver.patience else { continue }
            relayHandOver.offered(root: row.root, size: row.size, as: Dependency(author: author, sequence: sequence), now: clock - age)
        }
    }

    /// A media type from a name's extension, for the page (pictures shown inline).
    static func mediaType(of name: String) -> String {
        switch name.split(separator: ".").last?.lowercased() ?? "" {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "pdf": "application/pdf"
        case "txt", "log", "md": "text/plain"
        default: ""
        }
    }
}
