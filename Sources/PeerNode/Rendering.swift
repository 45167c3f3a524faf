import Crypto
import Foundation
import Gossip
import Store

/// Turns envelopes into the lines people read:
/// `[14:02] #general <alice·k3fq> hello`. Every piece of text that came from
/// the network goes through `TerminalText.sanitize` first.
struct Renderer {
    /// Nick of each author as known when rendering.
    let nicks: [PublicKey: String]

    func label(_ author: PublicKey) -> String {
        let fingerprint = author.shortFingerprint
        guard let nick = nicks[author] else { return fingerprint }
        return TerminalText.sanitize(nick) + "·" + fingerprint
    }

    func line(_ envelope: Envelope, room: String, text: String?) -> String {
        let time = Self.clock(envelope.timestamp)
        let roomLabel = TerminalText.sanitize(room)
        let who = label(envelope.author)
        guard let text else { return "[\(time)] \(roomLabel) <\(who)> [cannot decrypt]" }
        let body = TerminalText.sanitize(text)
        switch envelope.kind {
        case .text: return "[\(time)] \(roomLabel) <\(who)> \(body)"
        case .action: return "[\(time)] \(roomLabel) * \(who) \(body)"
        case .nick: return "[\(time)] \(roomLabel) -- \(envelope.author.shortFingerprint) is now known as \(body)"
        case .join: return "[\(time)] \(roomLabel) --> \(who) joined"
        case .leave: return "[\(time)] \(roomLabel) <-- \(who) left"
        case .receipt, .invite, .tombstone: return "[\(time)] \(roomLabel) -- \(who) \(envelope.kind)"
        }
    }

    /// Local wall-clock time of a millisecond timestamp, as HH:MM.
    static func clock(_ milliseconds: UInt64) -> String {
        var seconds = time_t(clamping: milliseconds / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
    }
}
