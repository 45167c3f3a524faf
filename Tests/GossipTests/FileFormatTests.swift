import Crypto
@testable import Gossip
import Testing

/// Files on the wire (docs/PROTOCOL.md §16): the chunk tree, the offer and
/// the link messages, each at its limits and one past.
@Suite("Files: the chunk tree, the offer, the link messages")
struct FileFormatTests {
    func leaves(_ n: Int) -> [[UInt8]] {
        (0..<n).map { FileTree.leaf(index: UInt64($0), sealed: [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 20 + $0)) }
    }

    @Test("every chunk of trees of 1 to 33 leaves proves against its root, and nothing else does: another index, another leaf, a hash more or less")
    func treeProofs() {
        for n in 1...33 {
            let l = leaves(n)
            let levels = FileTree.levels(l)
            let root = levels.last?.first ?? []
            #expect(root == FileTree.root(l))
            for i in 0..<n {
                let proof = FileTree.proof(index: i, levels: levels)
                #expect(FileTree.verify(leaf: l[i], index: UInt64(i), chunks: UInt64(n), proof: proof, root: root), "n \(n) i \(i)")
                if n > 1 {
                    #expect(!FileTree.verify(leaf: l[i], index: UInt64((i + 1) % n), chunks: UInt64(n), proof: proof, root: root))
                    #expect(!FileTree.verify(leaf: l[(i + 1) % n], index: UInt64(i), chunks: UInt64(n), proof: proof, root: root))
                    #expect(!FileTree.verify(leaf: l[i], index: UInt64(i), chunks: UInt64(n), proof: proof.dropLast().map { $0 }, root: root))
                }
                #expect(!FileTree.verify(leaf: l[i], index: UInt64(i), chunks: UInt64(n), proof: proof + [root], root: root))
                #expect(!FileTree.verify(leaf: l[i], index: UInt64(n), chunks: UInt64(n), proof: proof, root: root), "an index past the file")
            }
        }
        // One leaf: the root is the leaf, with no proof.
        let one = leaves(1)
        #expect(FileTree.root(one) == one[0] && FileTree.proof(index: 0, levels: FileTree.levels(one)).isEmpty)
    }

    @Test("the tree's shape as PROTOCOL §16 writes it: three leaves pair the first two and carry the third up")
    func treeShape() {
        let l = leaves(3)
        let expected = BLAKE2b.hash([1] + BLAKE2b.hash([1] + l[0] + l[1]) + l[2])
        #expect(FileTree.root(l) == expected)
        var head: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 2]
        head += [UInt8](repeating: 2, count: 22)
        #expect(FileTree.leaf(index: 2, sealed: [UInt8](repeating: 2, count: 22)) == BLAKE2b.hash(head))
        #expect(FileTree.maximumChunks == 67_109 && FileTree.maximumProof == 17)
        // The longest proof: a file at the limit has a tree 17 levels above its leaves.
        var width = FileTree.maximumChunks, depth = 0
        while width > 1 { width = (width + 1) / 2; depth += 1 }
        #expect(depth == FileTree.maximumProof)
    }

    func offer(name: String = "report.pdf", type: String = "application/pdf", caption: String = "", size: UInt64 = 2_400_000) -> FileOffer {
        FileOffer(size: size, root: [UInt8](repeating: 1, count: 32), plainHash: [UInt8](repeating: 2, count: 32), key: [UInt8](repeating: 3, count: 32),
                  name: name, type: type, caption: caption)
    }

    /// An offer's bytes written field by field (no bound applied), as a hostile member would.
    func raw(version: UInt8 = 1, size: UInt64 = 5, name: [UInt8] = Array("a".utf8), type: [UInt8] = [], caption: [UInt8] = []) -> [UInt8] {
        var out: [UInt8] = [version]
        out += (0..<8).map { UInt8(truncatingIfNeeded: size >> (56 - 8 * UInt64($0))) }
        out += [UInt8](repeating: 1, count: 96)
        out += [UInt8(truncatingIfNeeded: name.count)] + name + [UInt8(truncatingIfNeeded: type.count)] + type + caption
        return out
    }

    @Test("an offer: its layout byte for byte, a round trip, and each bound at the limit and one past")
    func offerBounds() throws {
        let o = offer(caption: "the numbers")
        #expect(try FileOffer.decode(o.encoded) == o)
        #expect(o.encoded.count == 1 + 8 + 96 + 1 + 10 + 1 + 15 + 11)
        #expect(Array(o.encoded[1..<9]) == [0, 0, 0, 0, 0, 0x24, 0x9F, 0])
        #expect(o.chunks == 38 && o.plainLength(of: 37) == 2_400_000 - 37 * 64_000 && o.plainLength(of: 0) == 64_000)
        #expect(try FileOffer.decode(raw(size: FileOffer.maximumSize)).size == FileOffer.maximumSize)
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(size: FileOffer.maximumSize + 1)) }
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(size: 0)) }
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(version: 2)) }
        #expect(try FileOffer.decode(raw(name: [UInt8](repeating: 0x61, count: 255))).name.utf8.count == 255)
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(name: [])) }
        #expect(try FileOffer.decode(raw(type: [UInt8](repeating: 0x61, count: 100))).type.utf8.count == 100)
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(type: [UInt8](repeating: 0x61, count: 101))) }
        #expect(try FileOffer.decode(raw(caption: [UInt8](repeating: 0x61, count: 1_000))).caption.utf8.count == 1_000)
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(caption: [UInt8](repeating: 0x61, count: 1_001))) }
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(raw(name: [0xFF, 0xFE])) }
        #expect(throws: EnvelopeError.self) { try FileOffer.decode(Array(raw().dropLast(3))) }
        // An encoder never writes past a bound: a 300-byte name is cut to 255.
        #expect(try FileOffer.decode(offer(name: String(repeating: "n", count: 300)).encoded).name.utf8.count == 255)
    }

    @Test("file messages: a round trip of each, and every bound at the limit and one past")
    func messageBounds() throws {
        let root = [UInt8](repeating: 7, count: 32)
        let proof = [[UInt8]](repeating: [UInt8](repeating: 9, count: 32), count: FileTree.maximumProof)
        for m in [FileMessage.want(root: root, size: FileOffer.maximumSize, chunks: Array(0..<64)), .none(root: root, chunks: [3, 67_108]),
                  .want(root: root, size: 1, chunks: [0]),
                  .chunk(root: root, index: 67_108, proof: proof, sealed: [UInt8](repeating: 5, count: FileMessage.maximumSealed)),
                  .chunk(root: root, index: 0, proof: [], sealed: [UInt8](repeating: 5, count: 17))] {
            #expect(try GossipMessage.decode(GossipMessage.file(m).encoded) == .file(m))
        }
        #expect(GossipMessage.file(.want(root: root, size: 200_000, chunks: [1])).encoded == [0x0D] + root + [0xC0, 0x9A, 0x0C, 1, 1])
        func refused(_ m: FileMessage) -> Bool { (try? GossipMessage.decode(GossipMessage.file(m).encoded)) == nil }
        #expect(refused(.want(root: root, size: FileOffer.maximumSize, chunks: Array(0..<65))))
        #expect(refused(.want(root: root, size: 5, chunks: [])))
        #expect(refused(.want(root: root, size: 200_000, chunks: [2, 2])))
        #expect(refused(.want(root: root, size: 0, chunks: [0])))
        #expect(refused(.want(root: root, size: FileOffer.maximumSize + 1, chunks: [0])))
        #expect(refused(.want(root: root, size: 64_000, chunks: [1])), "a chunk past the file's end")
        #expect(refused(.none(root: root, chunks: [5, 4])))
        #expect(refused(.want(root: root, size: FileOffer.maximumSize, chunks: [67_109])))
        #expect(refused(.chunk(root: root, index: 67_109, proof: [], sealed: [1] + [UInt8](repeating: 0, count: 16))))
        #expect(refused(.chunk(root: root, index: 0, proof: proof + [proof[0]], sealed: [UInt8](repeating: 5, count: 17))))
        #expect(refused(.chunk(root: root, index: 0, proof: [], sealed: [UInt8](repeating: 5, count: 16))))
        #expect(refused(.chunk(root: root, index: 0, proof: [], sealed: [UInt8](repeating: 5, count: FileMessage.maximumSealed + 1))))
        // An ask naming its offer (type 16): the offer's author and sequence after the size.
        let author = try PublicKey(bytes: [UInt8](repeating: 3, count: 32))
        let named = FileMessage.want(root: root, size: 200_000, chunks: [1], offer: Dependency(author: author, sequence: 300))
        #expect(GossipMessage.file(named).encoded == [0x10] + root + [0xC0, 0x9A, 0x0C] + author.bytes + [0xAC, 0x02, 1, 1])
        #expect(try GossipMessage.decode(GossipMessage.file(named).encoded) == .file(named))
        let last = FileMessage.want(root: root, size: 1, chunks: [0], offer: Dependency(author: author, sequence: Envelope.maximumSequence))
        #expect(try GossipMessage.decode(GossipMessage.file(last).encoded) == .file(last))
        #expect(refused(.want(root: root, size: 1, chunks: [0], offer: Dependency(author: author, sequence: Envelope.maximumSequence + 1))))
        #expect(refused(.want(root: root, size: 1, chunks: [0], offer: Dependency(author: author, sequence: 0))))
        // Cut short anywhere: refused, never a trap.
        let offered = GossipMessage.file(named).encoded
        for cut in 1..<offered.count { #expect((try? GossipMessage.decode(Array(offered.prefix(cut)))) == nil) }
        let whole = GossipMessage.file(.chunk(root: root, index: 3, proof: [proof[0]], sealed: [UInt8](repeating: 5, count: 40))).encoded
        for cut in 1..<whole.count { #expect((try? GossipMessage.decode(Array(whole.prefix(cut)))) == nil) }
    }

    @Test("a chunk sealed under a file's key opens only at its own index, unchanged")
    func chunkSealing() throws {
        let key = FileKey.generate()
        let plain = [UInt8](repeating: 42, count: 1_000)
        let sealed = plain.withUnsafeBytes { key.seal(chunk: $0, index: 7) }
        #expect(sealed.count == 1_016)
        #expect(try key.open(chunk: sealed, index: 7) == plain)
        #expect(throws: CryptoError.self) { try key.open(chunk: sealed, index: 8) }
        var tampered = sealed
        tampered[3] ^= 1
        #expect(throws: CryptoError.self) { try key.open(chunk: tampered, index: 7) }
        #expect(throws: CryptoError.self) { try FileKey.generate().open(chunk: sealed, index: 7) }
        #expect(FileKey(exactly: key.exportedBytes)?.exportedBytes == key.exportedBytes && FileKey(exactly: [1, 2]) == nil)
    }
}
