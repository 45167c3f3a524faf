import Crypto
import Gossip
import Testing

/// Version 3 (docs/PROTOCOL.md §4): the signature covers the body's hash,
/// so an author's later envelope can erase a body and the envelope still
/// verifies, in its place in the chain, with the erasure as its proof.
@Suite("Erasable envelopes (version 3)")
struct ErasableEnvelopeTests {
    let author = try! SigningKey.generate()  // test input
    let room = RoomID.random()
    let key = SymmetricKey.generate()

    func body(_ text: String = "a distinctive secret", kind: Kind = .text) throws -> [UInt8] {
        try SealedBody.seal(kind: kind, content: Array(text.utf8), key: key, author: author.publicKey, room: room)
    }

    /// The author's chain: `count` texts, then (if `erasing` is not empty) an envelope erasing those sequences.
    func chain(_ count: Int, erasing: [UInt64] = [], by signer: SigningKey? = nil) throws -> [Envelope] {
        var out: [Envelope] = []
        var previous = MessageID.zero
        for s in 1...count {
            let e = try Envelope.sign(by: author, sequence: UInt64(s), previous: previous, dependencies: [], timestamp: UInt64(s),
                                      room: room, body: try body("message \(s)"))
            previous = e.id
            out.append(e)
        }
        if !erasing.isEmpty {
            out.append(try Envelope.sign(by: signer ?? author, sequence: UInt64(count + 1), previous: previous, dependencies: [],
                                         timestamp: 99, room: room, erases: erasing, body: try body("", kind: .tombstone)))
        }
        return out
    }

    @Test("a pruned envelope keeps its id, signature and place in the chain, verifies with its proof, and holds no byte of its body")
    func pruned() throws {
        let c = try chain(2, erasing: [1])
        let tombstone = c[2]
        #expect(tombstone.erases == [1] && tombstone.version == Envelope.newestVersion)
        let pruned = try #require(c[0].pruned(by: tombstone))
        #expect(pruned.id == c[0].id && pruned.isPruned && pruned.body.isEmpty && pruned.erasedBy == 3)
        #expect(pruned.bodyLength == c[0].bodyLength && pruned.bodyHash == c[0].bodyHash)
        let decoded = try Envelope.decode(pruned.encoded)
        #expect(decoded == pruned)
        try decoded.verifySignature()
        try c[1].checkFollows(decoded)
        #expect(throws: (any Error).self) { try SealedBody.open(decoded, key: key) }
        // Not a 16-byte run of the body survives in the pruned encoding.
        let bodyBytes = c[0].body
        for start in stride(from: 0, to: bodyBytes.count - 16, by: 8) {
            #expect(!contains(pruned.encoded, Array(bodyBytes[start..<(start + 16)])))
        }
        // Pruning twice is the same envelope; pruning what the erasure does not name is refused.
        #expect(pruned.pruned(by: tombstone) == pruned)
        #expect(c[1].pruned(by: tombstone) == nil)
        // Structurally decoded (from storage) and then verified, proof included.
        try Envelope.decode(pruned.encoded, verification: .trustedStorage).verifySignature()
    }

    @Test("a pruned envelope is refused when its proof is another author's, names another sequence, comes before it, or is not signed")
    func forgedProofs() throws {
        let c = try chain(2, erasing: [1])
        let pruned = try #require(c[0].pruned(by: c[2]))
        let proofStart = Array(c[0].signedBytes).count + Signature.byteCount + 1
        // Another author's erasure of "sequence 1", grafted on as the proof.
        let other = try SigningKey.generate()
        let foreign = try Envelope.sign(by: other, sequence: 2, previous: MessageID(bytes: [UInt8](repeating: 1, count: 32)),
                                        dependencies: [], timestamp: 1, room: room, erases: [1], body: try body(kind: .tombstone))
        let foreignHead = Array(foreign.encoded[0..<(foreign.encoded.count - 1 - foreign.bodyLength)])
        #expect(throws: EnvelopeError.badErasureProof) { try Envelope.decode(Array(pruned.encoded[0..<proofStart]) + foreignHead) }
        // An erasure of sequence 2 presented for sequence 1.
        let wrong = try chain(2, erasing: [2])[2]
        let wrongHead = Array(wrong.encoded[0..<(wrong.encoded.count - 1 - wrong.bodyLength)])
        #expect(throws: EnvelopeError.badErasureProof) { try Envelope.decode(Array(pruned.encoded[0..<proofStart]) + wrongHead) }
        // A proof whose signature was altered.
        var badSignature = pruned.encoded
        badSignature[badSignature.count - 1] ^= 1
        #expect(throws: EnvelopeError.badErasureProof) { try Envelope.decode(badSignature) }
        let stored = try Envelope.decode(badSignature, verification: .trustedStorage)
        #expect(throws: EnvelopeError.badErasureProof) { try stored.verifySignature() }
        // The envelope's own signature altered.
        var badOwn = pruned.encoded
        badOwn[proofStart - 2] ^= 1
        #expect(throws: EnvelopeError.badSignature) { try Envelope.decode(badOwn) }
        // No proof at all, an unknown form, bytes after the proof.
        #expect(throws: EnvelopeError.truncated(field: "version")) { try Envelope.decode(Array(pruned.encoded[0..<proofStart])) }
        var form = pruned.encoded
        form[proofStart - 1] = 2
        #expect(throws: EnvelopeError.badValue(field: "form", 2)) { try Envelope.decode(form) }
        #expect(throws: EnvelopeError.trailingBytes(count: 1)) { try Envelope.decode(pruned.encoded + [0]) }
    }

    @Test("a body that is not the signed hash's is refused")
    func bodySwapped() throws {
        let e = try chain(1)[0]
        var swapped = e.encoded
        swapped[swapped.count - 1] ^= 1
        #expect(throws: EnvelopeError.bodyHashMismatch) { try Envelope.decode(swapped) }
        #expect(throws: EnvelopeError.bodyHashMismatch) { try Envelope.decode(swapped, verification: .trustedStorage) }
    }

    @Test("erasures: at most maximumErasures, ascending, each earlier than the envelope; at the limit and one past")
    func erasureLimits() throws {
        let n = Envelope.maximumErasures
        #expect(n == 17)
        let atLimit = try chain(n, erasing: (1...UInt64(n)).map { $0 })
        #expect(try Envelope.decode(atLimit[n].encoded).erases.count == n)
        #expect(throws: EnvelopeError.tooManyErasures(count: n + 1, limit: n)) { try chain(n + 1, erasing: (1...UInt64(n + 1)).map { $0 }) }
        // One past, by hand: the count byte says 18 and 18 sequences follow.
        let e = atLimit[n]
        let countOffset = 1 + 32 + 8 + 32 + 2 + 8 + 32
        var past = Array(e.encoded[0..<countOffset]) + [UInt8(n + 1)] + Array(e.encoded[(countOffset + 1)..<(countOffset + 1 + 8 * n)])
        past += [0, 0, 0, 0, 0, 0, 0, UInt8(n + 1)] + Array(e.encoded[(countOffset + 1 + 8 * n)...])
        #expect(throws: EnvelopeError.tooManyErasures(count: n + 1, limit: n)) { try Envelope.decode(past) }
        #expect(throws: EnvelopeError.erasuresNotCanonical) { try chain(3, erasing: [2, 1]) }
        #expect(throws: EnvelopeError.erasuresNotCanonical) { try chain(3, erasing: [1, 1]) }
        #expect(throws: EnvelopeError.erasuresNotCanonical) { try chain(3, erasing: [4]) }
        #expect(throws: EnvelopeError.erasuresNotCanonical) { try chain(3, erasing: [0]) }
    }

    @Test("the largest envelope is maximumSize bytes: 256 dependencies, 17 erasures, the largest body; one byte more is refused unread")
    func largest() throws {
        let deps = (0..<Envelope.maximumDependencies).map { _ in Dependency(author: try! SigningKey.generate().publicKey, sequence: 1) }  // test input
        let big = try SealedBody.seal(kind: .text, content: [UInt8](repeating: 7, count: Envelope.maximumPlaintextBody), key: key,
                                      author: author.publicKey, room: room)
        let e = try Envelope.sign(by: author, sequence: 18, previous: MessageID(bytes: [UInt8](repeating: 1, count: 32)),
                                  dependencies: deps, timestamp: 1, room: room, erases: (1...17).map { $0 }, body: big)
        #expect(e.encoded.count == Envelope.maximumSize)
        #expect(try Envelope.decode(e.encoded) == e)
        #expect(throws: EnvelopeError.tooLarge(size: Envelope.maximumSize + 1, limit: Envelope.maximumSize)) { try Envelope.decode(e.encoded + [0]) }
    }

    @Test("new kinds carry a reference: edit, reaction, reply decode what they encode; bad references and reactions are refused")
    func references() throws {
        let original = try chain(1)[0]
        let ref = MessageRef(original)
        let edit = MessageEdit(original: ref, text: Array("fixed".utf8))
        #expect(try MessageEdit.decode(edit.encoded) == edit)
        let reply = Reply(target: ref, text: Array("yes".utf8))
        #expect(try Reply.decode(reply.encoded) == reply)
        let reaction = try Reaction(target: ref, reaction: "👍")
        #expect(try Reaction.decode(reaction.encoded) == reaction)
        #expect(throws: EnvelopeError.self) { try MessageEdit.decode(Array(edit.encoded.prefix(MessageRef.byteCount - 1))) }
        var zero = ref.encoded
        for i in 32..<40 { zero[i] = 0 }
        #expect(throws: EnvelopeError.self) { try Reply.decode(zero) }
        let longest = String(repeating: "a", count: Reaction.maximumLength)
        #expect(try Reaction(target: ref, reaction: longest).reaction == longest)
        #expect(throws: EnvelopeError.self) { try Reaction(target: ref, reaction: longest + "a") }
        for bad in ["", "a b", "\u{1B}[2J", "x\n"] { #expect(throws: EnvelopeError.self) { try Reaction(target: ref, reaction: bad) } }
        #expect(throws: EnvelopeError.self) { try Reaction.decode(ref.encoded + [0xff, 0xfe]) }
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
