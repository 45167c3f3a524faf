import Crypto
import Foundation
import Gossip
import NodeCore
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
        let folder: String
        /// The message number and the place it was offered in, for events.
        let number: Int
        let place: String
        var lastProgress = 0.0
        var sinceMapWrite = 0
    }

    let repository: FileRepository
    unowned let envelopes: any EnvelopeOpening
    let failures: StoreFailures
    var fetch = FileFetch()
    var wanted: [[UInt8]: Wanted] = [:]
    var rows: [[UInt8]: Store.FileRow] = [:]
    /// Leaves of the chunks fetched so far, per transfer.
    var leaves: [[UInt8]: [UInt64: [UInt8]]] = [:]
    var trees: [(root: [UInt8], levels: [[[UInt8]]])] = []
    /// Bytes of files a relay keeps to serve (`--max-files`); nil: it fetches none.
    var maximumHeld: UInt64?
    /// Chunks that did not verify (`file_bad_chunk`).
    var badChunks = 0

    init(repository: FileRepository, envelopes: any EnvelopeOpening, failures: StoreFailures) {
        self.repository = repository
        self.envelopes = envelopes
        self.failures = failures
    }

    // MARK: sending

    /// Reads the file at `path`, seals it chunk by chunk under a new key into
    /// the data directory and builds its tree: the offer to post. The file's
    /// row is kept as sent (`offered` names the envelope once it is posted).
    func prepare(path: String, name: String? = nil, caption: String, now: UInt64) throws -> FileOffer {
        var info = stat()
        guard stat(path, &info) == 0 else { throw NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw NodeError.fileUnreadable(path: path, reason: "not a regular file") }
        let size = UInt64(info.st_size)
        guard size > 0 else { throw NodeError.fileEmpty(path: path) }
        guard size <= FileOffer.maximumSize else { throw NodeError.fileTooLarge(path: path, size: size) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }

        let key = FileKey.generate()
        let chunks = FileOffer.chunks(size: size)
        let plain = BLAKE2bStream()
        var sealedChunks: [[UInt8]] = []
        var leafHashes: [[UInt8]] = []
        // The chunks are sealed before the root is known, so they wait in a
        // temporary file named for the key, then move to the root's name.
        var buffer = [UInt8](repeating: 0, count: FileOffer.chunkSize)
        let staging = Store.FileRow(root: [UInt8](repeating: 0, count: 32), size: size, origin: .sent, author: nil, sequence: nil, added: now)
        for index in 0..<chunks {
            let length = Int(min(UInt64(FileOffer.chunkSize), size - index * UInt64(FileOffer.chunkSize)))
            var got = 0
            while got < length {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, length - got, off_t(index) * off_t(FileOffer.chunkSize) + off_t(got)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw NodeError.fileUnreadable(path: path, reason: n == 0 ? "it got shorter while being read" : String(cString: strerror(errno))) }
                got += n
            }
            let sealed = buffer.withUnsafeBytes { b in
                plain.update(UnsafeRawBufferPointer(rebasing: b[0..<length]))
                return key.seal(chunk: UnsafeRawBufferPointer(rebasing: b[0..<length]), index: index)
            }
            leafHashes.append(FileTree.leaf(index: index, sealed: sealed))
            if chunks <= 1_024 { sealedChunks.append(sealed) } else { try write(sealed, index: index, staging: staging, key: key) }
        }
        let levels = FileTree.levels(leafHashes)
        guard let root = levels.last?.first else { throw NodeError.fileEmpty(path: path) }
        var row = Store.FileRow(root: root, size: size, origin: .sent, author: nil, sequence: nil, added: now)
        try repository.save(row)
        if sealedChunks.isEmpty {
            try moveStaging(key: key, to: row)
        } else {
            for (index, sealed) in sealedChunks.enumerated() { try repository.write(sealed, index: UInt64(index), of: row) }
        }
        for index in 0..<chunks { row.mark(index) }
        try repository.save(row)
        try repository.saveLeaves(leafHashes, of: root)
        keep(root, levels)
        let name = name ?? String(path.split(separator: "/").last ?? "file")
        return FileOffer(size: size, root: root, plainHash: plain.finish(), key: key.exportedBytes, name: name,
                         type: Self.mediaType(of: name), caption: caption)
    }

    private func stagingRoot(_ key: FileKey) -> [UInt8] { BLAKE2b.derive(label: "peernode/1 file staging", key.exportedBytes) }

    private func write(_ sealed: [UInt8], index: UInt64, staging: Store.FileRow, key: FileKey) throws {
        let row = Store.FileRow(root: stagingRoot(key), size: staging.size, origin: .sent, author: nil, sequence: nil, added: staging.added)
        if index == 0 { try repository.save(row) }
        try repository.write(sealed, index: index, of: row)
    }

    private func moveStaging(key: FileKey, to row: Store.FileRow) throws {
        let store = repository.store
        let from = store.chunkPath(stagingRoot(key)), to = store.chunkPath(row.root)
        guard rename(from, to) == 0 else { throw NodeError.fileUnreadable(path: to, reason: String(cString: strerror(errno))) }
        try repository.erase(stagingRoot(key))
    }

    /// The offer was posted as `e`: a delete of it erases the chunks.
    func offered(_ offer: FileOffer, as e: Envelope) throws {
        guard var row = try repository.file(offer.root) else { return }
        row = Store.FileRow(root: row.root, size: row.size, origin: row.origin, author: e.author, sequence: e.sequence, added: row.added)
        for index in 0..<row.chunks { row.mark(index) }
        try repository.save(row)
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
