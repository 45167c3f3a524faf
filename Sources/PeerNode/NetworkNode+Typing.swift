import ChatText
import Crypto
import Gossip
import NodeCore

/// Typing notices (issue 17; docs/PROTOCOL.md §10, "Typing"): ours go out
/// while the person types at the prompt, one per room every
/// `TypingBoard.sendInterval`; others' are checked (`TypingBoard`, then
/// the signature), passed on once, and shown in the prompt line and as a
/// `typing` event. Nothing of them is stored.
extension NetworkNode {
    /// A key at the prompt left `draft`: a message or `/me` being written
    /// in the open room says so (commands do not).
    func typed(draft: String) {
        guard !draft.isEmpty, !draft.hasPrefix("/") || draft.hasPrefix("/me ") || draft.hasPrefix("//") else { return }
        sendTyping(in: session.openRoomID)
    }

    /// Says we are typing in `room` (a room, or a conversation's), unless we said so lately.
    func sendTyping(in room: RoomID) {
        guard !relay, typingBoard.shouldSend(in: room, now: monotonic()) else { return }
        feed(.typing(TypingNotice.sign(room: room, by: node.identity, time: Node.now()), except: nil))
    }

    /// A notice a link brought: checked, passed on once, and shown if it is
    /// about a room or conversation of ours.
    func typingArrived(_ notice: TypingNotice, from link: LinkID) {
        let now = monotonic()
        switch typingBoard.examine(notice, from: link, now: now, wall: Node.now()) {
        case .check: break
        case .own: return
        case .stale, .repeated, .full, .flood: return count(.typingDropped)
        }
        guard notice.isSigned else { return count(.typingDropped) }
        let fresh = typingBoard.accept(notice, from: link, now: now)
        if notice.forwards < TypingNotice.maximumForwards {
            if typingBoard.mayPassOn(from: link, now: now) { feed(.typing(notice.forwarded, except: link)) } else { count(.typingNotPassedOn) }
        }
        guard !relay, fresh, !blocked.contains(notice.typer) else { return }
        if let name = node.roomName(notice.room) {
            emit(.typing(node.people[notice.typer], room: name))
        } else if node.dmPeers[notice.room] == notice.typer {
            emit(.typing(node.people[notice.typer], room: nil))
        }
        refreshPrompt()
    }

    /// Our post in `room` ends our typing there; the next key says so again at once.
    func postedOwn(in room: RoomID) { typingBoard.sent(messageIn: room) }

    /// Most typers the prompt names; more are "several people".
    static let typersNamed = 3

    /// "(bob·k3fq is typing…) " for the open room or conversation, "" when nobody is.
    func typingLine() -> String {
        let typers = typingBoard.typing(in: session.openRoomID, now: monotonic()).filter { !blocked.contains($0) }
        guard !typers.isEmpty else { return "" }
        if typers.count > Self.typersNamed { return "(several people are typing…) " }
        // Plain labels: the prompt's width is counted without colour codes.
        let names = typers.map { key in (node.people.nick(key).map { "\($0)·" } ?? "") + node.people.account(key).shortFingerprint }
        return "(" + names.joined(separator: ", ") + (typers.count == 1 ? " is" : " are") + " typing…) "
    }
}
