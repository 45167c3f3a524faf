import Crypto

/// Chunks of files on a link (link version 7 on; docs/PROTOCOL.md §16,
/// "On the link"). A receiver asks each linked peer for chunks by the
/// file's root; a holder answers each with the sealed chunk and its proof,
/// or says it does not hold it. Nothing here can be read without the
/// offer's key, so a relay or a peer that is no member serves ciphertext.
public enum FileMessage: Equatable, Sendable {
    /// "Send me these chunks (indices, strictly ascending) of the file `root`,
    /// of `size` bytes" (the size lets a relay that holds nothing of it yet
    /// fetch it). `offer`: the envelope that offered the file (type 16, link
    /// version 8 on), so that a relay, which cannot read the offer, erases
    /// the file's chunks when a tombstone erases that envelope; nil (type 13)
    /// where the asker does not know it or the link is older.
    case want(root: [UInt8], size: UInt64, chunks: [UInt64], offer: Dependency? = nil)
    /// Chunk `index` of `root`, sealed, and the hashes beside its path in the tree.
    case chunk(root: [UInt8], index: UInt64, proof: [[UInt8]], sealed: [UInt8])
    /// "I do not hold these chunks (strictly ascending) of `root`."
    case none(root: [UInt8], chunks: [UInt64])

    /// Most chunk indices in one `want` or `none`.
    public static let maximumIndices = 64
    /// Largest sealed chunk: a full chunk and its tag.
    public static let maximumSealed = FileOffer.chunkSize + FileKey.tagByteCount

    public var root: [UInt8] {
        switch self {
        case let .want(root, _, _, _), let .chunk(root, _, _, _), let .none(root, _): root
        }
    }

    func write(to w: inout ByteWriter) {
        switch self {
        case let .want(root, size, chunks, offer):
            w.raw(root)
            Varint.write(size, to: &w)
            if let offer {
                w.raw(offer.author.bytes)
                Varint.write(offer.sequence, to: &w)
            }
            Self.writeIndices(chunks, to: &w)
        case let .none(root, chunks):
            w.raw(root)
            Self.writeIndices(chunks, to: &w)
        case let .chunk(root, index, proof, sealed):
            w.raw(root)
            Varint.write(index, to: &w)
            w.u8(UInt8(proof.count))
            for hash in proof { w.raw(hash) }
            Varint.write(UInt64(sealed.count), to: &w)
            w.raw(sealed)
        }
    }

    private static func writeIndices(_ chunks: [UInt64], to w: inout ByteWriter) {
        Varint.write(UInt64(chunks.count), to: &w)
        for i in chunks { Varint.write(i, to: &w) }
    }

    static func read(_ r: inout ByteReader, tag: GossipMessage.Tag) throws(EnvelopeError) -> FileMessage {
        let root = Array(try r.take(FileTree.hashSize, "file root"))
        switch tag {
        case .fileChunk:
            let index = try Self.index(&r)
            let proofCount = Int(try r.u8("proof length"))
            guard proofCount <= FileTree.maximumProof else { throw .malformed("a proof of \(proofCount) hashes (at most \(FileTree.maximumProof))") }
            var proof: [[UInt8]] = []
            for _ in 0..<proofCount { proof.append(Array(try r.take(FileTree.hashSize, "proof hash"))) }
            let length = try Varint.read(&r, "chunk length")
            guard length > UInt64(FileKey.tagByteCount), length <= UInt64(maximumSealed) else {
                throw .malformed("a sealed chunk of \(length) bytes (\(FileKey.tagByteCount + 1)…\(maximumSealed))")
            }
            return .chunk(root: root, index: index, proof: proof, sealed: Array(try r.take(Int(length), "chunk")))
        default:
            let isWant = tag == .fileWant || tag == .fileWantOffered
            var size: UInt64 = 0
            var offer: Dependency?
            if isWant {
                size = try Varint.read(&r, "file size")
                guard size >= 1, size <= FileOffer.maximumSize else { throw .malformed("a file size of \(size) (1…\(FileOffer.maximumSize))") }
            }
            if tag == .fileWantOffered {
                let author = try GossipMessage.key(try r.take(32, "offer author"))
                let sequence = try Varint.read(&r, "offer sequence")
                guard sequence >= 1, sequence <= Envelope.maximumSequence else {
                    throw .malformed("an offer sequence of \(sequence) (1…\(Envelope.maximumSequence))")
                }
                offer = Dependency(author: author, sequence: sequence)
            }
            let count = try Varint.read(&r, "chunk count")
            guard count >= 1, count <= UInt64(maximumIndices) else { throw .malformed("\(count) chunk indices (1…\(maximumIndices))") }
            var chunks: [UInt64] = []
            for _ in 0..<Int(count) {
                let index = try Self.index(&r)
                if let last = chunks.last, index <= last { throw .malformed("chunk indices not strictly ascending") }
                chunks.append(index)
            }
            if isWant {
                guard let last = chunks.last, last < FileOffer.chunks(size: size) else { throw .malformed("a chunk past the file's end") }
                return .want(root: root, size: size, chunks: chunks, offer: offer)
            }
            return .none(root: root, chunks: chunks)
        }
    }

    private static func index(_ r: inout ByteReader) throws(EnvelopeError) -> UInt64 {
        let index = try Varint.read(&r, "chunk index")
        guard index < FileTree.maximumChunks else { throw .malformed("chunk index \(index) (below \(FileTree.maximumChunks))") }
        return index
    }
}
