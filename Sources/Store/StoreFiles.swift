import Foundation
import Crypto
import Gossip
#if canImport(Glibc)
import Glibc
#endif

/// Files held (docs/PROTOCOL.md §16): a row per file in `files`, and its
/// sealed chunks in one file of the data directory's `files/` folder, named
/// by the root in hex, chunk `i` at `i × (chunkSize + tag)`. Only sealed
/// bytes are ever written there: a node that cannot read the offer holds
/// nothing it could read either.
extension Store {
    /// The folder of the chunk files, in the data directory.
    public static let filesFolder = "files"

    public struct FileRow: Equatable, Sendable {
        /// Sent from here, fetched by `/get`, or fetched by a relay to serve (and evicted first).
        public enum Origin: Int64, Sendable { case sent = 1, fetched = 2, relayed = 3 }
        public let root: [UInt8]
        public let size: UInt64
        /// One bit per chunk, chunk `i` at bit `i % 8` of byte `i / 8`.
        public var held: [UInt8]
        public var heldCount: UInt64
        public let origin: Origin
        /// The offer, where known.
        public let author: PublicKey?
        public let sequence: UInt64?
        public let added: UInt64
        /// Where a `/get` under way saves the file (nil: none is).
        public var folder: String?
        /// Where the last `/get` saved it whole (nil: never here). Kept by
        /// `recordSaved` alone; `saveFile` leaves it as it is.
        public var saved: String?

        public init(root: [UInt8], size: UInt64, origin: Origin, author: PublicKey?, sequence: UInt64?, added: UInt64) {
            self.root = root
            self.size = size
            self.origin = origin
            self.author = author
            self.sequence = sequence
            self.added = added
            let chunks = FileOffer.chunks(size: size)
            held = [UInt8](repeating: 0, count: Int((chunks + 7) / 8))
            heldCount = 0
        }

        public var chunks: UInt64 { FileOffer.chunks(size: size) }
        public var complete: Bool { heldCount == chunks }

        public func holds(_ index: UInt64) -> Bool {
            index < chunks && held[Int(index / 8)] & (1 << UInt8(index % 8)) != 0
        }

        public mutating func mark(_ index: UInt64) {
            guard index < chunks, !holds(index) else { return }
            held[Int(index / 8)] |= 1 << UInt8(index % 8)
            heldCount += 1
        }

        /// The same row, naming the envelope that offered its file.
        public func offered(by author: PublicKey, sequence: UInt64) -> FileRow {
            var row = FileRow(root: root, size: size, origin: origin, author: author, sequence: sequence, added: added)
            row.held = held
            row.heldCount = heldCount
            row.folder = folder
            return row
        }

        /// Bytes of sealed chunk `index` (its plaintext and the tag).
        public func sealedLength(of index: UInt64) -> Int {
            FileOffer.plainLength(of: index, size: size) + FileKey.tagByteCount
        }
    }

    /// The folder of the chunk files, made when missing.
    public func ensureFilesFolder() throws -> String {
        let path = directory.path + "/" + Self.filesFolder
        try Self.prepareFilesFolder(path)
        return path
    }

    /// The chunk file of `root`.
    public func chunkPath(_ root: [UInt8]) -> String {
        directory.path + "/" + Self.filesFolder + "/" + Hex.encode(root)
    }

    public func file(_ root: [UInt8]) throws -> FileRow? {
        // Read with `single`: the statement is reset, holding no read open on the table.
        try db.statement("SELECT size, held, held_count, origin, author, sequence, added, folder, saved FROM files WHERE root = ?1").bind(1, root)
            .single { try fileRow(root: root, $0) }
    }

    private func fileRow(root: [UInt8], _ s: Statement) throws -> FileRow {
        let author = s.blob(4)
        var row = FileRow(root: root, size: UInt64(clamping: s.int64(0)), origin: FileRow.Origin(rawValue: s.int64(3)) ?? .fetched,
                          author: author.isEmpty ? nil : try PublicKey(bytes: author), sequence: author.isEmpty ? nil : UInt64(clamping: s.int64(5)),
                          added: UInt64(clamping: s.int64(6)))
        let held = s.blob(1)
        guard held.count == row.held.count else { throw StoreError.corruptRow("a file's chunk map of \(held.count) bytes for \(row.chunks) chunks") }
        row.held = held
        row.heldCount = UInt64(clamping: s.int64(2))
        row.folder = s.text(7)
        row.saved = s.text(8)
        return row
    }

    /// Every file held, oldest first.
    public func files() throws -> [FileRow] {
        let s = try db.statement("SELECT size, held, held_count, origin, author, sequence, added, folder, saved, root FROM files ORDER BY added, root")
        var out: [FileRow] = []
        while try s.step() { out.append(try fileRow(root: s.blob(9), s)) }
        return out
    }

    /// Makes `root`'s chunk file, empty, where there is none: once, when a
    /// fetch starts (chunks are written into it without `O_CREAT`, so a file
    /// erased meanwhile is not made again by a late write).
    public func createChunkFile(_ root: [UInt8]) throws {
        _ = try ensureFilesFolder()
        let fd = open(chunkPath(root), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StoreError.directory(path: chunkPath(root), operation: "creating", errno: errno) }
        close(fd)
    }

    /// Records where a `/get` saved `root`'s file whole (`FileRow.saved`).
    /// Nothing for a file no longer held (erased meanwhile).
    public func recordSaved(_ root: [UInt8], path: String) throws {
        try db.statement("UPDATE files SET saved = ?2 WHERE root = ?1").bind(1, root).bind(2, path).run()
    }

    /// Records a file: its chunk map as it is.
    public func saveFile(_ row: FileRow) throws {
        let s = try db.statement("""
            INSERT INTO files(root, size, held, held_count, origin, author, sequence, added, folder) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT(root) DO UPDATE SET held = excluded.held, held_count = excluded.held_count, folder = excluded.folder,
                author = coalesce(files.author, excluded.author), sequence = coalesce(files.sequence, excluded.sequence)
            """).bind(1, row.root).bind(2, Int64(clamping: row.size)).bind(3, row.held).bind(4, Int64(clamping: row.heldCount))
            .bind(5, row.origin.rawValue).bind(8, Int64(clamping: row.added))
        if let folder = row.folder { _ = s.bind(9, folder) } else { _ = s.bindNull(9) }
        if let author = row.author, let sequence = row.sequence {
            _ = s.bind(6, author.bytes).bind(7, Int64(clamping: sequence))
        } else {
            _ = s.bindNull(6).bindNull(7)
        }
        try s.run()
    }

    /// The files whose offer is `author`'s envelope `sequence`.
    /// Offers bound to one file besides its row's, at most (`bindFile`).
    public static let maximumFileBindings = 16

    /// Binds `root`'s file to one more offer (author, sequence) besides the
    /// one its row names; nothing past `maximumFileBindings`. True when bound.
    @discardableResult
    public func bindFile(_ root: [UInt8], author: PublicKey, sequence: UInt64) throws -> Bool {
        let count = try db.statement("SELECT count(*) FROM file_bindings WHERE root = ?1").bind(1, root)
        guard try count.step(), count.int64(0) < Int64(Self.maximumFileBindings) else { return false }
        try db.statement("INSERT OR IGNORE INTO file_bindings(root, author, sequence) VALUES (?1, ?2, ?3)")
            .bind(1, root).bind(2, author.bytes).bind(3, Int64(clamping: sequence)).run()
        return true
    }

    /// The files the offer at (`author`, `sequence`) names: by their row, or bound besides it (`bindFile`).
    public func files(offeredBy author: PublicKey, sequence: UInt64) throws -> [[UInt8]] {
        let s = try db.statement("""
            SELECT root FROM files WHERE author = ?1 AND sequence = ?2
            UNION SELECT root FROM file_bindings WHERE author = ?1 AND sequence = ?2
            """).bind(1, author.bytes).bind(2, Int64(clamping: sequence))
        var out: [[UInt8]] = []
        while try s.step() { out.append(s.blob(0)) }
        return out
    }

    /// Writes sealed chunk `index` of `row`'s file where it belongs (not
    /// marked held: the caller records the map once a batch is written).
    public func writeChunk(_ sealed: [UInt8], index: UInt64, of row: FileRow) throws {
        let path = chunkPath(row.root)
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw StoreError.directory(path: path, operation: "opening", errno: errno) }
        defer { close(fd) }
        let offset = off_t(FileOffer.sealedOffset(of: index))
        var done = 0
        while done < sealed.count {
            let n = sealed.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, offset + off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.directory(path: path, operation: "writing a chunk to", errno: errno)
            }
            done += n
        }
    }

    /// Sealed chunk `index` of `row`'s file, read back (nil: not held).
    public func readChunk(_ index: UInt64, of row: FileRow) throws -> [UInt8]? {
        try readChunks([index], of: row)[0]
    }

    /// The sealed chunks at `indices` (nil for each not held), the chunk
    /// file opened once for all of them: a holder answers asks 16 at a time.
    public func readChunks(_ indices: [UInt64], of row: FileRow) throws -> [[UInt8]?] {
        guard indices.contains(where: row.holds) else { return indices.map { _ in nil } }
        let path = chunkPath(row.root)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw StoreError.directory(path: path, operation: "opening", errno: errno) }
        defer { close(fd) }
        return try indices.map { index in
            guard row.holds(index) else { return nil }
            return try Self.readSealed(fd, chunk: index, length: row.sealedLength(of: index), path: path)
        }
    }

    private static func readSealed(_ fd: Int32, chunk index: UInt64, length: Int, path: String) throws -> [UInt8] {
        let offset = off_t(FileOffer.sealedOffset(of: index))
        return try [UInt8](unsafeUninitializedCapacity: length) { out, count in
            var done = 0
            while done < length {
                let n = pread(fd, out.baseAddress! + done, length - done, offset + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw StoreError.directory(path: path, operation: "reading a chunk of", errno: errno)
                }
                guard n > 0 else { throw StoreError.corruptRow("the chunk file \(path) ends before chunk \(index)") }
                done += n
            }
            count = length
        }
    }

    /// Forgets a file and erases its chunks: the chunk file is overwritten
    /// with zeros, synced, and removed, so its sealed bytes are gone from the disk.
    public func eraseFile(_ root: [UInt8]) throws {
        if let detached = try detachFile(root) { Self.overwrite(detached) }
    }

    /// Chunk files being erased are named this, then the root and a tag of their own.
    public static let erasingPrefix = ".erasing-"

    /// Forgets a file and moves its chunk file out of the way, at once,
    /// under a name of its own (`erasingPrefix`): what to give `overwrite`
    /// (nil: no chunk file). Its tree goes too. A fetch of the same root
    /// after this makes a new chunk file; the old one is never served again.
    public func detachFile(_ root: [UInt8]) throws -> String? {
        try db.statement("DELETE FROM files WHERE root = ?1").bind(1, root).run()
        try db.statement("DELETE FROM file_bindings WHERE root = ?1").bind(1, root).run()
        let path = chunkPath(root)
        // The tree names no byte of the file, but it goes too, whatever became of the chunks.
        unlink(path + ".tree")
        let detached = directory.path + "/" + Self.filesFolder + "/" + Self.erasingPrefix + Hex.encode(root) + "-"
            + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard rename(path, detached) == 0 else {
            if errno == ENOENT { return nil }
            throw StoreError.directory(path: path, operation: "moving to erase", errno: errno)
        }
        return detached
    }

    /// Overwrites the file at `path` with zeros, syncs it and removes it
    /// (touches no database: runs on any thread). What it cannot do it
    /// leaves: the next start finds the file by its name (`erasing`).
    public static func overwrite(_ path: String) {
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size > 0 {
            let zeros = [UInt8](repeating: 0, count: 1 << 20)
            var at: off_t = 0
            while at < info.st_size {
                let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress!, min($0.count, Int(info.st_size - at)), at) }
                if n <= 0 { if errno == EINTR { continue }; break }
                at += off_t(n)
            }
            fsync(fd)
        }
        close(fd)
        unlink(path)
    }

    /// Chunk files whose erasing the process did not finish (it stopped
    /// meanwhile): to be given to `overwrite` again.
    public func erasing() -> [String] {
        let folder = directory.path + "/" + Self.filesFolder
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasPrefix(Self.erasingPrefix) }.sorted().map { folder + "/" + $0 }
    }

    static func prepareFilesFolder(_ path: String) throws {
        if mkdir(path, DataDirectory.mode) != 0, errno != EEXIST {
            throw StoreError.directory(path: path, operation: "creating", errno: errno)
        }
    }
}

extension Store {
    /// The leaf hashes of `root`'s chunk tree, kept beside its chunks once it
    /// is complete (a holder answers with proofs built from them).
    public func saveLeaves(_ leaves: [[UInt8]], of root: [UInt8]) throws {
        let path = chunkPath(root) + ".tree"
        let bytes = leaves.flatMap { $0 }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StoreError.directory(path: path, operation: "creating", errno: errno) }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.directory(path: path, operation: "writing", errno: errno)
            }
            done += n
        }
    }

    /// The leaf hashes kept for `root` (nil: none kept, or not `chunks` of them).
    public func leaves(of root: [UInt8], chunks: UInt64) throws -> [[UInt8]]? {
        let path = chunkPath(root) + ".tree"
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw StoreError.directory(path: path, operation: "opening", errno: errno)
        }
        defer { close(fd) }
        let length = Int(chunks) * FileTree.hashSize
        var bytes = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, length - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.directory(path: path, operation: "reading", errno: errno)
            }
            if n == 0 { return nil }
            done += n
        }
        return stride(from: 0, to: length, by: FileTree.hashSize).map { Array(bytes[$0..<($0 + FileTree.hashSize)]) }
    }
}
