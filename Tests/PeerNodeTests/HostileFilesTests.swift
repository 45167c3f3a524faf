import Crypto
import Foundation
import Gossip
import TestSupport
import Testing
@testable import PeerNode

/// Files' messages (docs/PROTOCOL.md §16, types 13–16) from a peer written
/// to the protocol document and to no node's rules: over a real link, to a
/// node holding a file, each bound the document names holds at the limit
/// and one past it, and the node goes on answering.
@Suite("Hostile members: files' messages over a real link", .serialized)
struct HostileFilesTests {
    /// A node (`--json`) that offered a random file of `chunks` whole chunks: the node, its port, the file's root.
    func holder(chunks: Int) async throws -> (TemporaryDirectory, NodeProcess, UInt16, [UInt8], TemporaryDirectory) {
        let (dir, node, port) = try await target()
        let source = TemporaryDirectory()
        let path = source.path + "/held.bin"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(secureRandomBytes(chunks * FileOffer.chunkSize))))
        node.send("/send \(path)")
        let offer = try #require(await node.wait(timeout: 60) { $0["type"] == "file" })
        let root = try #require(Hex.bytes(offer["root"] ?? ""))
        return (dir, node, port, root, source)
    }

    /// The chunk messages `peer` heard for `root`, by index.
    func chunksHeard(_ peer: HostilePeer, _ root: [UInt8]) -> [UInt64] {
        peer.lock.withLock { peer.heard }.compactMap { message -> UInt64? in
            if case let .file(.chunk(r, index, _, _)) = message, r == root { return index }
            return nil
        }
    }

    @Test("asks past Files.maximumQueuedWants waiting on one link are dropped and counted, each answered once at most; the node answers at once")
    func askFlood() async throws {
        let chunks = 600
        let (dir, node, port, root, source) = try await holder(chunks: chunks)
        let size = UInt64(chunks * FileOffer.chunkSize)
        // Ten wants of 64 chunks at once (640 asks, past the 256 that may wait), and the same ten again.
        let wants = stride(from: 0, to: chunks, by: FileMessage.maximumIndices).map { start in
            GossipMessage.file(.want(root: root, size: size, chunks: (UInt64(start)..<UInt64(min(chunks, start + FileMessage.maximumIndices))).map { $0 }, offer: nil))
        }
        // `keep` first, as a --peer link says: else the link is closed as unclaimed after Overlay.claimGrace
        // (5 s), which a loaded machine can pass before the checks below end, and the close would be no finding.
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: HostilePeer.lan, messages: [.overlay(.keep(port: 0))] + wants + wants)
        let attack = Task { try await peer.attack(port: port, timeout: 60) }
        #expect(await counterAtLeast(node, "file_message_dropped", 1))
        let stats = await node.stats()
        #expect(stats != nil, "the node answers while it serves")
        // What was queued is answered (the link drains), and no chunk twice more than it was asked.
        #expect(await eventually(30) { chunksHeard(peer, root).count >= Files.maximumQueuedWants })
        let heard = chunksHeard(peer, root)
        #expect(heard.count <= 2 * chunks && Dictionary(grouping: heard, by: { $0 }).values.allSatisfy { $0.count <= 2 }, "\(heard.count) chunks")
        #expect(peer.lock.withLock { peer.closed } == nil, "asking too much is dropped, not a reason to close")
        await node.quit()
        _ = try? await attack.value
        withExtendedLifetime((dir, source)) {}
    }

    @Test("chunks nobody asked for, of a file held and of a root unknown, are not written or kept; the node answers at once")
    func unaskedChunks() async throws {
        let (dir, node, port, root, source) = try await holder(chunks: 3)
        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/files").sorted()
        let sealed = secureRandomBytes(FileOffer.chunkSize + 16)
        let other = secureRandomBytes(32)
        let floods = (0..<200).map { i in GossipMessage.file(.chunk(root: i % 2 == 0 ? root : other, index: UInt64(i % 3), proof: [], sealed: sealed)) }
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: HostilePeer.lan, messages: floods + [.file(.none(root: other, chunks: [0, 1]))])
        let attack = Task { try await peer.attack(port: port, timeout: 60) }
        #expect(await node.wait { $0["type"] == "peer_up" } != nil)
        let stats = await node.stats()
        #expect(stats != nil)
        // Counted as they came, never checked (a check would count the bad ones: random bytes never verify).
        #expect(Int(stats?["file_chunks_received"] ?? "0") ?? 0 > 0 && Int(stats?["file_bad_chunk"] ?? "0") == 0, "\(stats ?? [:])")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/files").sorted() == filesBefore)
        await node.quit()
        _ = try? await attack.value
        withExtendedLifetime(source) {}
    }

    @Test("a want of FileMessage.maximumIndices indices is answered; one more, an index past the size's last chunk, or a size past FileOffer.maximumSize closes the link")
    func wantBounds() async throws {
        let chunks = 70
        let (dir, node, port, root, source) = try await holder(chunks: chunks)
        let size = UInt64(chunks * FileOffer.chunkSize)
        // Written from §11's table: 0x0D ‖ root 32 ‖ size varint ‖ count varint ‖ count × index varint.
        func varint(_ value: UInt64) -> [UInt8] {
            var v = value, out: [UInt8] = []
            repeat {
                out.append(UInt8(v & 0x7F) | (v >= 0x80 ? 0x80 : 0))
                v >>= 7
            } while v > 0
            return out
        }
        func want(_ indices: [UInt64], size: UInt64) -> [UInt8] {
            [0x0D] + root + varint(size) + varint(UInt64(indices.count)) + indices.flatMap(varint)
        }
        let atLimit = try GossipMessage.decode(want((0..<UInt64(FileMessage.maximumIndices)).map { $0 }, size: size))
        let fine = try HostilePeer(identity: try SigningKey.generate(), network: HostilePeer.lan, messages: [.overlay(.keep(port: 0)), atLimit])
        let fineAttack = Task { try await fine.attack(port: port, timeout: 30) }
        #expect(await eventually(30) { chunksHeard(fine, root).count == FileMessage.maximumIndices })
        #expect(fine.lock.withLock { fine.closed } == nil)
        for bad in [want((0...UInt64(FileMessage.maximumIndices)).map { $0 }, size: size),
                    want([UInt64(chunks)], size: size),
                    want([0], size: FileOffer.maximumSize + 1)] {
            #expect(throws: EnvelopeError.self) { try GossipMessage.decode(bad) }
            let peer = try HostilePeer(identity: try SigningKey.generate(), network: HostilePeer.lan, messages: [], raw: [bad])
            try await peer.attack(port: port, timeout: 20)
            #expect(peer.lock.withLock { peer.closed } != nil, "the link stays open after \(bad.count) bytes that do not decode")
            #expect(chunksHeard(peer, root).isEmpty)
        }
        #expect(await node.stats() != nil)
        await node.quit()
        _ = try? await fineAttack.value
        withExtendedLifetime((dir, source)) {}
    }
}
