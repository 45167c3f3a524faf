import NetworkText
import Crypto
import Gossip

/// What an envelope holds, once this node opened it.
struct OpenedEnvelope {
    let kind: Kind
    let content: [UInt8]
    /// The other party, when the envelope is in a direct conversation of ours.
    let peer: PublicKey?

    /// The content as text: it came from the network, so it prints only sanitized.
    /// For an edit or a reply, the text after the reference it starts with.
    var text: PeerText {
        if kind == .file { return PeerText(offer.map(Self.offerLine) ?? "⎘ a file offer that does not read") }
        let shown = (kind == .edit || kind == .reply) && content.count >= MessageRef.byteCount ? content.dropFirst(MessageRef.byteCount) : content[...]
        return PeerText(String(decoding: shown, as: UTF8.self))
    }
    /// The same message with another text (an edit's), a reply keeping its reference.
    /// A file offered keeps its file: an edit changes its caption only.
    func withText(_ text: String) -> OpenedEnvelope {
        if let offer {
            let edited = FileOffer(size: offer.size, root: offer.root, plainHash: offer.plainHash, key: offer.key, name: offer.name,
                                   type: offer.type, caption: String(decoding: Array(text.utf8).prefix(FileOffer.maximumCaption), as: UTF8.self))
            return OpenedEnvelope(kind: kind, content: edited.encoded, peer: peer)
        }
        let head = kind == .reply ? Array(content.prefix(MessageRef.byteCount)) : []
        return OpenedEnvelope(kind: kind, content: head + Array(text.utf8), peer: peer)
    }

    /// A message a person wrote: a text, `/me`, a reply, or a file offered.
    var isMessage: Bool { kind == .text || kind == .action || kind == .reply || kind == .file }

    /// The file a `file` envelope offers (nil: another kind, or content that
    /// does not decode: the sender's fault, shown as an offer that does not read).
    var offer: FileOffer? {
        guard kind == .file else { return nil }
        return try? FileOffer.decode(content)
    }

    /// An offer as a line reads it: `⎘ report.pdf (2.4 MB) the caption`.
    static func offerLine(_ offer: FileOffer) -> String {
        "⎘ \(offer.name) (\(FileSize.text(offer.size)))" + (offer.caption.isEmpty ? "" : " " + offer.caption)
    }
}

/// Public-room bodies opened for the store's kind column while a batch is
/// inserted, kept for the show that follows in the same turn: every
/// envelope that comes is inserted, then shown, and was opened for each
/// (each open 1–2 µs of a catch-up loop's ~30 an envelope). Only where the
/// opening cannot come out otherwise a moment later: a public room's key is
/// fixed by its name, and an envelope's id fixes its body; one pruned since
/// opens nowhere, so it is never answered from here. Whether it stands (a
/// revocation taken in between) is asked again by the caller.
struct OpenedAhead {
    /// Most kept at once: more than one store's batch (`maximumVerifiedPerStore`); past it all are dropped.
    static let limit = 2_048
    private var kept: [MessageID: OpenedEnvelope] = [:]

    var count: Int { kept.count }

    mutating func keep(_ opened: OpenedEnvelope, for envelope: Envelope) {
        if kept.count >= Self.limit { kept.removeAll(keepingCapacity: true) }
        kept[envelope.id] = opened
    }

    /// What was kept for `envelope`, taken out; nil for one pruned since.
    mutating func take(_ envelope: Envelope) -> OpenedEnvelope? {
        guard !kept.isEmpty, let opened = kept.removeValue(forKey: envelope.id) else { return nil }
        return envelope.isPruned ? nil : opened
    }

    /// The end of a store's turn: nothing kept outlives it.
    mutating func clear() { if !kept.isEmpty { kept.removeAll(keepingCapacity: true) } }
}
