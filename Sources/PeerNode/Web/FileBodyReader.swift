import Crypto
import Dispatch
import Gossip
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// A file held whole, given to the page a chunk at a time as its
/// connection takes it (`GET /file/ROOT`, an `HTTPBodyStream`): each
/// sealed chunk is read, opened with the offer's key and hashed on
/// `queue`, never on the loop, and the file is never held whole (a page
/// can download a 4 GiB file in 64 KB of memory). The last part is given
/// only if the whole matches the offer's plain hash; a chunk that does not
/// open, a short read or a hash that differs stops the body, so the client
/// sees a failed response, never a whole wrong file.
final class FileBodyReader: @unchecked Sendable {
    /// One reader at a time for every page request: they share a core, not the loop's.
    static let queue = DispatchQueue(label: "peernode.page-files")

    private let fd: Int32
    private let size: UInt64
    private let chunks: UInt64
    private let key: FileKey
    private let plainHash: [UInt8]
    // Touched only on `queue`, one part at a time (the connection asks again only once answered).
    private var index: UInt64 = 0
    private let hash = BLAKE2bStream()

    /// Opens the chunk file at `path` (nil with `errno` set when it cannot be).
    init?(path: String, size: UInt64, key: FileKey, plainHash: [UInt8]) {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        self.size = size
        chunks = FileOffer.chunks(size: size)
        self.key = key
        self.plainHash = plainHash
    }

    deinit { close(fd) }

    /// The body as the connection asks for it: `size` bytes of plaintext.
    var body: HTTPBodyStream { HTTPBodyStream(length: Int(size)) { deliver in self.next(deliver) } }

    /// Gives the next chunk's plaintext to `deliver`, from `queue` (nil: stop).
    func next(_ deliver: @escaping @Sendable ([UInt8]?) -> Void) {
        Self.queue.async { deliver(self.part()) }
    }

    private func part() -> [UInt8]? {
        guard index < chunks else { return nil }
        let length = FileOffer.plainLength(of: index, size: size) + FileKey.tagByteCount
        var sealed = [UInt8](repeating: 0, count: length)
        let offset = off_t(FileOffer.sealedOffset(of: index))
        var done = 0
        while done < length {
            let n = sealed.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, length - done, offset + off_t(done)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        guard let plain = try? key.open(chunk: sealed, index: index) else { return nil }
        hash.update(plain)
        index += 1
        if index == chunks, hash.finish() != plainHash { return nil }
        return plain
    }
}
