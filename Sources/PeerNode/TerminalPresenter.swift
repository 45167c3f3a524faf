import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore

/// Lines a person reads: at a terminal (above the prompt) or on a pipe.
/// Every text from the network goes through `Renderer`'s labels or
/// `TerminalText.sanitize`.
struct TerminalPresenter: LinePresenter {
    let out: Output

    static func lines(_ event: NodeEvent) -> [String] {
        let plain = Renderer(people: People())
        switch event {
        case .ready, .receipt, .caughtUp:
            // The greeting says who we are; receipts show as the prompt's mark.
            return []
        case .conversations, .found, .answer:
            // Answers to the page's API and to scripts only (the terminal has /rooms and /search as lines).
            return []
        case let .greeting(lines), let .chatLines(lines):
            return lines
        case let .webPage(url):
            // The address on a row of its own, unwrapped: a selection of it takes the whole token.
            return ["-- the chat page (`peernode web-url` prints it again; keep it to yourself, it lets whoever has it chat as you):", url]
        case let .peerUp(person, address, node, device, _):
            // A device of someone's account: which of their machines this is.
            let which = person.key == node ? "" : " (device \(device.map { "\(PeerText($0)) " } ?? "")\(node.shortFingerprint))"
            return ["-- linked to \(plain.label(person))\(which) at \(address)"]
        case let .olderPeer(person, _, version):
            return ["-- \(plain.label(person)) runs an older peernode (link version \(version)): what you write now will not reach it until it is upgraded"]
        case let .peerDown(key, reason, person):
            // Named as the link line named it: nick·fp (and which device, when it is not the account's key).
            return ["-- link to \(plain.label(person))\(person.key == key ? "" : " (device \(key.shortFingerprint))") closed" + (reason.flatMap { $0.unsanitized.isEmpty ? nil : ": \($0)" } ?? "")]
        case let .message(m), let .replyQuoted(m):
            // A reply quoted late (the answered message came after it) is shown again, with its quote.
            let renderer = Renderer(people: m.people)
            // A file offered says how to fetch it.
            let get = m.opened.kind == .file ? m.number.map { " — /get \($0)" } ?? "" : ""
            if let room = m.room { return [renderer.line(m.envelope, room: room.value, opened: m.opened, quote: m.quote, nickBefore: m.nickBefore) + get] }
            // A direct message from someone else rings and stands out, as a mention does (not one of the backlog).
            let line = renderer.directLine(m.envelope, to: m.to ?? m.envelope.author, text: m.opened.text, quote: m.quote, action: m.opened.kind == .action) + get
            return [renderer.highlighted(line, !m.backlog && renderer.isFromSomeoneElse(m.envelope))]
        case let .reacted(m, target, text, reaction, on, count):
            return [Renderer(people: m.people).reactionLine(m.envelope, room: m.room?.value, target: target, text: text,
                                                             reaction: reaction, on: on, count: count)]
        case .typing:
            // Shown in the prompt line ("bob is typing…"), not as a line.
            return []
        case let .presence(person, _, beacon):
            // Away and back show in /who; a quit is said, as IRC's QUIT is (never stored).
            guard beacon.state == .gone else { return [] }
            let reason = String(decoding: beacon.reason, as: UTF8.self)
            return ["-- \(plain.label(person)) has quit" + (reason.isEmpty ? "" : " (\(PeerText(reason)))")]
        case let .versions(m, versions):
            let renderer = Renderer(people: m.people)
            return ["-- \(versions.count == 1 ? "the only version" : "\(versions.count) versions") of \(renderer.label(m.envelope.author))'s message, oldest first:"]
                + versions.enumerated().map { i, v in "  [\(Renderer.clock(v.envelope.timestamp))] \(v.text)" + (i == 0 ? "" : " (edit \(i))") }
        case let .edited(m, _):
            let renderer = Renderer(people: m.people)
            let text = m.editedOffer.map { PeerText(OpenedEnvelope.offerLine($0)) } ?? m.opened.text
            if let room = m.room { return [renderer.editLine(m.envelope, room: room.value, text: text)] }
            return [renderer.directLine(m.envelope, to: m.to ?? m.envelope.author, text: text) + " (edited)"]
        case let .deleted(m, _):
            return [Renderer(people: m.people).deletedLine(m.envelope, room: m.room?.value)]
        case let .fork(person, sequence, _, _):
            return ["-- ⚠ \(plain.label(person)) signed two different messages as number \(sequence); the first held is kept. "
                + "Its key may be in two places (copied, or restored from a backup): /sync lists forks"]
        case let .invite(by, room, listed):
            let name = TerminalText.sanitize(room)
            return [listed ? "-- \(name) from \(plain.label(by)): /accept \(name) or /decline \(name)"
                : "-- \(plain.label(by)) invites you to the private room \(name): /accept \(name) joins it, /decline \(name) refuses"]
        case let .deviceAdded(account, device, name):
            return ["-- \(plain.label(account)) has a new device: \(name) (\(device.shortFingerprint))"]
        case let .deviceRevoked(account, device, by, last):
            return ["-- ⚠ \(plain.label(account))'s device \(device.shortFingerprint) was revoked by \(by.shortFingerprint): what it signs after its message \(last) is refused"]
        case let .membershipChanged(room, by, action, target, epoch):
            return ["-- " + MembershipEvent.sentence(by: plain.label(by), action: action, target: plain.label(target),
                                                      room: TerminalText.sanitize(room.value), epoch: epoch)]
        case let .deviceCode(_, _, instructions):
            return instructions.map { "-- " + $0 }
        case let .deviceLinked(name, device):
            return ["-- linked \(PeerText(name)) (\(device.shortFingerprint)) to your account: it shows as you once its claim comes"]
        case let .followed(change, about, device, name):
            return ["-- following your device \(name.map { "\(PeerText($0)) " } ?? "")(\(device.shortFingerprint)): \(change.replacingOccurrences(of: "_", with: " ")) \(TerminalText.sanitize(about))"]
        case let .roomRoles(room, members, banned):
            return ["-- \(TerminalText.sanitize(room.value)): \(members.count) member\(members.count == 1 ? "" : "s")"]
                + members.map { "  \(plain.label($0.person)) \($0.role)" } + banned.map { "  \(plain.label($0)) banned" }
        case let .devices(account, devices):
            return ["-- \(plain.label(account)) (id \(account.key.hex)): \(devices.count) device\(devices.count == 1 ? "" : "s")"]
                + devices.map { d in
                    let seen = d.lastSeen.map { "last seen \(Renderer.day($0))" } ?? "not seen yet"
                    let marks = (d.isAccountKey ? " (account key)" : "") + (d.isThisNode ? " (this machine)" : d.linkedNow ? " (linked now)" : "")
                        + (d.revokedAfter.map { " REVOKED after its message \($0)" } ?? "")
                    return "  \(d.name) \(d.key.shortFingerprint) \(d.key.hex)\(marks), \(seen)"
                }
        case .noInvites:
            return ["-- no invites waiting"]
        case let .inviteRefused(by, room, reason):
            return ["-- ⚠ \(plain.label(by)) sent an invite to \(TerminalText.sanitize(room)) that was refused: \(reason)"]
        case let .inviteAccepted(room, askedFor, _, opened):
            let renamed = room.value == askedFor ? "" : " (named \(room.value) here: you already have a room called \(TerminalText.sanitize(askedFor)))"
            return ["-- joined the private room \(room.value)\(renamed)" + (opened ? "; it is open: what you type now goes there" : ": /switch \(room.value)")]
        case let .inviteDeclined(room, _):
            return ["-- declined the invite to \(TerminalText.sanitize(room))"]
        case let .invited(person, room):
            return ["-- invited \(plain.label(person)) to \(TerminalText.sanitize(room))"]
        case let .blockChanged(person, blocked):
            return ["-- \(blocked ? "blocked" : "unblocked") \(plain.label(person))"]
        case let .readReceipts(on):
            return ["-- read receipts \(on ? "on" : "off")"]
        case let .stats(links, counters, stages):
            let times = stages.map { stage, s in
                "\(stage.rawValue) \(Self.micros(s.median))/\(Self.micros(s.p99))/\(Self.micros(s.maximum)) ×\(s.count)"
            }
            return ["-- stats: " + (["links=\(links)"] + counters.map { "\($0.name)=\(max(0, $0.value))" }).joined(separator: " ")]
                + (times.isEmpty ? [] : ["-- time per stage (µs: median/p99/max ×runs): " + times.joined(separator: ", ")])
        case let .peers(list):
            return peerLines(list)
        case let .online(members):
            return ["-- \(counted(members.count, "person", plural: "people")) online on the network now:"] + memberLines(members)
        case let .members(room, members):
            guard !members.isEmpty else { return ["-- nobody has posted in \(room.value) yet"] }
            return ["-- \(room.value): \(members.count) \(members.count == 1 ? "member" : "members")"] + memberLines(members)
        case let .sync(report):
            return syncLines(report)
        case let .failed(reason):
            return ["error: \(reason)"]
        case .fileProgress:
            // Shown on the prompt line while the transfer runs.
            return []
        case let .fileDone(n, _, _, path, hash):
            return ["-- /get \(n): saved to \(TerminalText.sanitize(path)) (hash \(Hex.encode(hash.prefix(8))))"]
        case let .fileWaiting(n, _, _, bad) where bad.isEmpty:
            return ["-- /get \(n): nobody linked holds it now; it goes on by itself when someone does"]
        case let .fileWaiting(n, _, _, bad):
            return ["-- /get \(n): nobody linked serves it whole now: " + bad.map(plain.label).joined(separator: ", ")
                + " sent a chunk that does not match the offer (a damaged copy, or a lie) and is asked no more for it; "
                + "it goes on by itself when someone else holds it"]
        case let .fileFailed(n, _, _, reason):
            return ["error: /get \(n) failed: \(TerminalText.sanitize(reason))"]
        case let .fileCancelled(n, _, _):
            return ["-- /get \(n) cancelled: what had come of it is erased (/get \(n) starts it again)"]
        }
    }

    /// `/who`'s and `/who *`'s rows: a person, the devices they posted from, what their presence says.
    static func memberLines(_ members: [Member]) -> [String] {
        let plain = Renderer(people: People())
        return members.map { m in
            // Ours says only what differs from being here; others' say who is online, then whether linked.
            let presence = m.state == .you ? (m.presence.state == .away ? ", " + m.presence.text : "")
                : "  " + m.presence.text + (m.state == .linked ? ", linked" : "")
            let devices = m.devices.isEmpty ? "" : " (" + m.devices.map { "\(PeerText($0))" }.joined(separator: ", ") + ")"
            return "   \(plain.label(m.person))\(devices)\(m.state == .you ? "  you" : "")\(PeerText(presence))"
        }
    }

    /// `/peers`: linked nodes (address, since, round trip, sync state) and found ones not linked.
    static func peerLines(_ list: PeerList) -> [String] {
        let renderer = Renderer(people: list.people)
        let bound = list.maximumLinks > 0 ? " (at most \(list.maximumLinks) besides --peer), \(list.reserve) in reserve" : " (every peer found)"
        return ["-- peers: \(list.linked) linked\(bound)"] + list.rows.map { row -> String in
            let who = (row.id.map { renderer.label($0) } ?? "?") + (row.device.map { " (device \(PeerText($0)))" } ?? "")
            guard let linkedFor = row.linkedFor else {
                return "   \(who)  \(row.address)  \(row.state)\(row.state.hasPrefix("--peer,") ? "" : ", not linked")"
            }
            let sync = row.sending == 0 && row.receiving == 0 ? "in sync" : "sending \(row.sending), receiving \(row.receiving)"
            let link = row.version.map { "  link \($0)" + (row.cipher.map { ", \($0.displayName)" } ?? "") } ?? ""
            return "   \(who)  \(row.address)  linked \(duration(linkedFor))  \(roundTripText(row.roundTrip))  \(sync)  \(row.view)\(row.lazyAuthors > 0 ? ", ids only for \(counted(row.lazyAuthors, "author"))" : "")\(link)"
        }
    }

    /// `/sync`: one line when complete, else one line per author we lack messages of; then forks.
    static func syncLines(_ report: SyncReport) -> [String] {
        let renderer = Renderer(people: report.people)
        let forks = forkLines(report.forks, renderer)
        guard !report.gaps.isEmpty else {
            return ["-- in sync: this node holds everything its peers have announced (\(counted(report.held, "message")) from \(counted(report.authors, "author")); \(report.linked) linked)"] + forks
        }
        let gaps = report.gaps
        return ["-- missing \(counted(Backlog.total(gaps), "message")) (\(report.held) held)"] + gaps.prefix(20).map { gap in
            let when = gap.linked ? "linked now" : "last seen \(duration(Double(report.now &- gap.seenAt) / 1000)) ago"
            return "   missing \(gap.missing) from \(renderer.label(gap.author)), announced by \(renderer.label(gap.via)) (\(when))"
        } + (gaps.count > 20 ? ["   … and \(counted(gaps.count - 20, "more author"))"] : []) + forks
    }

    /// Forks recorded, one line per author (at most 20).
    static func forkLines(_ forks: [(author: PublicKey, sequences: [UInt64])], _ renderer: Renderer) -> [String] {
        guard !forks.isEmpty else { return [] }
        return ["-- ⚠ \(forks.count) author\(forks.count == 1 ? "" : "s") signed two different messages at one number (a copied key or a restored backup); the first held is kept:"]
            + forks.prefix(20).map { f in "   \(renderer.label(f.author)) at \(f.sequences.prefix(8).map(String.init).joined(separator: ", "))" }
            + (forks.count > 20 ? ["   … and \(forks.count - 20) more"] : [])
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\(s % 3600 / 60)m"
    }

    /// "0.42 ms", "12 ms", or "?" before the first answer.
    /// Seconds as microseconds, one decimal below 10 µs.
    static func micros(_ seconds: Double) -> String {
        let us = seconds * 1e6
        return us < 10 ? String(format: "%.1f", us) : String(Int(us.rounded()))
    }

    static func roundTripText(_ seconds: Double?) -> String {
        guard let seconds else { return "rtt ?" }
        let ms = seconds * 1000
        return ms < 10 ? String(format: "rtt %.2f ms", ms) : String(format: "rtt %.0f ms", ms)
    }
}
