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
