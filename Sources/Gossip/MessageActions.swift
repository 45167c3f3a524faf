import Crypto

/// Names one message: its author, sequence and id (the id settles which
/// one, should the author have forked at that sequence). 72 bytes inside a
/// sealed body (docs/PROTOCOL.md §5, "Edits, reactions and replies").
public struct MessageRef: Hashable, Sendable {
    public static let byteCount = 32 + 8 + 32
    public let author: PublicKey
    public let sequence: UInt64
    public let id: MessageID

    public init(author: PublicKey, sequence: UInt64, id: MessageID) {
        self.author = author
        self.sequence = sequence
        self.id = id
    }

    public init(_ envelope: Envelope) {
        self.init(author: envelope.author, sequence: envelope.sequence, id: envelope.id)
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.byteCount)
        w.raw(author.bytes)
        w.u64(sequence)
        w.raw(id.bytes)
        return w.bytes
    }

    /// The reference at the start of `content` and the bytes after it.
    static func split(_ content: [UInt8]) throws(EnvelopeError) -> (MessageRef, [UInt8]) {
        var r = ByteReader(content)
        let author: PublicKey
        do { author = try PublicKey(bytes: try r.take(32, "referenced author")) } catch {
            throw .badLength(field: "referenced author", expected: 32, actual: content.count)
        }
        let sequence = try r.u64("referenced sequence")
        guard sequence >= 1, sequence <= Envelope.maximumSequence else { throw .badValue(field: "referenced sequence", sequence) }
        let id = MessageID(unchecked: Array(try r.take(32, "referenced id")))
        return (MessageRef(author: author, sequence: sequence, id: id), Array(content[r.offset...]))
    }
}

/// Content of an `edit`: the message edited (always the original, never
/// an earlier edit; by the same author) and its whole new text.
public struct MessageEdit: Equatable, Sendable {
    /// Most edits one message takes; later ones are refused (counted) and
    /// a delete then still erases every edit (`Envelope.maximumErasures`).
    public static let maximumPerMessage = 16
    public let original: MessageRef
    public let text: [UInt8]

    public init(original: MessageRef, text: [UInt8]) {
        self.original = original
        self.text = text
    }

    public var encoded: [UInt8] { original.encoded + text }

    public static func decode(_ content: [UInt8]) throws(EnvelopeError) -> MessageEdit {
        let (ref, text) = try MessageRef.split(content)
        return MessageEdit(original: ref, text: text)
    }
}

/// Content of a `reaction`: the message and a short text (an emoji). The
/// same reaction a second time takes it back.
public struct Reaction: Equatable, Sendable {
    /// Longest reaction, in UTF-8 bytes: an emoji with modifiers fits.
    public static let maximumLength = 32
    /// Most different reactions one person keeps on one message; a node
    /// refuses (and counts) another, so nobody can make it store more.
    public static let maximumPerPersonAndMessage = 8
    public let target: MessageRef
    public let reaction: String

    public init(target: MessageRef, reaction: String) throws(EnvelopeError) {
        guard Self.isValid(reaction) else { throw .badValue(field: "reaction length", UInt64(reaction.utf8.count)) }
        self.target = target
        self.reaction = reaction
    }

    /// 1 to `maximumLength` bytes of UTF-8, with no spaces or control characters.
    public static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumLength
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.isWhitespace }
    }

    public var encoded: [UInt8] { target.encoded + Array(reaction.utf8) }

    public static func decode(_ content: [UInt8]) throws(EnvelopeError) -> Reaction {
        let (ref, rest) = try MessageRef.split(content)
        guard let text = String(validating: rest, as: UTF8.self) else { throw .badValue(field: "reaction", 0) }
        return try Reaction(target: ref, reaction: text)
    }
}

/// Content of a `reply`: the message answered and the reply's text.
public struct Reply: Equatable, Sendable {
    public let target: MessageRef
    public let text: [UInt8]

    public init(target: MessageRef, text: [UInt8]) {
        self.target = target
        self.text = text
    }

    public var encoded: [UInt8] { target.encoded + text }

    public static func decode(_ content: [UInt8]) throws(EnvelopeError) -> Reply {
        let (ref, text) = try MessageRef.split(content)
        return Reply(target: ref, text: text)
    }
}
