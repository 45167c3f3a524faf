import Crypto
import Foundation
import Glibc
@testable import PeerNode
@testable import Store
import TestSupport
import Testing

/// A file's chunks erased (`Files.erase`, `Store.detachFile`, `Store.overwrite`).
@Suite("Files erased: a small one at once, a large one moved aside and overwritten off the loop")
struct FileEraseTests {
    let quota = RelayQuotaTests()

    /// A chunk file of `size` bytes for `root` (sparse, a marker at each end), hard-linked at `keep` so that its bytes can be read after it is removed.
    func chunkFile(_ node: Node, _ root: [UInt8], size: off_t, keep: String) throws {
        _ = try node.store.ensureFilesFolder()
        let path = node.store.chunkPath(root)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(fd >= 0 && ftruncate(fd, size) == 0)
        let marker = [UInt8](repeating: 0xEE, count: 16)
        #expect(pwrite(fd, marker, 16, 0) == 16 && pwrite(fd, marker, 16, size - 16) == 16)
        close(fd)
        #expect(link(path, keep) == 0)
    }

    /// Whether the file at `path` is `size` bytes, every one zero.
    func zeroed(_ path: String, size: off_t) -> Bool {
        guard let data = FileManager.default.contents(atPath: path), data.count == Int(size) else { return false }
        return data.allSatisfy { $0 == 0 }
    }

    func names(_ node: Node) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: node.store.directory.path + "/files")) ?? []).sorted()
    }

    @Test("a chunk file of eraseInlineLimit bytes is overwritten and gone when the erase returns; one byte past it is moved aside at once (its name gone) and overwritten and gone once the eraser has run; one a stopped process left half-erased is erased at the next start")
    func sizes() throws {
        let dir = TemporaryDirectory(), work = TemporaryDirectory()
        let node = try quota.life.node(dir)
        let small = [UInt8](repeating: 1, count: 32), large = [UInt8](repeating: 2, count: 32)
        let limit = Files.eraseInlineLimit

        try chunkFile(node, small, size: limit, keep: work.path + "/small")
        node.files.erase(small)
        #expect(names(node).isEmpty, "at the limit: gone when erase returns")
        #expect(zeroed(work.path + "/small", size: limit))

        try chunkFile(node, large, size: limit + 1, keep: work.path + "/large")
        // The eraser is held until the name is looked at, so the file is seen moved aside, not yet gone.
        let hold = DispatchSemaphore(value: 0)
        Files.eraser.async { hold.wait() }
        node.files.erase(large)
        let aside = names(node)
        hold.signal()
        #expect(aside.count == 1 && aside[0].hasPrefix(Store.erasingPrefix + Hex.encode(large)), "\(aside)")
        Files.eraser.sync {}
        #expect(names(node).isEmpty)
        #expect(zeroed(work.path + "/large", size: limit + 1))

        let left = node.store.directory.path + "/files/" + Store.erasingPrefix + Hex.encode(large) + "-1"
        #expect(FileManager.default.createFile(atPath: left, contents: Data(repeating: 0xEE, count: 1_000)))
        #expect(link(left, work.path + "/left") == 0)
        node.files.eraseLeftovers()
        Files.eraser.sync {}
        #expect(names(node).isEmpty)
        #expect(zeroed(work.path + "/left", size: 1_000))
    }
}
