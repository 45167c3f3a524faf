import Crypto
import Gossip
import NetworkText
import NodeCore

/// `--json`: one object per line for each event a script acts on (README,
/// "Scripting"). Events that only a person reads (the greeting, the plain
/// chat's lines, acknowledgements of settings) write nothing.
struct JSONPresenter: JSONLinePresenter {
    let out: Output
    var showsReceipts: Bool { true }
    var wantsLines: Bool { true }

    func present(lines: [String]) {
        guard !lines.isEmpty else { return }
        out.lines(lines)
    }

    static func lines(_ event: NodeEvent) -> [String] {
        switch event {
        case let .ready(id, nick, listen):
            return [JSONEvents.line(["type": .string("ready"), "id": .string(id.hex), "nick": .string(nick ?? ""), "listen": .string(listen)])]
        case let .peerUp(person, address, node, _, _):
            // `id` is the linked node, as in peer_down; a device also names its account.
            return [JSONEvents.line(pairs: [("type", .string("peer_up")), ("id", .string(node.hex)), ("nick", .text(person.nick ?? PeerText(""))),
                                            ("addr", .string(address))] + (person.key == node ? [] : [("account", .string(person.key.hex))]))]
        case let .peerDown(key, _, _):
            return [JSONEvents.line(["type": .string("peer_down"), "id": .string(key.hex)])]
        case let .olderPeer(person, node, version):
            return [JSONEvents.line(pairs: [("type", .string("older_peer")), ("id", .string(node.hex)), ("nick", .text(person.nick ?? PeerText(""))),
                                            ("link_version", .number(UInt64(version))), ("newest", .number(UInt64(LinkProtocol.newest.rawValue)))])]
        case let .caughtUp(held):
            return [JSONEvents.line(["type": .string("caught_up"), "held": .number(held)])]
        case let .message(m):
            return message(m).map { [$0] } ?? []
        case let .edited(m, original):
            let e = m.envelope
            return [JSONEvents.line(pairs: [("type", .string("edit"))] + place(m) + [
                ("id", .string(e.id.hex)), ("original", .string(original.id.hex)), ("author", .string(m.people.account(e.author).hex)),
                ("nick", .text(m.people.nick(e.author) ?? PeerText(""))), ("text", .text(m.opened.text)), ("ts", .number(e.timestamp)),
            ])]
        case let .deleted(m, erased):
            let e = m.envelope
            return erased.map { id in
                JSONEvents.line(pairs: [("type", .string("delete"))] + place(m) + [
                    ("id", .string(id.hex)), ("by", .string(e.id.hex)), ("author", .string(m.people.account(e.author).hex)), ("ts", .number(e.timestamp)),
                ])
            }
        case let .reacted(m, target, _, reaction, on, count):
            let e = m.envelope
            return [JSONEvents.line(pairs: [("type", .string("reaction"))] + place(m) + [
                ("id", .string(e.id.hex)), ("target", .string(target.id.hex)), ("target_author", .string(target.author.hex)),
                ("author", .string(m.people.account(e.author).hex)), ("nick", .text(m.people.nick(e.author) ?? PeerText(""))),
                ("reaction", .text(PeerText(reaction))), ("state", .string(on ? "on" : "off")), ("count", .number(UInt64(max(0, count)))),
                ("ts", .number(e.timestamp)),
            ])]
        case let .replyQuoted(m):
            guard let quote = m.quote else { return [] }
            return [JSONEvents.line(pairs: [("type", .string("reply_quote"))] + place(m) + [("id", .string(m.envelope.id.hex))] + quoted(quote))]
        case let .versions(m, versions):
            return versions.enumerated().map { i, v in
                JSONEvents.line(pairs: [("type", .string("version"))] + place(m) + [
                    ("id", .string(m.envelope.id.hex)), ("version", .number(UInt64(i))), ("edit", .string(i == 0 ? "" : v.envelope.id.hex)),
                    ("text", .text(v.text)), ("ts", .number(v.envelope.timestamp)),
                ])
            }
        case let .typing(person, room):
            return [JSONEvents.line(pairs: [("type", .string("typing"))]
                + (room.map { [("room", .string($0.value))] } ?? [("with", .string(person.key.hex))])
                + [("id", .string(person.key.hex)), ("nick", .text(person.nick ?? PeerText(""))), ("fp", .string(person.key.shortFingerprint))])]
        case let .presence(person, device, beacon):
            return [JSONEvents.line(pairs: [("type", .string("presence")), ("id", .string(person.key.hex)), ("device", .string(device.hex)),
                                            ("nick", .text(person.nick ?? PeerText(String(decoding: beacon.nick, as: UTF8.self)))),
                                            ("fp", .string(person.key.shortFingerprint)), ("state", .string(beacon.state.name)),
                                            ("reason", .text(PeerText(String(decoding: beacon.reason, as: UTF8.self))))])]
        case let .receipt(id, by, state):
            return [JSONEvents.line(["type": .string("receipt"), "id": .string(id.hex), "by": .string(by.hex), "state": .string(state.rawValue)])]
        case let .fork(person, sequence, kept, fork):
            return [JSONEvents.line(["type": .string("fork"), "author": .string(person.key.hex), "seq": .number(sequence),
                                     "kept": .string(kept.hex), "fork": .string(fork.hex)])]
        case let .invite(by, room, _):
            return [JSONEvents.line(["type": .string("invite"), "by": .string(by.key.hex), "nick": .text(by.nick ?? PeerText("")),
                                     "room": .string(room), "state": .string("pending")])]
        case let .inviteRefused(by, room, reason):
            return [JSONEvents.line(["type": .string("invite_refused"), "by": .string(by.key.hex), "room": .string(room), "reason": .string(reason)])]
        case let .inviteAccepted(room, _, by, _):
            return [JSONEvents.line(["type": .string("invite_accepted"), "room": .string(room.value), "by": .string(by.hex)])]
        case let .inviteDeclined(room, by):
            return [JSONEvents.line(["type": .string("invite_declined"), "room": .string(room), "by": .string(by.hex)])]
        case let .blockChanged(person, blocked):
            // A script's /block and /unblock are answered, as every command that changes something.
            return [JSONEvents.line(["type": .string(blocked ? "blocked" : "unblocked"), "id": .string(person.key.hex),
                                     "nick": .text(person.nick ?? PeerText("")), "fp": .string(person.key.shortFingerprint)])]
        case let .readReceipts(on):
            return [JSONEvents.line(["type": .string("setting"), "key": .string("receipts"), "value": .string(on ? "on" : "off")])]
        case let .stats(links, counters, stages):
            // One `stage` line per stage that ran follows the counters (docs/SCALE.md).
            return [JSONEvents.line(pairs: [("type", .string("stats")), ("links", .number(UInt64(links))), ("stages", .number(UInt64(stages.count)))]
                + counters.map { ($0.name, .number(UInt64(max(0, $0.value)))) })]
                + stages.map { stage, s in
                    JSONEvents.line(pairs: [("type", .string("stage")), ("stage", .string(stage.rawValue)), ("count", .number(s.count)),
                                            ("median_ns", .nanoseconds(s.median)), ("p99_ns", .nanoseconds(s.p99)),
                                            ("max_ns", .nanoseconds(s.maximum)), ("total_ns", .nanoseconds(s.total))])
                }
        case let .peers(list):
            return [JSONEvents.line(["type": .string("peers"), "linked": .number(UInt64(list.linked)), "rows": .number(UInt64(list.rows.count)),
                                     "max_links": .number(UInt64(list.maximumLinks)), "reserve": .number(UInt64(list.reserve))])]
                + list.rows.map { row in
                    var pairs: [(String, JSONEvents.Value)] = [("type", .string("peer")), ("id", .string(row.id?.hex ?? "")),
                                                              ("nick", .text(row.id.flatMap { list.people.nick($0) } ?? PeerText(""))),
                                                              ("fp", .string(row.id?.shortFingerprint ?? "")), ("addr", .string(row.address)),
                                                              ("state", .string(row.linkedFor == nil ? "not linked" : "linked"))]
                    if let linkedFor = row.linkedFor { pairs.append(("linked_s", .number(UInt64(max(0, linkedFor))))) }
                    if let rtt = row.roundTrip { pairs.append(("rtt_us", .number(UInt64(max(0, rtt * 1_000_000))))) }
                    pairs += [("sending", .number(row.sending)), ("receiving", .number(row.receiving))]
                    if !row.view.isEmpty { pairs += [("view", .string(row.view)), ("lazy_authors", .number(UInt64(row.lazyAuthors)))] }
                    if row.state == "in reserve" { pairs.append(("view", .string("reserve"))) }
                    if let version = row.version { pairs.append(("link_version", .number(UInt64(version)))) }
                    if let cipher = row.cipher { pairs.append(("cipher", .string(cipher.rawValue))) }
                    return JSONEvents.line(pairs: pairs)
                }
        case let .deviceAdded(account, device, name):
            return [JSONEvents.line(["type": .string("device"), "account": .string(account.key.hex), "nick": .text(account.nick ?? PeerText("")),
                                     "fp": .string(account.key.shortFingerprint), "device": .string(device.hex), "name": .text(name)])]
        case let .deviceRevoked(account, device, by, last):
            return [JSONEvents.line(["type": .string("device_revoked"), "account": .string(account.key.hex), "device": .string(device.hex),
                                     "by": .string(by.hex), "last": .number(last)])]
        case let .membershipChanged(room, by, action, target, epoch):
            return [JSONEvents.line(["type": .string("membership"), "room": .string(room.value), "by": .string(by.key.hex), "action": .string(action),
                                     "target": .string(target.key.hex), "nick": .text(target.nick ?? PeerText("")), "epoch": .number(UInt64(epoch))])]
        case let .deviceCode(code, port, _):
            return [JSONEvents.line(["type": .string("device_code"), "code": .string(code), "port": .number(UInt64(port))])]
        case let .deviceLinked(name, device):
            return [JSONEvents.line(["type": .string("device_linked"), "name": .text(PeerText(name)), "device": .string(device.hex)])]
        case let .followed(change, about, device, _):
            return [JSONEvents.line(["type": .string("followed"), "change": .string(change), "about": .text(PeerText(about)),
                                     "device": .string(device.hex)])]
        case let .roomRoles(room, members, banned):
            return members.map { JSONEvents.line(["type": .string("room_member"), "room": .string(room.value), "id": .string($0.person.key.hex),
                                                   "nick": .text($0.person.nick ?? PeerText("")), "role": .string($0.role)]) }
                + banned.map { JSONEvents.line(["type": .string("room_member"), "room": .string(room.value), "id": .string($0.key.hex),
                                                "nick": .text($0.nick ?? PeerText("")), "role": .string("banned")]) }
        case let .devices(account, devices):
            return devices.map { d in
                var pairs: [(String, JSONEvents.Value)] = [("type", .string("device_listed")), ("account", .string(account.key.hex)),
                                                          ("device", .string(d.key.hex)), ("name", .text(d.name)),
                                                          ("state", .string(d.revokedAfter != nil ? "revoked" : d.isThisNode ? "this" : d.linkedNow ? "linked" : "not_linked"))]
                if let last = d.revokedAfter { pairs.append(("revoked_after", .number(last))) }
                if let seen = d.lastSeen { pairs.append(("last_seen", .number(seen))) }
                return JSONEvents.line(pairs: pairs)
            }
        case let .online(members):
            return members.map { JSONEvents.line(pairs: [("type", .string("online"))] + memberPairs($0)) }
        case let .members(room, members):
            return members.map { member in
                JSONEvents.line(pairs: [("type", .string("member")), ("room", .string(room.value))] + memberPairs(member)
                                + [("last_seen", .number(member.presence.lastSeen ?? 0))])
            }
        case let .sync(report):
            return [JSONEvents.line(["type": .string("sync"), "complete": .string(report.gaps.isEmpty ? "yes" : "no"),
                                     "missing": .number(Backlog.total(report.gaps)), "authors": .number(UInt64(report.gaps.count)),
                                     "forks": .number(UInt64(report.forks.count))])]
        case let .failed(reason):
            return [JSONEvents.line(["type": .string("error"), "error": .string(reason)])]
        case let .fileProgress(n, place, root, bytes, of):
            return [JSONEvents.line(pairs: [("type", .string("file_progress")), ("n", .number(UInt64(max(0, n)))), ("place", .text(PeerText(place))),
                                            ("root", .string(Hex.encode(root))), ("bytes", .number(bytes)), ("of", .number(of))])]
        case let .fileDone(n, place, root, path, hash):
            return [JSONEvents.line(pairs: [("type", .string("file_done")), ("n", .number(UInt64(max(0, n)))), ("place", .text(PeerText(place))),
                                            ("root", .string(Hex.encode(root))), ("path", .text(PeerText(path))), ("hash", .string(Hex.encode(hash)))])]
        case let .fileWaiting(n, place, root, bad):
            var pairs: [(String, JSONEvents.Value)] = [("type", .string("file_waiting")), ("n", .number(UInt64(max(0, n)))),
                                                       ("place", .text(PeerText(place))), ("root", .string(Hex.encode(root)))]
            if !bad.isEmpty { pairs.append(("bad", .string(bad.map(\.key.hex).joined(separator: ",")))) }
            return [JSONEvents.line(pairs: pairs)]
        case let .fileFailed(n, place, root, reason):
            return [JSONEvents.line(pairs: [("type", .string("file_failed")), ("n", .number(UInt64(max(0, n)))), ("place", .text(PeerText(place))),
                                            ("root", .string(Hex.encode(root))), ("reason", .text(PeerText(reason)))])]
        case let .fileCancelled(n, place, root):
            // The /get ended: a script waiting for file_done or file_failed hears it as the latter.
            return [JSONEvents.line(pairs: [("type", .string("file_failed")), ("n", .number(UInt64(max(0, n)))), ("place", .text(PeerText(place))),
                                            ("root", .string(Hex.encode(root))), ("reason", .string("cancelled"))])]
        case let .webPage(url):
            return [JSONEvents.line(["type": .string("web"), "url": .string(url)])]
        case let .conversations(rows):
            return rows.map(conversation)
        case let .found(messages):
            return messages.compactMap { message($0, type: "found") }
        case let .answer(answer):
            return lines(answer)
        case let .chatLines(lines):
            // What a command says that has no event of its own (/join, /nick, /help…): the terminal's lines.
            return lines.map { JSONEvents.line(["type": .string("notice"), "text": .string($0)]) }
        case .greeting, .noInvites, .invited:
            return []
        }
    }

    /// Where an answer is about: `"with"` and the other account for a direct
    /// conversation, else `"room"` and its name.
    static func place(room: RoomName?, with: PublicKey?) -> [(String, JSONEvents.Value)] {
        with.map { [("with", .string($0.hex))] } ?? [("room", .string(room?.value ?? ""))]
    }

    /// A listing command's answer: its head (`history`, `search`,
    /// `mentions`, `rooms`, `files`, `invites`) with the count, then its rows.
    static func lines(_ answer: ScriptAnswer) -> [String] {
        func head(_ type: String, _ count: Int, _ more: [(String, JSONEvents.Value)] = []) -> String {
            JSONEvents.line(pairs: [("type", .string(type))] + more + [("count", .number(UInt64(count)))])
        }
        switch answer {
        case let .history(room, with, messages):
            let place = Self.place(room: room, with: with)
            let rows = messages.compactMap { message($0, type: "history_message") }
            return [head("history", rows.count, place)] + rows
        case let .search(text, messages):
            let rows = messages.compactMap { message($0, type: "found") }
            return [head("search", rows.count, [("text", .string(text))])] + rows
        case let .mentions(messages):
            let rows = messages.compactMap { message($0, type: "found") }
            return [head("mentions", rows.count)] + rows
        case let .rooms(list):
            return [head("rooms", list.count)] + list.map(conversation)
        case let .files(listing):
            let place = Self.place(room: listing.room, with: listing.with)
            return [head("files", listing.rows.count, place + (listing.more ? [("more", .string("yes"))] : []))]
                + listing.rows.map { fileListed($0, place: place) }
        case let .invites(count):
            return [head("invites", count)]
        case let .typing(room, with, sent):
            let place = Self.place(room: room, with: with)
            return [JSONEvents.line(pairs: [("type", .string("typing_sent"))] + place + [("sent", .string(sent ? "yes" : "no"))])]
        }
    }

    /// One row of `/files` (and the API's `files`): the offer (its number,
    /// message id, name, size, root, hash, type, author), how much of it is
    /// held here (`state`, `bytes`), the folder a `/get` under way saves
    /// into (`saving`), and where the last one saved it (`saved`, with
    /// `"saved_gone":"yes"` when no file is there now).
    static func fileListed(_ row: FileListing.Row, place: [(String, JSONEvents.Value)]) -> String {
        let offer = row.offer
        var pairs: [(String, JSONEvents.Value)] = [("type", .string("file_listed"))] + place
        if let n = row.number { pairs.append(("n", .number(UInt64(max(0, n))))) }
        let bytes: UInt64 = switch row.state {
        case .notFetched: 0
        case let .fetching(held): held
        case .held: offer.size
        }
        pairs += [("id", .string(row.envelope.id.hex)), ("name", .text(PeerText(offer.name))), ("size", .number(offer.size)),
                  ("root", .string(Hex.encode(offer.root))), ("hash", .string(Hex.encode(offer.plainHash))), ("media", .text(PeerText(offer.type))),
                  ("from", .string(row.from.key.hex)), ("nick", .text(row.from.nick ?? PeerText(""))), ("fp", .string(row.from.key.shortFingerprint)),
                  ("state", .string(row.state.name)), ("bytes", .number(bytes))]
        if let saving = row.saving { pairs.append(("saving", .text(PeerText(saving)))) }
        if let (path, present) = row.saved {
            pairs.append(("saved", .text(PeerText(path))))
            if !present { pairs.append(("saved_gone", .string("yes"))) }
        }
        return JSONEvents.line(pairs: pairs)
    }

    /// Where an edit or a delete happened: `room`, or `to` for a conversation.
    static func place(_ m: ShownMessage) -> [(String, JSONEvents.Value)] {
        if let room = m.room { return [("room", .string(room.value))] }
        return [("to", .string((m.to ?? m.envelope.author).hex))]
    }

    /// A text, `/me` or direct message; other kinds (nicks, joins) are not events here.
    /// A `/who` or `/who *` row's fields: who, linked or not, what their presence says.
    static func memberPairs(_ member: Member) -> [(String, JSONEvents.Value)] {
        [("id", .string(member.person.key.hex)), ("nick", .text(member.person.nick ?? PeerText(""))), ("fp", .string(member.person.key.shortFingerprint)),
         ("state", .string(member.state.rawValue)), ("presence", .string(member.presence.state?.name ?? "offline")),
         ("reason", .text(PeerText(member.presence.reason)))]
    }

    static func message(_ m: ShownMessage) -> String? { message(m, type: m.opened.kind == .file ? "file" : "message") }

    /// The same fields under another `type` (`found`: a search match).
    static func message(_ m: ShownMessage, type: String) -> String? {
        guard m.opened.isMessage else { return nil }
        let e = m.envelope
        var pairs: [(String, JSONEvents.Value)] = [("type", .string(type)), ("id", .string(e.id.hex)), ("author", .string(m.people.account(e.author).hex)),
                                                  ("nick", .text(m.people.nick(e.author) ?? PeerText(""))), ("seq", .number(e.sequence))]
        if let room = m.room {
            pairs += [("room", .string(room.value)), ("kind", .string(kindName(m.opened.kind)))]
            if let n = m.number { pairs.append(("n", .number(UInt64(max(0, n))))) }
        } else {
            pairs += [("kind", .string("dm")), ("to", .string((m.to ?? e.author).hex))]
            if m.opened.kind == .action { pairs.append(("action", .string("yes"))) }
            // A file offered in a conversation is numbered there, for /get N in the /query.
            if let n = m.number { pairs.append(("n", .number(UInt64(max(0, n))))) }
        }
        pairs += [("text", .text(m.opened.text)), ("ts", .number(e.timestamp))]
        if let quote = m.quote { pairs += quoted(quote) }
        if m.edited { pairs.append(("edited", .string("yes"))) }
        if !m.reactions.isEmpty {
            pairs.append(("reactions", .text(PeerText(m.reactions.map { "\($0.reaction) \($0.count)" }.joined(separator: " ")))))
        }
        // What the terminal shows beside the nick: nick⚠·fp✔(forked).
        let author = m.people[e.author]
        pairs.append(("fp", .string(author.key.shortFingerprint)))
        // Signed by one of the author's other devices (docs/PROTOCOL.md §15).
        if author.key != e.author { pairs.append(("device", .string(e.author.hex))) }
        if author.trusted { pairs.append(("trusted", .string("yes"))) }
        if author.lookAlike { pairs.append(("look_alike", .string("yes"))) }
        if author.forked { pairs.append(("forked", .string("yes"))) }
        if m.mention { pairs.append(("mention", .string("yes"))) }
        if m.backlog { pairs.append(("backlog", .string("yes"))) }
        if let reached = m.reached { pairs.append(("receipt", .string(reached.rawValue))) }
        if let offer = m.opened.offer {
            pairs += [("name", .text(PeerText(offer.name))), ("size", .number(offer.size)), ("hash", .string(Hex.encode(offer.plainHash))),
                      ("root", .string(Hex.encode(offer.root))), ("media", .text(PeerText(offer.type))), ("caption", .text(PeerText(offer.caption))),
                      ("from", .string(m.people.account(e.author).hex))]
            if m.fileHeld { pairs.append(("held", .string("yes"))) }
        }
        return JSONEvents.line(pairs: pairs)
    }

    /// A message's kind as the JSON names it.
    static func kindName(_ kind: Kind) -> String { kind == .reply ? "reply" : kind == .action ? "action" : kind == .file ? "file" : "text" }

    /// A reply's reference: `reply_to` (the answered message's id),
    /// `reply_to_author`, and `reply_to_state` with, when "here", its text.
    static func quoted(_ quote: Quote) -> [(String, JSONEvents.Value)] {
        var pairs: [(String, JSONEvents.Value)] = [("reply_to", .string(quote.target.id.hex)), ("reply_to_author", .string(quote.target.author.hex))]
        switch quote.state {
        case let .here(text): pairs += [("reply_to_state", .string("here")), ("reply_to_text", .text(text))]
        case .missing: pairs.append(("reply_to_state", .string("missing")))
        case .deleted: pairs.append(("reply_to_state", .string("deleted")))
        }
        return pairs
    }

    /// One row of the API's `rooms` (docs/API.md): a room by `room`, a
    /// direct conversation by `with`, and its last message as `last_…`.
    static func conversation(_ row: ConversationRow) -> String {
        var pairs: [(String, JSONEvents.Value)] = [("type", .string("conversation"))]
        if let room = row.room {
            pairs.append(("room", .string(room.value)))
            if row.isPrivate { pairs.append(("private", .string("yes"))) }
        } else if let peer = row.peer {
            pairs += [("with", .string(peer.key.hex)), ("nick", .text(peer.nick ?? PeerText(""))), ("fp", .string(peer.key.shortFingerprint))]
            if peer.trusted { pairs.append(("trusted", .string("yes"))) }
            if peer.lookAlike { pairs.append(("look_alike", .string("yes"))) }
        }
        pairs.append(("unread", .number(UInt64(max(0, row.unread)))))
        if let last = row.last, last.opened.isMessage {
            let e = last.envelope
            pairs += [("last_id", .string(e.id.hex)), ("last_author", .string(e.author.hex)),
                      ("last_nick", .text(last.people.nick(e.author) ?? PeerText(""))), ("last_fp", .string(last.people.account(e.author).shortFingerprint)),
                      ("last_kind", .string(kindName(last.opened.kind))),
                      ("last_text", .text(last.opened.text)), ("last_ts", .number(e.timestamp))]
        }
        return JSONEvents.line(pairs: pairs)
    }
}
