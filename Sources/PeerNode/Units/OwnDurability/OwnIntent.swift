import Crypto
import Glibc
import Gossip
import Reactor
import Store

/// Our post that is on the links before its row is committed
/// (docs/DECISIONS.md, "Own posts are sent before their row"): written to
/// a file of its own in the data directory before the send, with no
/// fsync, so a process that dies between the send and the commit loses
/// nothing (the kernel writes the page whatever becomes of the process)
/// and the next start stores it from here before anything else of ours is
/// signed (`recover`, from `Node.init`). A machine that stops may lose this
/// file as it loses an unsynced commit; the boot id covers both
/// (`OwnDurability`).
///
/// The file is one `OwnIntentRecord` (`PNOI`, the length, the envelope as
/// on the wire). Each post writes over the last, and the bytes are zeroed once its row
/// is committed; what does not read whole and verify is no intent.
final class OwnIntent {
    static let fileName = "own-intent"
    /// Bytes free on the data directory's filesystem below which a post is
    /// committed before it is sent, as before: on a disk about to fill, a
    /// post that cannot be stored is refused, never sent (a commit that
    /// still fails after the send is said and retried: `commitPending`).
    static let minimumFreeBytes: UInt64 = 1 << 20

    /// Whether `available` bytes free let a post go before its row.
    static func roomToSendFirst(available: UInt64) -> Bool { available >= minimumFreeBytes }

    let path: String
    private var fd: Int32 = -1
    /// Bytes the last `write` put in the file (zeroed once its row is committed).
    private var written = 0
    /// Our envelope sent and not yet committed: committed before anything
    /// else of ours is signed (`commitPending`), so no sequence is used twice.
    private(set) var pending: Envelope?

    init(directory: DataDirectory) {
        path = directory.file(Self.fileName)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Writes `e` over the last intent. False where it could not be written
    /// whole: then the post is committed before it is sent, as before.
    func write(_ e: Envelope) -> Bool {
        if fd < 0 { fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { return false }
        var fs = statvfs()
        guard fstatvfs(fd, &fs) == 0, Self.roomToSendFirst(available: UInt64(fs.f_bavail) &* UInt64(fs.f_frsize)) else { return false }
        let bytes = OwnIntentRecord.encode(e)
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        written = max(written, n)
        return n == bytes.count
    }

    /// Overwrites the file's bytes with zeros, keeping its blocks: once the
    /// row is committed the copy aside has no use, and a message deleted
    /// later must not stay readable here (an erasure erases its bytes).
    private func clear() {
        guard fd >= 0, written > 0 else { return }
        let zeros = [UInt8](repeating: 0, count: written)
        if zeros.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) == zeros.count { written = 0 }
    }

    /// Writes `e` and holds it as pending: true where the send may go
    /// before its commit (`commitPending` then follows the send).
    func hold(_ e: Envelope) -> Bool {
        guard write(e) else { return false }
        pending = e
        return true
    }

    /// Commits the pending envelope, if any (not fsynced: the sync follows
    /// as for every own post). A failure keeps it pending: every later post
    /// tries again first, and fails with it, rather than sign another at its
    /// sequence.
    func commitPending(to store: Store) throws {
        guard let e = pending else { return }
        _ = try store.insertOwn(e, at: Node.now(), durable: false)
        pending = nil
        clear()
    }

    /// At start, before anything of ours is signed: the intent a process
    /// that died left behind, committed where it continues our chain here
    /// (durably). Anything else in the file (older, or already stored) is
    /// left alone.
    func recover(into store: Store, me: PublicKey) throws {
        guard let e = read() else { return }
        // Zeroed once it is stored, or found to be nothing to store; kept where the store failed.
        if fd < 0 { fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW) }
        written = OwnIntentRecord.headerCount + e.encoded.count
        let head = try store.head(of: me)
        if e.author == me, e.sequence == (head?.sequence ?? 0) + 1, e.previous == head?.id ?? .zero {
            _ = try store.insertOwn(e, at: Node.now(), durable: true)
        }
        clear()
    }

    /// The envelope written last, if the file holds one whole with a good signature.
    private func read() -> Envelope? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        let most = OwnIntentRecord.maximumCount
        var buffer = [UInt8](repeating: 0, count: most)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, most, 0) }
        guard n > 0, let bytes = OwnIntentRecord.envelopeBytes(buffer[..<n]) else { return nil }
        return try? Envelope.decode(Array(bytes), verification: .signature)
    }
}
