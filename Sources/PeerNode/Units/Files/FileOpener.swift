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
/// buffer (`earlyChunks`), or past that bound is read back from the
/// temporary file when its turn comes (several sources' chunks come out of
/// order: the hash goes on with them, never left whole to the end). What is
/// hashed is already being written to the disk (`writeBehind`), so the
/// fsync at the end has little left to wait for. When every chunk is here,
/// `finish` checks the whole against the offer's hash, syncs it and gives
/// the file its name.
///
/// Called from the files worker (chunks) and from the loop (`abandon`)
/// or a worker (`finish`): every call holds its lock.
final class FileOpener: Sendable {
    /// Chunks that came before their turn to be hashed, held at most (4 MB); past it, each is read back in its turn.
    static let earlyChunks = 64
    /// Bytes hashed (and so written) between two starts of their writeback
    /// (`Syscall.writeBehind`): the disk works while the transfer goes on.
    static let writeBehindBytes: off_t = 8 << 20

    private struct State {
        var fd: Int32
        let hash = BLAKE2bStream()
        /// Chunks hashed so far, all below this index.
        var hashed: UInt64 = 0
        var early: [UInt64: [UInt8]] = [:]
        /// Bytes from the file's start whose writeback was started.
        var writtenBehind: off_t = 0
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

    /// Why the file cannot be opened into its folder (a write there failed,
    /// a chunk the key does not open), as soon as it is known: the fetch
    /// stops then, not after its last chunk.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// Chunks hashed so far (all below this index), and bytes whose writeback was started: what the tests look at.
    var progress: (hashed: UInt64, writtenBehind: off_t) { state.withLock { ($0.hashed, $0.writtenBehind) } }

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

    /// Chunk `index` held from an earlier run (`Files.HeldCheck`): taken as
    /// `take` takes one, and true, when it opens with the offer's key; false,
    /// nothing kept and the file not failed, when it does not (a write a
    /// crash or the disk changed: it is fetched again).
    func takeHeld(_ sealed: [UInt8], index: UInt64) -> Bool {
        guard let plain = try? key.open(chunk: sealed, index: index) else { return false }
        state.withLock { s in
            guard s.fd >= 0, s.failure == nil else { return }
            do { try write(plain, index: index, into: &s) } catch { s.failure = error }
        }
        return true
    }

    /// Opens chunk `index` into the temporary file (`write`).
    private func put(_ sealed: [UInt8], index: UInt64, into s: inout State) throws {
        guard !s.written.contains(index) else { return }
        let plain: [UInt8]
        do { plain = try key.open(chunk: sealed, index: index) } catch {
            throw NodeError.fileNotSaved(path: folder, reason: "chunk \(index) does not open with the offer's key (\(error))")
        }
        try write(plain, index: index, into: &s)
    }

    /// Writes opened chunk `index` into the temporary file and hashes it with
    /// those after it that wait, or keeps it until its turn (past
    /// `earlyChunks`, it is read back then).
    private func write(_ plain: [UInt8], index: UInt64, into s: inout State) throws {
        guard !s.written.contains(index) else { return }
        do { try Syscall.writeAll(s.fd, plain, at: off_t(index) * off_t(FileOffer.chunkSize)) } catch {
            throw NodeError.fileNotSaved(path: folder, reason: "\(error)")
        }
        s.written.insert(index)
        if index > s.hashed, s.early.count < Self.earlyChunks { s.early[index] = plain }
        guard index == s.hashed else { return }
        s.hash.update(plain)
        s.hashed += 1
        try hashInTurn(&s)
    }

    /// Hashes the chunks written whose turn has come: from the early
    /// buffer, or read back from the temporary file; then starts the
    /// writeback of what is hashed, every `writeBehindBytes`.
    private func hashInTurn(_ s: inout State) throws {
        var buffer: [UInt8] = []
        while s.written.contains(s.hashed) {
            if let next = s.early.removeValue(forKey: s.hashed) {
                s.hash.update(next)
            } else {
                let length = FileOffer.plainLength(of: s.hashed, size: offer.size)
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: FileOffer.chunkSize) }
                do { try Files.readFully(s.fd, into: &buffer, length, at: off_t(s.hashed) * off_t(FileOffer.chunkSize), path: temporary) } catch {
                    throw NodeError.fileNotSaved(path: folder, reason: "\(error)")
                }
                buffer.withUnsafeBytes { s.hash.update(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
            }
            s.hashed += 1
        }
        let hashedBytes = min(off_t(s.hashed) * off_t(FileOffer.chunkSize), off_t(offer.size))
        if hashedBytes - s.writtenBehind >= Self.writeBehindBytes {
            Syscall.writeBehind(s.fd, offset: s.writtenBehind, length: hashedBytes - s.writtenBehind)
            s.writtenBehind = hashedBytes
        }
    }

    /// Every chunk is held (`row`): those not taken here (held from an
    /// earlier run, or the whole file when it was held before the `/get`)
    /// are opened from the chunk file and hashed in turn, and the whole is
    /// checked against the offer's hash, synced and named.
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
            guard s.hashed == row.chunks else { throw NodeError.fileNotSaved(path: folder, reason: "chunk \(s.hashed) was not written") }
            let digest = s.hash.finish()
            guard digest == offer.plainHash else { throw NodeError.fileNotSaved(path: folder, reason: "the file's hash is not the one the offer names") }
            guard ftruncate(s.fd, off_t(offer.size)) == 0, fchmod(s.fd, SavedFile.fileMode) == 0, fsync(s.fd) == 0 else {
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
