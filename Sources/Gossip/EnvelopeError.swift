/// Every way an envelope can be refused. Decoding never traps: bad bytes
/// become one of these.
public enum EnvelopeError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(field: String)
    case trailingBytes(count: Int)
    case tooLarge(size: Int, limit: Int)
    case unknownVersion(UInt8)
    case unknownKind(UInt8)
    case zeroSequence
    /// Sequence 1 must have the all-zero previous hash; later ones must not.
    case previousHashMismatch(sequence: UInt64)
    case tooManyDependencies(count: Int, limit: Int)
    /// Dependencies must be sorted by author, strictly ascending, without the
    /// author itself and without sequence 0: one encoding per envelope.
    case dependenciesNotCanonical
    case bodyTooLarge(size: Int, limit: Int)
    case badSignature
    /// The envelope does not link to the author's envelope before it.
    case wrongPrevious(sequence: UInt64)
    case badLength(field: String, expected: Int, actual: Int)
    case badRoomName(String)
    case badNick(String)
    /// A sequence number past `Envelope.maximumSequence`: no author can have
    /// posted that many, so only a hostile peer sends it.
    case sequenceTooLarge(UInt64, limit: UInt64)
    /// A version-2 body whose length is not a padded size
    /// (`SealedBody.isSealedSize`): it would tell its length to everyone.
    case bodyNotPadded(size: Int)
    /// A field of a gossip message with a value its layout does not allow
    /// (a flag that is not 0 or 1, a peer at port 0).
    case badValue(field: String, UInt64)
    /// A version-3 envelope names more earlier envelopes to erase than
    /// `Envelope.maximumErasures`.
    case tooManyErasures(count: Int, limit: Int)
    /// Erased sequences must be ascending, at least 1 and below the
    /// envelope's own: only earlier envelopes of the author can be erased.
    case erasuresNotCanonical
    /// A version-3 body that is not the one whose hash was signed.
    case bodyHashMismatch
    /// A pruned envelope whose proof is not a signed erasure of it by its author.
    case badErasureProof
    /// Content of a kind whose layout it does not hold (a file offer's, a file message's): what is wrong.
    case malformed(String)

    public var description: String {
        switch self {
        case let .truncated(field): return "envelope truncated at \(field)"
        case let .trailingBytes(count): return "\(count) bytes after the envelope"
        case let .tooLarge(size, limit): return "envelope of \(size) bytes exceeds \(limit)"
        case let .unknownVersion(v): return "unknown envelope version \(v)"
        case let .unknownKind(k): return "unknown envelope kind \(k)"
        case .zeroSequence: return "sequence 0 is not allowed"
        case let .previousHashMismatch(s): return "sequence \(s) has a previous hash that does not fit its position"
        case let .tooManyDependencies(c, l): return "\(c) dependencies exceed \(l)"
        case .dependenciesNotCanonical: return "dependencies are not in canonical order"
        case let .bodyTooLarge(s, l): return "body of \(s) bytes exceeds \(l)"
        case .badSignature: return "signature does not verify"
        case let .wrongPrevious(s): return "sequence \(s) does not link to the author's previous envelope"
        case let .badLength(f, e, a): return "\(f) must be \(e) bytes, got \(a)"
        case let .badRoomName(n): return "not a valid room name: \(n.debugDescription) (a room name is # and 1 to \(RoomName.maximumLength - 1) more bytes, with no spaces or control characters: #team-lunch)"
        case let .sequenceTooLarge(s, l): return "sequence \(s) exceeds \(l)"
        case let .bodyNotPadded(size): return "a version-2 body of \(size) bytes is not one of the padded sizes"
        case let .badValue(field, v): return "\(field) may not be \(v)"
        case let .tooManyErasures(c, l): return "\(c) erased envelopes exceed \(l)"
        case .erasuresNotCanonical: return "erased sequences are not ascending earlier envelopes of the author"
        case .bodyHashMismatch: return "the body is not the one the signature names"
        case .badErasureProof: return "a pruned envelope without its author's signed erasure"
        case let .malformed(what): return "malformed: \(what)"
        case let .badNick(n): return "not a valid nick (1 to \(Nick.maximumLength) bytes, no spaces, control characters or ·): \(n.debugDescription)"
        }
    }
}
