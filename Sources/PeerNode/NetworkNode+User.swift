import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// The person's side of the node: what they (or a script) type, each line
/// from stdin routed to the unit that answers it; and what they see,
/// deliveries applied to the model and shown in delivery (causal) order,
/// those that continue their chains before their store's transaction
/// (`showAhead`).
extension NetworkNode {
    // MARK: commands

    /// A line from stdin; false when the person quit.
    func handleLine(_ line: String) -> Bool {
        // A line sees done what the one before it, read with it, left for the loop's wait (a post's row).
        loop.settle()
        // What the command signed besides its own post (a change our other devices follow, a membership event) goes out too.
        defer { flushOwn() }
        if let waiting = held {
            held = nil
            let answer = line.trimmingCharacters(in: .whitespaces).lowercased()
            switch waiting {
            case let .paste(lines): answerPaste(lines, yes: ["y", "yes"].contains(answer))
            case let .drop(paths, typed): answerDrop(paths: paths, line: typed, answer)
            }
            return true
        }
        if droppedFile(line) { return true }
        do {
            let (events, keepGoing) = try handle(ChatInput.parse(line), line: line)
            emit(events)
            return keepGoing
        } catch {
            node.storeFailures.heard(error)
            emit(.failed("\(error)"))
            return true
        }
    }

    /// A paste of several lines at the terminal: nothing is sent before the
    /// person says yes (irssi's `paste_verify_line_count`), so a paste meant
    /// for another window never lands here line by line.
    func pasted(_ lines: [String]) {
        let kept = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard !kept.isEmpty else { return }
        held = .paste(kept)
        let place = session.conversationPeer.map { "your conversation with \(session.plainLabel($0))" } ?? session.room.value
        emit(.chatLines(["-- paste \(kept.count) line\(kept.count == 1 ? "" : "s") into \(place)? y sends them; anything else drops them"]))
    }

    /// The answer to `pasted`: the lines posted as messages, in order (never
    /// as commands: a pasted line that starts with / is text), or dropped.
    private func answerPaste(_ lines: [String], yes: Bool) {
        guard yes else { return emit(.chatLines(["-- the pasted lines were dropped"])) }
        do {
            for line in lines { try postText(line, kind: .text, to: session.conversationPeer) }
        } catch {
            node.storeFailures.heard(error)
            emit(.failed("\(error)"))
        }
    }

    func handle(_ input: ChatInput, line: String) throws -> (events: [NodeEvent], keepGoing: Bool) {
        switch input {
        case let .message(text):
            // In a `/query`, a line goes to the conversation.
            try postText(text, kind: .text, to: session.conversationPeer, split: !answersScripts)
        case let .action(text):
            try postText(text, kind: .action, to: session.conversationPeer, split: !answersScripts)
        case let .edit(number, text):
            // An edit replaces one message: it cannot become several.
            guard answersScripts || text.utf8.count <= MessageParts.maximumBytes else { throw NodeError.editTooLong(limit: MessageParts.maximumBytes) }
            let place = try session.openPlace()
            try act { try $0.messageLife.edit(try $0.messageLife.ownMessage(in: place.room, named: place.name, number: number), text: text) }
        case let .delete(number):
            let place = try session.openPlace()
            try act { try $0.messageLife.delete(try $0.messageLife.ownMessage(in: place.room, named: place.name, number: number)) }
        case let .react(number, reaction):
            guard Reaction.isValid(reaction) else { throw NodeError.badReaction(limit: Reaction.maximumLength) }
            let place = try session.openPlace()
            try act { try $0.reactions.react(to: try $0.messageLife.message(in: place.room, named: place.name, number: number), with: reaction) }
        case let .reactions(number):
            let place = try session.openPlace()
            let target = try node.messageLife.message(in: place.room, named: place.name, number: number)
            return (try chatLines(session.reactions(to: target)), true)
        case let .versions(number):
            let place = try session.openPlace()
            let target = try node.messageLife.message(in: place.room, named: place.name, number: number)
            return ([try versions(of: target)], true)
        case .typing:
            let sent = sendTyping(in: session.openRoomID)
            // A script is answered, as every command is: whether the notice went (not within 3 s of the last).
            if answersScripts {
                let peer = session.conversationPeer
                return ([.answer(.typing(room: peer == nil ? session.room : nil, with: peer.map(node.people.account), sent: sent))], true)
            }
        case let .reply(number, text):
            let place = try session.openPlace()
            // A long answer: the reply holds its first part, the rest follow as messages.
            let parts = answersScripts ? [text] : MessageParts.split(text)
            try act(message: true) { try $0.reactions.reply(to: try $0.messageLife.message(in: place.room, named: place.name, number: number), text: parts[0]) }
            for part in parts.dropFirst() { try postText(part, kind: .text, to: session.conversationPeer) }
        case let .quit(reason):
            // Like IRC's QUIT message: everyone online sees it, with why (presence, never history).
            setPresence(.gone, reason: reason)
            return ([], false)
        case .clear:
            guard let windows else { return ([.chatLines(["-- /clear clears a terminal's screen; here there is none"])], true) }
            windows.clear()
            return ([], true)
        case let .away(reason):
            setPresence(reason == nil ? .online : .away, reason: reason ?? "")
            return ([.chatLines([reason.map { "-- you are away\($0.isEmpty ? "" : ": \(TerminalText.sanitize($0))"); /back when you return" } ?? "-- you are back"])], true)
        case .stats:
            return ([stats()], true)
        case let .invite(who, room):
            let peer = try node.people.resolve(who)
            // The membership event (and the room's create, for an older room) go out with the invite (`flushOwn`).
            _ = try node.privateRooms.invite(peer, to: try RoomName(room))
            return ([.invited(node.people[peer], room: room)], true)
        case let .answerInvite(room, accept):
            // Typed at the prompt (the API's commands have no line): the room accepted is opened.
            return (try answerInvite(room, accept: accept, open: !line.isEmpty), true)
        case .invites:
            return (try listInvites(), true)
        case let .devices(who):
            return ([try devices(of: who.map(node.people.resolve) ?? node.me)], true)
        case .send, .get, .files, .cancel:
            return (try fileCommand(input), true)
        case .kick, .ban, .op, .members, .leaveRoom:
            try refuseInConversation(line)
            return (try membershipCommand(input), true)
        case .deviceAdd:
            return (try deviceAdd.start(node: node, discovery: discoveryConfiguration, emit: { [self] in emit($0) }), true)
        case let .revoke(who):
            let (e, row) = try node.devices.revoke(who)
            sendOwn(e)
            conversationKeysChanged()
            _ = node.devices.revocationIsNews(row.device)
            return ([.deviceRevoked(node.people[row.device], device: row.device, by: node.me, last: node.devices.revokedAfter[row.device] ?? 0)], true)
        case let .set(key, value):
            try node.store.setSetting(key, value)
            receipts.sendsRead = value == "on"
            return ([.readReceipts(on: receipts.sendsRead)], true)
        case .who:
            try refuseInConversation(line)
            return ([try members()], true)
        case .online:
            return ([onlineNow()], true)
        case .peers:
            return ([.peers(peerList())], true)
        case .sync:
            return ([try syncReport()], true)
        case let .block(who, on):
            let key = try node.people.resolve(who)
            try node.setBlocked(key, on)
            blocked.set(try node.store.blockedIdentities())
            if on { feed(.blocked(key)) }
            return ([.blockChanged(node.people[key], blocked: on)], true)
        case let .direct(who, text):
            let peer = try node.people.resolve(who)
            guard node.people.account(peer) != node.account else { throw NodeError.messageToSelf }
            try postText(text, kind: .text, to: peer, split: !answersScripts)
        case let .query(who):
            return (try chatLines(entering { try session.query(who) }), true)
        case .empty:
            break
        case let .nick(name):
            return (try chatLines(session.nick(name)), true)
        case let .join(name):
            return (try chatLines(session.join(name)), true)
        case let .history(count):
            if answersScripts { return ([.answer(try historyAnswer(count))], true) }
            return (try chatLines(session.history(count)), true)
        case let .search(query):
            if answersScripts { return ([.answer(.search(query, try found(query)))], true) }
            return (try chatLines(session.search(query)), true)
        case .mentions:
            if answersScripts { return ([.answer(.mentions(try foundMentions()))], true) }
            return (try chatLines(session.mentions()), true)
        case let .helpOn(text):
            return ([.chatLines(["  " + text])], true)
        case .help:
            return ([.chatLines(ChatInput.helpText.split(separator: "\n").map(String.init))], true)
        case .rooms:
            if answersScripts { return ([.answer(.rooms(try conversations()))], true) }
            let rooms = try session.roomList(mentioned: activity.mentioned(in:))
            return (try chatLines(rooms + conversationLines(after: rooms.count - 1)), true)
        case let .switchRoom(which):
            return (try chatLines(entering { try switchWindow(which) }), true)
        case .part:
            return (try chatLines(session.part()), true)
        case let .createPrivate(name):
            return (try chatLines(session.createPrivate(name)), true)
        case let .trust(who, on):
            return (try chatLines(session.trust(who, on)), true)
        case let .error(message):
            throw NodeError.badCommand(message)
        }
        return ([], true)
    }

    /// A command about the open room, typed while a conversation is open
    /// in its place (`/query`): refused, so that it never acts on a room the
    /// prompt does not show.
    private func refuseInConversation(_ line: String) throws {
        guard let peer = session.conversationPeer else { return }
        let command = line.split(separator: " ").first.map(String.init) ?? "this command"
        throw NodeError.badCommand("\(command) is about a room, and your conversation with \(session.plainLabel(peer)) is open: /part closes it")
    }

    /// Lines the open room's commands print; what they posted themselves
    /// (a nick, a leave) is in them, so it is not shown again.
    func chatLines(_ lines: [String]) -> [NodeEvent] {
        lastShown = max(lastShown, node.store.lastDeliveryNumber)
        // The open room (perhaps a new one) is seen; the act list's numbers may have moved.
        activity.seen(session.openPlaceKey)
        roomOrderStale = true
        refreshPrompt()
        return [.chatLines(lines)]
    }

    /// `/versions` and the API's `versions`: every version of `e`, a message here.
    func versions(of e: Envelope) throws -> NodeEvent {
        guard let opened = node.open(e), let shown = shownIn(e, opened) else { throw NodeError.noMessageWithID(e.id) }
        return .versions(shown, node.messageLife.versions(of: e))
    }

    // MARK: deliveries

    /// Applies what was delivered since last time (nicks, receipts,
    /// invites, receipts owed), then shows it as one batch. `shownAhead`:
    /// what `showAhead` showed before this store's transaction, passed over
    /// here where it was delivered as shown (else shown again: a line twice
    /// rather than a wrong number).
    func showDeliveries(shownAhead: [StoredEnvelope] = [], promptStale: Bool = false) {
        guard !relay else { return }
        let fresh: [StoredEnvelope]
        do { fresh = try node.store.delivered(after: lastShown) } catch {
            log.warning("reading new messages failed: \(error)")
            return
        }
        var events: [NodeEvent] = []
        let before = activity
        let early = EarlyAccounts(fresh, node: node)
        var ahead = shownAhead[...]
        for stored in fresh {
            lastShown = stored.delivery
            if let shown = ahead.first, shown.envelope.id == stored.envelope.id {
                ahead.removeFirst()
                if shown.delivery == stored.delivery, shown.number == stored.number, shown.causalTime == stored.causalTime { continue }
                count(.shownAgain)
            }
            events += applyDelivered(stored, early: early)
        }
        // Not stored after all: shown again when they come back.
        if !ahead.isEmpty { count(.shownAgain, by: ahead.count) }
        emit(events)
        if windows != nil { markOpenPlaceRead(fresh) }
        if promptStale || activity != before || windows?.completerStale == true { refreshPrompt() }
        checkCaughtUp()
    }

    /// The kinds shown before their store's transaction: messages whose
    /// showing reads nothing of the store about themselves. Any other kind
    /// (an edit, a reaction, a receipt, a nick, a file, membership) waits for
    /// the store, and every envelope after it in the batch with it.
    static let kindsShownAhead: Set<Kind> = [.text, .action, .reply]

    /// Shows, before the store's transaction, the leading run of `verified`
    /// that the transaction will deliver as it inserts it, numbered as it
    /// will number it (`Store.deliveredOnInsert`): a message that continues
    /// its author's chain reaches the screen without waiting for the disk
    /// (docs/DECISIONS.md, "Shown before stored"). Returns what it showed,
    /// for `showDeliveries` to pass over once stored, and whether the prompt
    /// is to be drawn again once they are (the act list's window numbers
    /// come from the store). Nothing while anything delivered is still to
    /// be shown (it comes first), nor from a batch carrying account changes
    /// (a revocation taken first may hide a post), nor while the store's
    /// last write failed (a full disk: what cannot be stored is not shown),
    /// nor for a batch larger than `inlineVerifyLimit`: live traffic comes
    /// a few at a time, a catch-up in hundreds, where nobody waits on a
    /// line and telling ahead would cost each envelope a second open.
    func showAhead(_ verified: [Envelope]) -> (shown: [StoredEnvelope], promptStale: Bool) {
        guard !relay, !verified.isEmpty, verified.count <= Self.inlineVerifyLimit, !node.store.lastWriteFailed,
              lastShown == node.store.lastDeliveryNumber,
              !verified.contains(where: { $0.room == node.accountsRoom }),
              let run = readLogged("what the store will deliver", { try node.store.deliveredOnInsert(verified) }) else { return ([], false) }
        var events: [NodeEvent] = []
        var shown: [StoredEnvelope] = []
        let before = activity
        for stored in run {
            // A reply quotes what it answers from the store: one after others shown ahead (what it answers
            // may be among them) waits, and so does a message that replies shown before it wait for; so
            // does a conversation's first message, whose showing records the conversation in its row.
            guard let opened = node.open(stored.envelope), Self.kindsShownAhead.contains(opened.kind), opened.offer == nil,
                  opened.kind != .reply || shown.isEmpty, !node.reactions.awaited(stored.envelope),
                  opened.peer == nil || node.conversations.remembered.contains(stored.envelope.room) else { break }
            events += applyDelivered(stored, opened: opened)
            shown.append(stored)
        }
        emit(events)
        count(.shownAhead, by: shown.count)
        return (shown, activity != before || windows?.completerStale == true)
    }

    /// What was just shown in the open room or conversation was read there.
    private func markOpenPlaceRead(_ fresh: [StoredEnvelope]) {
        let open = session.openRoomIDs
        guard fresh.contains(where: { open.contains($0.envelope.room) }) else { return }
        do { for room in open { try node.store.markRead(room) } } catch {
            log.warning("moving the read mark failed: \(error)")
        }
    }

    /// One delivered envelope: the model changes it makes, and what to show
    /// of it; `early` are the batch's revocations already kept, `opened` its
    /// body where already opened.
    private func applyDelivered(_ stored: StoredEnvelope, early: EarlyAccounts = EarlyAccounts(), opened: OpenedEnvelope? = nil) -> [NodeEvent] {
        let e = stored.envelope
        // A revoked device's envelopes past its limit (or forks below it): kept and relayed, never shown or applied.
        if node.devices.isRevoked(e) {
            node.devices.refusedRevoked &+= 1
            // This machine is the revoked one: each post says so, not a word swallowed.
            if e.author == node.me, let refusal = node.devices.ownRevocation(book: node.people) { return [.failed(refusal)] }
            return []
        }
        // What this node cannot open (others' conversations, rooms it is not in) is not shown.
        guard let opened = opened ?? node.open(e) else { return [] }
        let nickBefore = opened.kind == .nick ? node.people.nick(e.author) : nil
        // Tab completes the new nick at once, not after the next line typed.
        if opened.kind == .nick { windows?.completerStale = true }
        node.observe(e, opened)
        // A blocked identity's messages are kept (and relayed) but not shown.
        if blocked.contains(e.author) { return [] }
        if opened.kind == .nick, !Self.showsNick(by: e.author, account: node.people.account(e.author), before: nickBefore, after: node.people.nick(e.author)) {
            return []
        }
        switch opened.kind {
        case .device:
            guard let row = early.claims[e.id] ?? (early.tried.contains(e.id) ? nil : node.acceptDeviceClaim(e, opened)) else { return [] }
            return [.deviceAdded(node.people[row.account], device: row.device, name: PeerText(row.name))]
        case .membership:
            return membershipDelivered(e, opened)
        case .revoke:
            guard let row = early.revocations[e.id] ?? (early.tried.contains(e.id) ? nil : node.devices.acceptRevocation(e, opened)) else { return [] }
            conversationKeysChanged()
            return node.devices.revokedEvent(row, book: node.people).map { [$0] } ?? []
        case .rekey:
            if node.conversations.accept(e, opened, accountsRoom: node.accountsRoom) { conversationKeysChanged() }
            return []
        case .follow:
            return followed(e, opened)
        case .receipt:
            guard e.author != node.me, let receipt = Receipt.decode(opened.content) else { return [] }
            // Another device of ours read the room: so have we (docs/PROTOCOL.md §15).
            if node.people.account(e.author) == node.account {
                if receipt.state == .read, receipts.readElsewhere(receipt, in: e.room), let name = node.roomName(e.room) { activity.seen(name.value) }
                return []
            }
            return receipts.arrived(receipt, from: e.author, in: e.room, shown: presenter.showsReceipts)
        case .invite:
            // An invite comes in a conversation, never in a room.
            guard e.author != node.me, let peer = opened.peer, let invite = Invite.decode(opened.content) else { return [] }
            return invited(by: peer, invite)
        case .edit:
            guard let original = node.messageLife.acceptEdit(e, opened), var shown = shownIn(e, opened) else { return [] }
            // An offer's edit reads as the offer with its new caption: the line names the file it is about.
            shown.editedOffer = node.open(original).flatMap { $0.withText(opened.text.unsanitized).offer }
            return [.edited(shown, original: original)]
        case .tombstone:
            // A file offered in what it erases leaves the disk too: here for what this device signed (what came
            // from a link was erased as it was stored, `Files.erase(takenBackBy:)`).
            if e.author == node.me { tell(node.files.erase(takenBackBy: [e])) }
            guard let shown = shownIn(e, opened) else { return [] }
            return [.deleted(shown, erased: node.messageLife.erasedIDs(by: e))]
        case .reaction:
            guard let (target, reaction, on) = node.reactions.accept(e, opened), var shown = shownIn(e, opened) else { return [] }
            shown.naming(target.author, book: node.people)
            let text = node.open(target).map { node.messageLife.currentText(of: target, opened: $0).text }
            let count = node.reactions.standing(on: target).first { $0.reaction == reaction }?.by.count ?? 0
            return [.reacted(shown, target: target, text: text, reaction: reaction, on: on, count: count)]
        default:
            break
        }
        if opened.isMessage { typing.posted(by: e.author, in: e.room, now: monotonic()) }
        if let peer = opened.peer {
            guard opened.isMessage else { return [] }
            // Kept, so /rooms lists the conversation after a restart even if we never wrote in it.
            if node.conversations.remembered.insert(e.room).inserted {
                do { try node.store.rememberConversation(e.room, with: peer) } catch { log.warning("cannot record a conversation: \(error)") }
            }
            // Without windows a direct message is shown wherever the person is, and counts as read there;
            // at a terminal it is read once its window is open, and until then it is on the act list.
            let here = windows == nil || session.openRoomIDs.contains(e.room)
            receipts.shown(author: e.author, sequence: e.sequence, in: e.room, isMessage: true, current: here)
            let from = node.people.account(e.author)
            if !here, from != node.account {
                activity.arrived(in: ChatSession.conversationKey(from), mention: true)
                roomOrderStale = true
            }
            var shown = ShownMessage(envelope: e, opened: opened, room: nil, to: node.people.account(e.author) == node.account ? peer : node.account, me: node.me, book: node.people)
            shown.backlog = isBacklog(e)
            var fetching: [NodeEvent] = []
            if let offer = opened.offer {
                shown.number = readLogged("a message's number") { try node.store.number(of: stored) } ?? nil
                shown.fileHeld = node.files.holdsWhole(offer.root)
                if e.author != node.me, !shown.fileHeld { fetching = autoGet(e, offer, number: shown.number, place: "your conversation") }
            }
            return [.message(node.reactions.quoted(shown, book: node.people))] + node.reactions.filled(by: e, book: node.people).map(NodeEvent.replyQuoted) + fetching
        }
        guard let roomName = node.roomName(e.room) else { return [] }
        // Nothing is owed for what our own account signed (another device of ours).
        let fromUs = node.people.account(e.author) == node.account
        let isOpen = session.openRoomIDs.contains(e.room)
        receipts.shown(author: e.author, sequence: e.sequence, in: e.room, isMessage: opened.isMessage && !fromUs, current: isOpen)
        var shown = node.reactions.quoted(ShownMessage(envelope: e, opened: opened, room: roomName, to: nil, me: node.me, book: node.people), book: node.people)
        if opened.isMessage { shown.number = readLogged("a message's number") { try node.store.number(of: stored) } ?? nil }
        shown.backlog = isBacklog(e)
        if opened.kind == .nick { shown.nickBefore = nickBefore }
        var fetching: [NodeEvent] = []
        if let offer = opened.offer {
            shown.fileHeld = node.files.holdsWhole(offer.root)
            if !fromUs, !shown.fileHeld { fetching = autoGet(e, offer, number: shown.number, place: roomName.value) }
        }
        // A message in any room may move it up `/rooms`, whose numbers the act list shows.
        roomOrderStale = roomOrderStale || opened.isMessage
        if !isOpen, opened.isMessage, !fromUs {
            activity.arrived(in: roomName.value, mention: shown.mention)
        }
        return [.message(shown)] + (opened.isMessage ? node.reactions.filled(by: e, book: node.people).map(NodeEvent.replyQuoted) : []) + fetching
    }

    /// Whether a delivered nick change gets its line ("bob is now known as
    /// robert"): not when a device signed its account's nick unchanged, as
    /// every new device does once (the account said it already).
    static func showsNick(by author: PublicKey, account: PublicKey, before: PeerText?, after: PeerText?) -> Bool {
        author == account || before == nil || before != after
    }

    /// `e` as shown where it was posted: a room this node shows, or a conversation of ours.
    func shownIn(_ e: Envelope, _ opened: OpenedEnvelope) -> ShownMessage? {
        var shown: ShownMessage
        if let peer = opened.peer {
            shown = ShownMessage(envelope: e, opened: opened, room: nil, to: node.people.account(e.author) == node.account ? peer : node.account, me: node.me, book: node.people)
        } else {
            guard let roomName = node.roomName(e.room) else { return nil }
            shown = ShownMessage(envelope: e, opened: opened, room: roomName, to: nil, me: node.me, book: node.people)
        }
        shown.backlog = isBacklog(e)
        return shown
    }

    /// Before the first catch-up, what others wrote is history coming in, not news (a bot must not answer it).
    private func isBacklog(_ e: Envelope) -> Bool {
        !caughtUp && node.people.account(e.author) != node.account
    }
}
