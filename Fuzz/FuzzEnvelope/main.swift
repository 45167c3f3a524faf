import Crypto
import FuzzSupport
import Gossip

// libFuzzer entry: envelope (every version, pruned forms and their proofs),
// gossip-message decoding (carried envelopes inside it), the contents of edits,
// reactions, replies and file offers, a file chunk's proof, body padding, and
// chunk reassembly, and the runs a batch's chains vouch for. Must never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let e = try? Envelope.decode(bytes, verification: .trustedStorage) {
        invariant(e.encoded == bytes, "a decoded envelope re-encodes to other bytes")
        invariant(e.isPruned == e.body.isEmpty || e.version < 3, "a version-3 envelope is pruned exactly when it has no body")
        _ = try? e.verifySignature()
    }
    if let edit = try? MessageEdit.decode(bytes) { invariant(edit.encoded == bytes, "an edit re-encodes to other bytes") }
    if let reply = try? Reply.decode(bytes) { invariant(reply.encoded == bytes, "a reply re-encodes to other bytes") }
    if let reaction = try? Reaction.decode(bytes) { invariant(reaction.encoded == bytes, "a reaction re-encodes to other bytes") }
    if let offer = try? FileOffer.decode(bytes) {
        invariant(offer.encoded == bytes, "a file offer re-encodes to other bytes")
        invariant(offer.size >= 1 && offer.size <= FileOffer.maximumSize && offer.chunks <= FileTree.maximumChunks, "a file offer past its bounds decoded")
    }
    // A chunk checked against a tree never traps, whatever the proof and counts.
    if bytes.count >= 40 {
        let index = UInt64(bytes[0]) << 16 | UInt64(bytes[1]) << 8 | UInt64(bytes[2])
        let chunks = UInt64(bytes[3]) << 16 | UInt64(bytes[4]) << 8 | UInt64(bytes[5])
        let proof = stride(from: 40, to: bytes.count - 31, by: 32).map { Array(bytes[$0..<($0 + 32)]) }
        _ = FileTree.verify(leaf: Array(bytes[6..<38]), index: index, chunks: chunks, proof: proof, root: Array(bytes[8..<40]))
    }
    _ = try? Envelope.decode(bytes)
    // Version-2 padding: whatever unpads pads back to the same bytes.
    if let inner = Padding.unpad(bytes) {
        invariant(Padding.pad(inner, to: bytes.count) == bytes, "unpadded bytes do not pad back to the input")
    }
    if let m = try? GossipMessage.decode(bytes) {
        invariant((try? GossipMessage.decode(m.encoded)) == m, "a gossip message does not survive encode and decode")
        if case let .envelopes(batch) = m { checkChains(batch.map(\.envelope)) }
    }
    var joiner = GossipChunker()
    _ = try? joiner.add(bytes)
    return 0
}

/// A batch's runs (`ChainVerification`): each envelope's prover is the top
/// of its run, a top proves itself, only version 4 unpruned envelopes are
/// taken on another's signature, each index is asked for once, and with no
/// signature verifying nothing is valid.
func checkChains(_ batch: [Envelope]) {
    let provers = ChainVerification.provers(batch)
    for (i, p) in provers.enumerated() {
        invariant(batch.indices.contains(p) && provers[p] == p, "a prover that is not the top of its run")
        invariant(p == i || (batch[i].idCoversSignature && !batch[i].isPruned && batch[p].author == batch[i].author
                             && batch[p].sequence > batch[i].sequence), "an envelope vouched for by one that cannot")
    }
    var asked: [Int] = []
    let valid = ChainVerification.verified(batch) { indices in
        invariant(indices == indices.sorted() && Set(indices).count == indices.count, "indices asked out of order or twice")
        asked += indices
        return indices.map { _ in false }
    }
    invariant(Set(asked).count == asked.count && valid.allSatisfy { !$0 }, "taken without a verified signature, or asked twice")
}
