import Crypto
import FuzzSupport
import Gossip

// libFuzzer entry: envelope (every version, pruned forms and their proofs),
// gossip-message decoding (carried envelopes inside it), the contents of edits,
// reactions and replies, body padding, and chunk reassembly. Must never crash.
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
    _ = try? Envelope.decode(bytes)
    // Version-2 padding: whatever unpads pads back to the same bytes.
    if let inner = Padding.unpad(bytes) {
        invariant(Padding.pad(inner, to: bytes.count) == bytes, "unpadded bytes do not pad back to the input")
    }
    if let m = try? GossipMessage.decode(bytes) {
        invariant((try? GossipMessage.decode(m.encoded)) == m, "a gossip message does not survive encode and decode")
    }
    var joiner = GossipChunker()
    _ = try? joiner.add(bytes)
    return 0
}
