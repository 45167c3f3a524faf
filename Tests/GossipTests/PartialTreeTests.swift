import Crypto
@testable import Gossip
import Testing

/// The part of a file's tree learned from its chunks' proofs (`PartialTree`).
@Suite("A file's tree learned chunk by chunk")
struct PartialTreeTests {
    func leaves(_ count: Int) -> [[UInt8]] {
        (0..<count).map { FileTree.leaf(index: UInt64($0), sealed: [UInt8](repeating: UInt8(truncatingIfNeeded: $0), count: 40)) }
    }

    @Test("every chunk learned gives back the proof the whole tree gives, for trees of 1 to 33 leaves (odd nodes carried up); one not learned gives one only where the others' proofs hold every hash beside its path")
    func sameProofs() throws {
        for count in 1...33 {
            let l = leaves(count)
            let levels = FileTree.levels(l)
            var tree = try #require(PartialTree(chunks: UInt64(count)))
            // Every third chunk, as several sources would bring them.
            let learned = Set(stride(from: 0, to: count, by: 3))
            for i in learned.sorted() {
                tree.learn(leaf: l[i], index: UInt64(i), proof: FileTree.proof(index: i, levels: levels))
            }
            for i in 0..<count {
                let expected = FileTree.proof(index: i, levels: levels)
                if learned.contains(i) {
                    #expect(tree.proof(index: UInt64(i)) == expected, "\(count) leaves, chunk \(i)")
                } else if let got = tree.proof(index: UInt64(i)) {
                    // Known only where every hash beside its path came with others' proofs: then it is the right one.
                    #expect(got == expected, "\(count) leaves, chunk \(i)")
                }
            }
            #expect(tree.proof(index: UInt64(count)) == nil, "past the last chunk")
        }
        var tree = try #require(PartialTree(chunks: 8))
        #expect(tree.proof(index: 3) == nil)
        let l = leaves(8), levels = FileTree.levels(l)
        tree.learn(leaf: l[3], index: 3, proof: FileTree.proof(index: 3, levels: levels))
        #expect(tree.proof(index: 2) == FileTree.proof(index: 2, levels: levels), "its sibling's path is beside the same hashes, its own leaf among them")
        #expect(tree.proof(index: 4) == nil, "the other half's leaves and pairs came with no proof")
    }

    @Test("a proof of the wrong length, a hash of the wrong size or an index past the end teaches nothing; the chunk counts at the limit and one past it")
    func refusals() throws {
        let l = leaves(8)
        let levels = FileTree.levels(l)
        var tree = try #require(PartialTree(chunks: 8))
        tree.learn(leaf: l[5], index: 5, proof: Array(FileTree.proof(index: 5, levels: levels).dropLast()))
        tree.learn(leaf: l[5], index: 5, proof: FileTree.proof(index: 5, levels: levels).map { Array($0.prefix(31)) })
        tree.learn(leaf: l[5], index: 9, proof: FileTree.proof(index: 5, levels: levels))
        #expect(tree.proof(index: 5) == nil && tree.proof(index: 4) == nil)
        #expect(PartialTree(chunks: 0) == nil)
        #expect(PartialTree(chunks: FileTree.maximumChunks) != nil)
        #expect(PartialTree(chunks: FileTree.maximumChunks + 1) == nil)
    }

    @Test("a 4 GiB file's partial tree holds under 5 MB, where its proofs kept one by one were up to 17 hashes a chunk")
    func memory() throws {
        let tree = try #require(PartialTree(chunks: FileTree.maximumChunks))
        #expect(tree.byteCount < 5_000_000, "\(tree.byteCount)")
        #expect(tree.byteCount > Int(FileTree.maximumChunks) * 32, "every leaf has its place")
    }
}
