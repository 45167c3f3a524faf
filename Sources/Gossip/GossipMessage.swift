import Crypto

/// What nodes say to each other over a link, inside Noise transport
/// messages. Layouts in docs/PROTOCOL.md §10. Decoding never traps.
public enum GossipMessage: Equatable, Sendable {
    /// The sender's vector clock: every entry (`full`) or only those that
    /// changed since the last clock it sent on this link (a delta).
    case clock(entries: [Dependency], full: Bool)
    /// Envelopes, each with its hop count.
    case envelopes([CarriedEnvelope])
    /// "Send me `count` envelopes of `author` from sequence `from` on."
    case request([GossipRequest])
    /// The entries that changed since the clock whose digest is `base`: the
    /// last clock the sender declared to this peer, on this link or an
    /// earlier one. A receiver holding that clock rebuilds the whole clock;
    /// one that does not answers `fullClockWanted`.
    case clockSince(base: ClockDigest, entries: [Dependency])
    /// "I cannot rebuild your clock: send it whole."
    case fullClockWanted
    /// "I have stored what you sent: my clock now says this for these authors."
    /// Updates what the receiver knows of the sender's clock and never makes it
    /// send anything again (unlike a delta, which replaces what it assumed).
    case stored([Dependency])
    /// A membership message of the overlay (link version 4 on).
    case overlay(OverlayMessage)
    /// Tree push, lazy side (link version 4 on): "I have these authors'
    /// envelopes through these sequences" (Plumtree's IHAVE), sent where the
    /// link is lazy instead of the envelopes themselves.
    case ihave([Dependency])
    /// "Your full pushes of these authors reach me by another way: send me
    /// their ids only" (PRUNE). One tree per author, as SSB's EBT keeps one per feed.
    case prune([PublicKey])
    /// "Push these authors to me in full again" (GRAFT); what was missed comes by `request`.
    case graft([PublicKey])
    /// Someone is typing in a room (link version 6 on; `TypingNotice`).
    case typing(TypingNotice)
    /// A device is online, away or gone (link version 9 on; `PresenceBeacon`).
    case presence(PresenceBeacon)
    /// Chunks of a file asked for, sent, or not held (link version 7 on; `FileMessage`).
    case file(FileMessage)

    /// Most clock entries in one message (the rest go in further messages).
    public static let maximumClockEntries = 4096
    /// Most envelopes in one batch.
    public static let maximumBatch = 1024
    /// Most ranges in one request.
    public static let maximumRequests = 4096
    /// Largest encoded gossip message; links split it into chunks of
    /// `LinkSession.maximumPlaintext` (see `GossipChunker`).
    public static let maximumSize = 4 << 20
    /// Envelope bytes a sender puts in one batch message, well under
    /// `maximumSize`: 256 envelopes near the largest body (64 KiB) would
    /// otherwise make a 16 MiB batch the receiver must refuse.
    public static let batchBytes = 1 << 20

    /// Splits envelopes into batches of at most `maximumBatch` envelopes and
    /// `maxBytes` encoded bytes each (an envelope larger than `maxBytes` goes
    /// alone), in order.
    public static func batches(_ envelopes: [CarriedEnvelope], maxBytes: Int = batchBytes) -> [[CarriedEnvelope]] {
        var out: [[CarriedEnvelope]] = []
        var current: [CarriedEnvelope] = []
        var bytes = 0
        for e in envelopes {
            let size = 5 + e.envelope.encoded.count
            if !current.isEmpty && (bytes + size > maxBytes || current.count == maximumBatch) {
                out.append(current)
                current = []
                bytes = 0
            }
            current.append(e)
            bytes += size
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    enum Tag: UInt8 {
        case fullClock = 1, deltaClock = 2, envelopes = 3, request = 4, clockSince = 5, fullClockWanted = 6, stored = 7
        case overlay = 8, ihave = 9, prune = 10, graft = 11, typing = 12
        case fileWant = 13, fileChunk = 14, fileNone = 15, fileWantOffered = 16, presence = 17
    }

    private static func writeEntries(_ entries: [Dependency], to w: inout ByteWriter) {
        Varint.write(UInt64(entries.count), to: &w)
        for e in entries.sorted(by: { $0.author < $1.author }) {
            w.raw(e.author.bytes)
            Varint.write(e.sequence, to: &w)
        }
    }

    /// A list of authors: count ‖ count × author 32, strictly ascending.
    private static func writeAuthors(_ authors: [PublicKey], to w: inout ByteWriter) {
        let sorted = Array(Set(authors)).sorted()
        Varint.write(UInt64(sorted.count), to: &w)
        for a in sorted { w.raw(a.bytes) }
    }

    private static func readAuthors(_ r: inout ByteReader) throws(EnvelopeError) -> [PublicKey] {
        let count = try Varint.read(&r, "count")
        guard count <= UInt64(maximumClockEntries) else { throw .tooManyDependencies(count: Int(clamping: count), limit: maximumClockEntries) }
        var authors: [PublicKey] = []
        for _ in 0..<Int(count) {
            let author = try key(r.take(32, "author"))
            if let last = authors.last, !(last < author) { throw .dependenciesNotCanonical }
            authors.append(author)
        }
        return authors
    }

    private static func readEntries(_ r: inout ByteReader) throws(EnvelopeError) -> [Dependency] {
        let count = try Varint.read(&r, "count")
        guard count <= UInt64(maximumClockEntries) else { throw .tooManyDependencies(count: Int(clamping: count), limit: maximumClockEntries) }
        var entries: [Dependency] = []
        var last: PublicKey?
        for _ in 0..<Int(count) {
            let author = try key(r.take(32, "clock author"))
            // Canonical: strictly ascending authors, no duplicates.
            if let last, !(last < author) { throw .dependenciesNotCanonical }
            last = author
            entries.append(Dependency(author: author, sequence: try sequence(&r, "clock sequence")))
        }
        return entries
    }

    public var encoded: [UInt8] {
        var w = ByteWriter()
        switch self {
        case let .clock(entries, full):
            w.u8(full ? Tag.fullClock.rawValue : Tag.deltaClock.rawValue)
            Self.writeEntries(entries, to: &w)
        case let .clockSince(base, entries):
            w.u8(Tag.clockSince.rawValue)
            w.raw(base.bytes)
            Self.writeEntries(entries, to: &w)
        case .fullClockWanted:
            w.u8(Tag.fullClockWanted.rawValue)
        case let .stored(entries):
            w.u8(Tag.stored.rawValue)
            Self.writeEntries(entries, to: &w)
        case let .overlay(message):
            w.u8(Tag.overlay.rawValue)
            message.write(to: &w)
        case let .ihave(entries):
            w.u8(Tag.ihave.rawValue)
            Self.writeEntries(entries, to: &w)
        case let .prune(authors):
            w.u8(Tag.prune.rawValue)
            Self.writeAuthors(authors, to: &w)
        case let .graft(authors):
            w.u8(Tag.graft.rawValue)
            Self.writeAuthors(authors, to: &w)
        case let .typing(notice):
            w.u8(Tag.typing.rawValue)
            notice.write(&w)
        case let .presence(beacon):
            w.u8(Tag.presence.rawValue)
            beacon.write(&w)
        case let .file(message):
            switch message {
            case let .want(_, _, _, offer): w.u8(offer == nil ? Tag.fileWant.rawValue : Tag.fileWantOffered.rawValue)
            case .chunk: w.u8(Tag.fileChunk.rawValue)
            case .none: w.u8(Tag.fileNone.rawValue)
            }
            message.write(to: &w)
        case let .envelopes(batch):
            w.u8(Tag.envelopes.rawValue)
            Varint.write(UInt64(batch.count), to: &w)
            for c in batch {
                w.u8(c.hops)
                Varint.write(UInt64(c.envelope.encoded.count), to: &w)
                w.raw(c.envelope.encoded)
            }
        case let .request(ranges):
            w.u8(Tag.request.rawValue)
            Varint.write(UInt64(ranges.count), to: &w)
            for r in ranges {
                w.raw(r.author.bytes)
                Varint.write(r.from, to: &w)
                Varint.write(r.count, to: &w)
            }
        }
        return w.bytes
    }

    /// Parses a message. Envelopes are decoded structurally only
    /// (`.trustedStorage`): the receiver drops duplicates by (author,
    /// sequence) before paying for signature checks.
    public static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> GossipMessage {
        guard bytes.count <= maximumSize else { throw .tooLarge(size: bytes.count, limit: maximumSize) }
        var r = ByteReader(bytes)
        let tagByte = try r.u8("message type")
        guard let tag = Tag(rawValue: tagByte) else { throw .unknownKind(tagByte) }
        let message: GossipMessage
        switch tag {
        case .fullClock, .deltaClock:
            message = .clock(entries: try readEntries(&r), full: tag == .fullClock)
        case .clockSince:
            let base = ClockDigest(bytes: Array(try r.take(ClockDigest.size, "clock base")))
            message = .clockSince(base: base, entries: try readEntries(&r))
        case .fullClockWanted:
            message = .fullClockWanted
        case .stored:
            message = .stored(try readEntries(&r))
        case .overlay:
            message = .overlay(try OverlayMessage.read(&r))
        case .ihave:
            message = .ihave(try readEntries(&r))
        case .prune:
            message = .prune(try readAuthors(&r))
        case .graft:
            message = .graft(try readAuthors(&r))
        case .typing:
            message = .typing(try TypingNotice.read(&r))
        case .presence:
            message = .presence(try PresenceBeacon.read(&r))
        case .fileWant, .fileChunk, .fileNone, .fileWantOffered:
            message = .file(try FileMessage.read(&r, tag: tag))
        case .envelopes:
            let count = try Varint.read(&r, "count")
            guard count <= UInt64(maximumBatch) else { throw .tooLarge(size: Int(clamping: count), limit: maximumBatch) }
            var batch: [CarriedEnvelope] = []
            for _ in 0..<Int(count) {
                let hops = try r.u8("hops")
                let length = try Varint.read(&r, "envelope length")
                guard length <= UInt64(Envelope.maximumSize) else { throw .tooLarge(size: Int(clamping: length), limit: Envelope.maximumSize) }
                let e = try Envelope.decode(Array(try r.take(Int(length), "envelope")), verification: .trustedStorage)
                try e.checkSequenceBounds()
                batch.append(CarriedEnvelope(hops: hops, envelope: e))
            }
            message = .envelopes(batch)
        case .request:
            let count = try Varint.read(&r, "count")
            guard count <= UInt64(maximumRequests) else { throw .tooLarge(size: Int(clamping: count), limit: maximumRequests) }
            var ranges: [GossipRequest] = []
            for _ in 0..<Int(count) {
                let author = try key(r.take(32, "request author"))
                ranges.append(GossipRequest(author: author, from: try sequence(&r, "request from"), count: try sequence(&r, "request count")))
            }
            message = .request(ranges)
        }
        guard r.remaining == 0 else { throw .trailingBytes(count: r.remaining) }
        return message
    }

    /// A sequence number (or a count of them), bounded where it is decoded:
    /// every later sum over them stays far from overflow.
    private static func sequence(_ r: inout ByteReader, _ field: String) throws(EnvelopeError) -> UInt64 {
        let value = try Varint.read(&r, field)
        guard value <= Envelope.maximumSequence else { throw .sequenceTooLarge(value, limit: Envelope.maximumSequence) }
        return value
    }

    static func key(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> PublicKey {
        do { return try PublicKey(bytes: bytes) } catch { throw .badLength(field: "public key", expected: 32, actual: bytes.count) }
    }
}

/// Names a whole vector clock in 16 bytes: BLAKE2b-128 of the full-clock
/// message (type 1) that would carry it. Both ends of a link compute it
/// from the clock they hold, so equal digests mean equal clocks.
public struct ClockDigest: Equatable, Hashable, Sendable {
    public static let size = 16
    public let bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    public init(_ clock: VectorClock) {
        let entries = clock.entries.map { Dependency(author: $0.key, sequence: $0.value) }
        bytes = BLAKE2b.hash(GossipMessage.clock(entries: entries, full: true).encoded, outputLength: Self.size)
    }
}

/// A range of one author's envelopes.
public struct GossipRequest: Equatable, Sendable {
    public let author: PublicKey
    public let from: UInt64
    public let count: UInt64

    public init(author: PublicKey, from: UInt64, count: UInt64) {
        self.author = author
        self.from = from
        self.count = count
    }
}

/// Unsigned LEB128, canonical: the shortest form only, at most 10 bytes.
enum Varint {
    static func write(_ value: UInt64, to w: inout ByteWriter) {
        var v = value
        while v >= 0x80 {
            w.u8(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        w.u8(UInt8(v))
    }

    static func read(_ r: inout ByteReader, _ field: String) throws(EnvelopeError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try r.u8(field)
            if shift == 63 && byte > 1 { throw .badLength(field: field, expected: 10, actual: 11) }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                // A zero final byte after others is an overlong (non-canonical) form.
                if byte == 0 && shift > 0 { throw .dependenciesNotCanonical }
                return value
            }
            shift += 7
            if shift > 63 { throw .badLength(field: field, expected: 10, actual: 11) }
        }
    }
}

/// Splits gossip messages into link-sized chunks and joins them again.
/// Chunk: flags (1 byte; bit 0 = more chunks follow) ‖ up to
/// `LinkSession.maximumPlaintext - 1` bytes.
public struct GossipChunker {
    public static let chunkPayload = LinkSession.maximumPlaintext - 1
    private var pending: [UInt8] = []

    public init() {}

    public static func chunks(_ message: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var start = 0
        repeat {
            let end = min(message.count, start + chunkPayload)
            out.append([end < message.count ? 1 : 0] + message[start..<end])
            start = end
        } while start < message.count
        return out
    }

    /// Adds one chunk; returns the whole message when its last chunk arrives.
    public mutating func add(_ chunk: [UInt8]) throws(EnvelopeError) -> [UInt8]? {
        guard let flags = chunk.first, flags <= 1 else { throw .truncated(field: "chunk flags") }
        pending.append(contentsOf: chunk.dropFirst())
        guard pending.count <= GossipMessage.maximumSize else {
            let size = pending.count
            pending = []
            throw .tooLarge(size: size, limit: GossipMessage.maximumSize)
        }
        guard flags == 0 else { return nil }
        defer { pending = [] }
        return pending
    }
}
