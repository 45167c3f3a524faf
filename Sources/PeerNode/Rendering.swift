import ChatText
import Crypto
import Foundation
import Gossip
import Store

/// Turns envelopes into the lines people read:
/// `[14:02] #general <alice·k3fq> hello`. Every piece of text that came from
/// the network goes through `TerminalText.sanitize` first.
struct Renderer {
    enum Style {
        /// Plain text: pipes, files, scripts.
        case plain
        /// A person at a terminal: colours per nick (unless `colors` is off,
        /// as NO_COLOR asks), and mentions of `me`'s nick highlighted with the bell.
        case terminal(colors: Bool, me: PublicKey)
    }

    /// Set once at start, before any thread renders.
    nonisolated(unsafe) static var style = Style.plain

    /// Nicks and marks as known when rendering.
    let people: People

    init(people: People) { self.people = people }

    /// Nicks only, no marks (a tool, or a test).
    init(nicks: [PublicKey: PeerText]) { people = People(nicks: nicks) }

    func label(_ author: PublicKey) -> String { label(people[author]) }

    /// `nick⚠·fingerprint✔(forked)`, coloured at a terminal.
    func label(_ person: Person) -> String {
        let fingerprint = person.key.shortFingerprint + (person.trusted ? "✔" : "") + (person.forked ? "(forked)" : "")
        let plain = person.nick.map { "\($0)" + (person.lookAlike ? "⚠" : "") + "·" + fingerprint } ?? fingerprint
        guard case .terminal(colors: true, _) = Self.style else { return plain }
        // One of six colours, from the key, so a nick keeps its colour everywhere.
        let colour = 31 + Int(person.key.bytes[0] % 6)
        return "\u{1B}[\(colour)m" + plain + "\u{1B}[0m"
    }

    /// Whether another account than ours signed `envelope` (in terminal style; false otherwise).
    func isFromSomeoneElse(_ envelope: Envelope) -> Bool {
        guard case let .terminal(_, me) = Self.style else { return false }
        return people.account(envelope.author) != people.account(me)
    }

    /// Whether `text` mentions our nick (a whole word, any case), in terminal style.
    func mentionsMe(_ text: String, author: PublicKey) -> Bool {
        guard case let .terminal(_, me) = Self.style, author != me, let nick = people.nick(me)?.unsanitized else { return false }
        return Mentions.names(nick, in: text)
    }

    /// A mention: bold, and the bell (only at a terminal).
    func highlighted(_ line: String, _ mention: Bool) -> String {
        guard mention, case let .terminal(colors, _) = Self.style else { return line }
        return (colors ? "\u{1B}[1m" + line + "\u{1B}[0m" : line) + "\u{07}"
    }

    /// `quote`: what a reply shows of the message it answers.
    func line(_ envelope: Envelope, room: String, opened: OpenedEnvelope?, quote: Quote? = nil, nickBefore: PeerText? = nil) -> String {
        let time = Self.clock(envelope.timestamp)
        let roomLabel = TerminalText.sanitize(room)
        let who = label(envelope.author)
        guard let opened else { return "[\(time)] \(roomLabel) <\(who)> [cannot decrypt]" }
        let body = opened.text.description
        let mention = mentionsMe(opened.text.unsanitized, author: envelope.author)
        switch opened.kind {
        case .text, .file: return highlighted("[\(time)] \(roomLabel) <\(who)> \(body)", mention)
        case .action: return highlighted("[\(time)] \(roomLabel) * \(who) \(body)", mention)
        case .reply: return highlighted("[\(time)] \(roomLabel) <\(who)> \(quoted(quote)) \(body)", mention)
        case .nick:
            // Named as the screen named them before, nick·fp (the fingerprint alone for a first nick).
            let fp = people.account(envelope.author).shortFingerprint
            return "[\(time)] \(roomLabel) -- \(nickBefore.map { "\($0)·\(fp)" } ?? fp) is now known as \(body)"
        case .join: return "[\(time)] \(roomLabel) --> \(who) joined"
        case .leave: return "[\(time)] \(roomLabel) <-- \(who) left"
        case .tombstone: return deletedLine(envelope, room: room)
        case .edit: return editLine(envelope, room: room, text: opened.text)
        case .membership:
            guard let event = MembershipEvent.decode(opened.content) else { return "[\(time)] \(roomLabel) -- \(who) membership" }
            return "[\(time)] \(roomLabel) -- " + MembershipEvent.sentence(by: who, action: event.actionName, target: label(event.target), room: roomLabel, epoch: event.epoch)
        case .receipt, .invite, .reaction, .device, .revoke, .rekey, .follow: return "[\(time)] \(roomLabel) -- \(who) \(opened.kind)"
        }
    }

    /// An edit as it arrives: the new text, marked.
    func editLine(_ envelope: Envelope, room: String, text: PeerText) -> String {
        "[\(Self.clock(envelope.timestamp))] \(TerminalText.sanitize(room)) <\(label(envelope.author))> \(text) (edited)"
    }

    /// A tombstone: who took a message back (never what it said).
    func deletedLine(_ envelope: Envelope, room: String?) -> String {
        let place = room.map { TerminalText.sanitize($0) + " " } ?? ""
        return "[\(Self.clock(envelope.timestamp))] \(place)-- \(label(envelope.author)) deleted a message"
    }

    /// A direct message between its author and `to` (`quote`: a reply's).
    /// `/rooms`' preview of a room's or conversation's last message:
    /// `  [12:00] <bob·x4fe> its text, cut at 40 characters…`.
    func preview(_ envelope: Envelope, text: String) -> String {
        let short = text.count > 40 ? String(text.prefix(39)) + "…" : text
        return "  [\(Self.clock(envelope.timestamp))] <\(label(envelope.author))> \(short)"
    }

    /// An action (`/me`) reads `* alice·x4fe waves` after the arrow.
    func directLine(_ envelope: Envelope, to: PublicKey, text: PeerText, quote: Quote? = nil, action: Bool = false) -> String {
        "[\(Self.clock(envelope.timestamp))] *\(label(envelope.author)) → \(label(to))* " + (quote.map { quoted($0) + " " } ?? "")
            + (action ? "* \(label(envelope.author)) " : "") + "\(text)"
    }

    /// A reply's one-line quote: `[re alice·k3fq: "the answered text…"]`.
    func quoted(_ quote: Quote?) -> String {
        guard let quote else { return "[re ?]" }
        switch quote.state {
        case let .here(text): return "[re \(label(quote.target.author)): \"\(PeerText(Quote.excerpt(text.unsanitized)))\"]"
        case .missing: return "[re a message of \(label(quote.target.author)) not here yet]"
        case .deleted: return "[re a deleted message]"
        }
    }

    /// A reaction given or taken back, with the reacted message's quote and the count now.
    func reactionLine(_ envelope: Envelope, room: String?, target: Envelope, text: PeerText?, reaction: String, on: Bool, count: Int) -> String {
        let place = room.map { TerminalText.sanitize($0) + " " } ?? ""
        let what = text.map { "\(label(target.author)): \"\(PeerText(Quote.excerpt($0.unsanitized)))\"" } ?? "a message of \(label(target.author))"
        let shown = TerminalText.sanitize(reaction)
        return "[\(Self.clock(envelope.timestamp))] \(place)-- \(label(envelope.author)) "
            + (on ? "reacted \(shown) to \(what) (\(shown) \(count))" : "took back \(shown) on \(what)")
    }

    /// The reactions under a message in `/history`: `  [👍 2 ❤️ 1]` ("" for none).
    static func reactionsSuffix(_ reactions: [(reaction: String, by: [PublicKey])]) -> String {
        guard !reactions.isEmpty else { return "" }
        return "  [" + reactions.map { "\(TerminalText.sanitize($0.reaction)) \($0.by.count)" }.joined(separator: " ") + "]"
    }

    /// Local wall-clock time of a millisecond timestamp, as HH:MM.
    static func clock(_ milliseconds: UInt64) -> String {
        var seconds = time_t(clamping: milliseconds / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
    }

    /// Local date and time of a millisecond timestamp, as YYYY-MM-DD HH:MM.
    static func day(_ milliseconds: UInt64) -> String {
        var seconds = time_t(clamping: milliseconds / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
    }
}
