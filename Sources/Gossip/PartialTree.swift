/// The part of a file's tree (`FileTree`) a node learns while it fetches
/// the file: each checked chunk's leaf and the hashes beside its path,
/// each kept once, 32 bytes at its place in its level. Every chunk
/// learned can then be served with its proof before the whole file is
/// here (a swarm), at about 64 bytes a chunk of memory in all, where a
/// proof kept per chunk was up to 17 hashes each (some 90 MB for a 4 GiB
/// file, in arrays). Pure; the shape follows from the chunk count alone.
public struct PartialTree: Sendable {
    public let chunks: UInt64
    /// Per level from the leaves up (the root's excluded): its hashes, back to back.
    private var hashes: [[UInt8]]
    /// Per level: which of its hashes are known.
    private var known: [[Bool]]

    /// An empty tree of `chunks` leaves (nil past `FileTree.maximumChunks`, or none).
    public init?(chunks: UInt64) {
        guard chunks > 0, chunks <= FileTree.maximumChunks else { return nil }
        self.chunks = chunks
        var widths: [Int] = []
        var width = Int(chunks)
        while width > 1 {
            widths.append(width)
            width = (width + 1) / 2
        }
        hashes = widths.map { [UInt8](repeating: 0, count: $0 * FileTree.hashSize) }
        known = widths.map { [Bool](repeating: false, count: $0) }
    }

    /// Bytes of hashes held (what the tree costs in memory, about).
    public var byteCount: Int { hashes.reduce(0) { $0 + $1.count } + known.reduce(0) { $0 + $1.count } }

    /// Learns chunk `index`'s leaf and its proof, both already checked
    /// against the root (`FileTree.verify`). A proof of the wrong length
    /// for `index` teaches nothing.
    public mutating func learn(leaf: [UInt8], index: UInt64, proof: [[UInt8]]) {
        guard index < chunks, leaf.count == FileTree.hashSize, proof.allSatisfy({ $0.count == FileTree.hashSize }),
              proof.count == Self.proofLength(index: index, chunks: chunks) else { return }
        if hashes.isEmpty { return }  // one chunk: the leaf is the root, and its proof is empty
        put(leaf, level: 0, at: Int(index))
        var i = Int(index), used = 0
        for level in hashes.indices {
            let sibling = i ^ 1
            if sibling < known[level].count {
                put(proof[used], level: level, at: sibling)
                used += 1
            }
            i /= 2
        }
    }

    /// Chunk `index`'s proof, bottom up, where every hash beside its path
    /// is known (nil otherwise): the same proof `FileTree.proof` gives from
    /// the whole tree.
    public func proof(index: UInt64) -> [[UInt8]]? {
        guard index < chunks else { return nil }
        var out: [[UInt8]] = []
        var i = Int(index)
        for level in hashes.indices {
            let sibling = i ^ 1
            if sibling < known[level].count {
                guard known[level][sibling] else { return nil }
                let start = sibling * FileTree.hashSize
                out.append(Array(hashes[level][start..<(start + FileTree.hashSize)]))
            }
            i /= 2
        }
        return out
    }

    /// How many hashes a proof of leaf `index` of `chunks` leaves has.
    static func proofLength(index: UInt64, chunks: UInt64) -> Int {
        var i = index, width = chunks, length = 0
        while width > 1 {
            if i ^ 1 < width { length += 1 }
            i /= 2
            width = (width + 1) / 2
        }
        return length
    }

    private mutating func put(_ hash: [UInt8], level: Int, at position: Int) {
        let start = position * FileTree.hashSize
        hashes[level].replaceSubrange(start..<(start + FileTree.hashSize), with: hash)
        known[level][position] = true
    }
}
