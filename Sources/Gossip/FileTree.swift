import Crypto

/// A file's hash tree (docs/PROTOCOL.md §16, "The chunk tree"): a binary
/// Merkle tree of BLAKE2b-256 over the file's sealed chunks, so any one
/// chunk is checked on its own against the root an offer names, by the
/// chunk and the hashes beside its path (its proof). Leaves and inner
/// nodes hash under different first bytes, and a leaf names its index, so
/// no chunk stands in for another nor for a subtree. A level with an odd
/// node out carries it up unchanged. Pure values; the shape follows from
/// the chunk count alone.
public enum FileTree {
    public static let hashSize = 32
    /// The most chunks a file has (`FileOffer.maximumSize` over `FileOffer.chunkSize`,
    /// rounded up), and so the longest proof: 17 hashes.
    public static let maximumChunks: UInt64 = (FileOffer.maximumSize + UInt64(FileOffer.chunkSize) - 1) / UInt64(FileOffer.chunkSize)
    public static let maximumProof = 17

    /// BLAKE2b-256(0x00 ‖ index 8 big-endian ‖ sealed chunk).
    public static func leaf(index: UInt64, sealed: UnsafeRawBufferPointer) -> [UInt8] {
        var head = [UInt8](repeating: 0, count: 9)
        for i in 0..<8 { head[1 + i] = UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64(i))) }
        return BLAKE2b.hash(head, then: sealed)
    }

    public static func leaf(index: UInt64, sealed: [UInt8]) -> [UInt8] {
        sealed.withUnsafeBytes { leaf(index: index, sealed: $0) }
    }

    /// BLAKE2b-256(0x01 ‖ left ‖ right).
    static func node(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        BLAKE2b.hash([1] + left + right)
    }

    /// The levels from the leaves up, the root alone last.
    public static func levels(_ leaves: [[UInt8]]) -> [[[UInt8]]] {
        guard !leaves.isEmpty else { return [] }
        var levels = [leaves]
        while let top = levels.last, top.count > 1 {
            levels.append(stride(from: 0, to: top.count, by: 2).map { i in i + 1 < top.count ? node(top[i], top[i + 1]) : top[i] })
        }
        return levels
    }

    public static func root(_ leaves: [[UInt8]]) -> [UInt8]? { levels(leaves).last?.first }

    /// The hashes beside leaf `index`'s path, bottom up (none where it is carried up alone).
    public static func proof(index: Int, levels: [[[UInt8]]]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = index
        for level in levels.dropLast() {
            let sibling = i ^ 1
            if sibling < level.count { out.append(level[sibling]) }
            i /= 2
        }
        return out
    }

    /// Whether `leaf` at `index` of a tree of `chunks` leaves leads to `root` through `proof`.
    public static func verify(leaf: [UInt8], index: UInt64, chunks: UInt64, proof: [[UInt8]], root: [UInt8]) -> Bool {
        guard index < chunks, chunks <= maximumChunks else { return false }
        var hash = leaf, i = index, width = chunks, used = 0
        while width > 1 {
            let sibling = i ^ 1
            if sibling < width {
                guard used < proof.count else { return false }
                hash = i & 1 == 0 ? node(hash, proof[used]) : node(proof[used], hash)
                used += 1
            }
            i /= 2
            width = (width + 1) / 2
        }
        return used == proof.count && hash == root
    }
}
