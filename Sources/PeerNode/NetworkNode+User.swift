import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// What the person (or script) types: each line from stdin routed to the
/// unit that answers it.
extension NetworkNode {
    // MARK: commands

    /// A line from stdin; false when the person quit.
    func handleLine(_ line: String) -> Bool {
        // What the command signed besides its own post (a change our other devices follow, a membership event) goes out too.
        defer { flushOwn() }
        if let lines = pendingPaste {
            pendingPaste = nil
            answerPaste(lines, yes: ["y", "yes"].contains(line.trimmingCharacters(in: .whitespaces).lowercased()))
            return true
        }
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
        pendingPaste = kept
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
            sendTyping(in: session.openRoomID)
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
        case .send, .get, .files:
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
}
