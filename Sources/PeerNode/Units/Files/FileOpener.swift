import Crypto
import Gossip
import Reactor
import Store
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A file opened into its folder as its chunks come, so that a `/get` ends
/// when its last chunk does and not a whole pass later: each chunk, once
/// checked against the tree and written (`Files.ChunkCheck`, on the files
/// worker), is opened with the offer's key and written at its place in a
/// temporary file in the folder asked for. The plaintext's hash is taken
/// in chunk order; a chunk that comes before its turn waits in a bounded
/// buffer (`earlyChunks`), and past that bound the hash is left to be read
/// back from the temporary file at the end. When every chunk is here,
/// `finish` hashes what is left, checks the whole against the offer's hash
/// and gives the file its name.
///
/// Called from the files worker (chunks) and from the loop (`abandon`)
/// or a worker (`finish`): every call holds its lock.
final class FileOpener: Sendable {
    /// Chunks that came before their turn to be hashed, held at most (4 MB); past it, the rest is read back at the end.
    static let earlyChunks = 64

    private struct State {
        var fd: Int32
        let hash = BLAKE2bStream()
        /// Chunks hashed so far, all below this index.
        var hashed: UInt64 = 0
        var early: [UInt64: [UInt8]] = [:]
        /// The buffer overflowed: from `hashed` on, the hash is taken from the temporary file.
        var readBack = false
        /// Chunks written into the temporary file.
        var written: Set<UInt64> = []
        /// Why the file cannot be opened (a chunk the offer's key does not open, a write that failed).
        var failure: (any Error)?
    }

    let offer: FileOffer
    let folder: String
    let temporary: String
    private let key: FileKey
    private let state: Mutex<State>

    /// Makes the temporary file in `folder`; throws why it cannot (the
    /// offer's key is no key, the folder takes no file).
    init(offer: FileOffer, folder: String) throws {
        guard let key = FileKey(exactly: offer.key) else { throw NodeError.fileNotSaved(path: folder, reason: "the offer's key is not a key") }
        let temporary = Self.temporaryPath(offer, in: folder)
        let fd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o666)
        guard fd >= 0 else { throw NodeError.fileNotSaved(path: folder, reason: String(cString: strerror(errno))) }
        self.offer = offer
        self.folder = folder
        self.temporary = temporary
        self.key = key
        state = Mutex(State(fd: fd))
    }

    /// Where a file being opened is written before it is named: a hidden name in its folder.
    static func temporaryPath(_ offer: FileOffer, in folder: String) -> String {
        folder + "/.peernode-" + Hex.encode(offer.root.prefix(8)) + ".part"
    }

    /// Chunk `index`, checked against the tree: opened, written at its
    /// place, and hashed in turn. A failure is kept and said by `finish`.
    func take(_ sealed: [UInt8], index: UInt64) {
        state.withLock { s in
            guard s.fd >= 0, s.failure == nil else { return }
            do { try put(sealed, index: index, into: &s) } catch { s.failure = error }
        }
    }

    /// Opens chunk `index` into the temporary file and hashes it, or keeps it
    /// until its turn (past `earlyChunks`, the rest is read back at the end).
    private func put(_ sealed: [UInt8], index: UInt64, into s: inout State) throws {
        guard !s.written.contains(index) else { return }
        let plain: [UInt8]
        do { plain = try key.open(chunk: sealed, index: index) } catch {
            throw NodeError.fileNotSaved(path: folder, reason: "chunk \(index) does not open with the offer's key (\(error))")
        }
        do { try Syscall.writeAll(s.fd, plain, at: off_t(index) * off_t(FileOffer.chunkSize)) } catch {
            throw NodeError.fileNotSaved(path: folder, reason: "\(error)")
        }
        s.written.insert(index)
        guard !s.readBack, index >= s.hashed else { return }
        if index > s.hashed {
            guard s.early.count < Self.earlyChunks else {
                s.readBack = true
                s.early = [:]
                return
            }
            s.early[index] = plain
            return
        }
        s.hash.update(plain)
        s.hashed += 1
        while let next = s.early.removeValue(forKey: s.hashed) {
            s.hash.update(next)
            s.hashed += 1
        }
    }

    /// Every chunk is held (`row`): those not taken here (held from an
    /// earlier run, or the whole file when it was held before the `/get`)
    /// are opened from the chunk file, what was not hashed in turn is read
    /// back, and the whole is checked against the offer's hash and named.
    /// The path it was given and its hash.
    func finish(_ row: Store.FileRow, store: Store) throws -> (String, [UInt8]) {
        try state.withLock { s throws -> (String, [UInt8]) in
            defer { close(&s) }
            if let failure = s.failure { throw failure }
            guard s.fd >= 0 else { throw NodeError.fileNotSaved(path: folder, reason: "the transfer was stopped") }
            for index in 0..<row.chunks where !s.written.contains(index) {
                guard let sealed = try store.readChunk(index, of: row) else { throw NodeError.fileNotSaved(path: folder, reason: "chunk \(index) is missing") }
                try put(sealed, index: index, into: &s)
            }
            var buffer = [UInt8](repeating: 0, count: FileOffer.chunkSize)
            while s.hashed < row.chunks {
                let length = FileOffer.plainLength(of: s.hashed, size: offer.size)
                do { try Files.readFully(s.fd, into: &buffer, length, at: off_t(s.hashed) * off_t(FileOffer.chunkSize), path: temporary) } catch {
                    throw NodeError.fileNotSaved(path: folder, reason: "\(error)")
                }
                buffer.withUnsafeBytes { s.hash.update(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
                s.hashed += 1
            }
            let digest = s.hash.finish()
            guard digest == offer.plainHash else { throw NodeError.fileNotSaved(path: folder, reason: "the file's hash is not the one the offer names") }
            guard ftruncate(s.fd, off_t(offer.size)) == 0, fsync(s.fd) == 0 else {
                throw NodeError.fileNotSaved(path: folder, reason: String(cString: strerror(errno)))
            }
            let path = try SavedFile.place(temporary, in: folder, as: offer.name)
            return (path, digest)
        }
    }

    /// The transfer stopped (erased, failed): the temporary file goes.
    func abandon() {
        state.withLock { close(&$0) }
    }

    /// Closes the temporary file and removes it (once named, it has another name too: only the temporary one goes).
    private func close(_ s: inout State) {
        guard s.fd >= 0 else { return }
        Glibc.close(s.fd)
        s.fd = -1
        s.early = [:]
        unlink(temporary)
    }
}
