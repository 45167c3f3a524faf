import Crypto
import Dispatch
import Foundation
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
    private let path: String
    private let size: UInt64
    private let key: FileKey
    private let plainHash: [UInt8]
    /// The bytes given: the whole file, or one range of it (`Range:`, RFC 9110 §14).
    let range: ClosedRange<UInt64>
    // Touched only on `queue`, one part at a time (the connection asks again only once answered).
    private var index: UInt64
    private let hash = BLAKE2bStream()

    /// Opens the chunk file at `path` (nil with `errno` set when it cannot be),
    /// to give `range` of the file's plaintext (the whole file when nil).
    init?(path: String, size: UInt64, key: FileKey, plainHash: [UInt8], range: ClosedRange<UInt64>? = nil) {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        self.path = path
        self.size = size
        self.key = key
        self.plainHash = plainHash
        self.range = range ?? 0...(size - 1)
        index = self.range.lowerBound / UInt64(FileOffer.chunkSize)
    }

    deinit { close(fd) }

    /// Whether the whole file is given (then checked against the offer's plain hash before its last bytes go).
    var whole: Bool { range.lowerBound == 0 && range.upperBound == size - 1 }

    /// The body as the connection asks for it: the range's bytes of plaintext.
    var body: HTTPBodyStream { HTTPBodyStream(length: Int(range.upperBound - range.lowerBound + 1)) { deliver in self.next(deliver) } }

    /// A request's `Range` (one range of bytes: `bytes=A-B`, `bytes=A-`, `bytes=-N`) for a file of
    /// `size` bytes: nil when there is none or it is not one such range (the whole file is given, as
    /// RFC 9110 §14.2 allows), `.failure` when it names no byte of the file (416).
    static func range(_ value: String?, size: UInt64) -> Result<ClosedRange<UInt64>, RangeRefused>? {
        guard let value, value.hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = UInt64(parts[0]), last = UInt64(parts[1])
        switch (parts[0].isEmpty, parts[1].isEmpty) {
        case (true, false):
            guard let suffix = last else { return nil }
            guard suffix > 0 else { return .failure(RangeRefused()) }
            return .success((size - min(suffix, size))...(size - 1))
        case (false, _):
            guard let first, parts[1].isEmpty || last != nil else { return nil }
            guard first < size else { return .failure(RangeRefused()) }
            let end = min(last ?? (size - 1), size - 1)
            guard end >= first else { return nil }
            return .success(first...end)
        default:
            return nil
        }
    }

    /// A range that names no byte of the file.
    struct RangeRefused: Error {}

    /// Gives the next chunk's plaintext to `deliver`, from `queue` (nil: stop).
    func next(_ deliver: @escaping @Sendable ([UInt8]?) -> Void) {
        Self.queue.async { deliver(self.part()) }
    }

    private func part() -> [UInt8]? {
        let chunkSize = UInt64(FileOffer.chunkSize)
        let start = index * chunkSize
        guard start <= range.upperBound else { return nil }
        let length = FileOffer.plainLength(of: index, size: size) + FileKey.tagByteCount
        var sealed = [UInt8](repeating: 0, count: length)
        guard (try? Files.readFully(fd, into: &sealed, length, at: off_t(FileOffer.sealedOffset(of: index)), path: path)) != nil,
              let plain = try? key.open(chunk: sealed, index: index) else { return nil }
        index += 1
        if whole {
            hash.update(plain)
            if start + UInt64(plain.count) == size, hash.finish() != plainHash { return nil }
            return plain
        }
        // A range: its part of this chunk (each chunk opened is still checked by its tag).
        let from = Int(max(range.lowerBound, start) - start), to = Int(min(range.upperBound, start + UInt64(plain.count) - 1) - start)
        return Array(plain[from...to])
    }
}
