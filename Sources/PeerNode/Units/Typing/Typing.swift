import Crypto
import Gossip
import NodeCore

/// Typing notices (issue 17; docs/PROTOCOL.md §10, "Typing"): ours go out
/// while the person types at the prompt, one per room every
/// `TypingBoard.sendInterval`; others' are checked (`TypingBoard`, then
/// the signature), passed on once, and shown in the prompt line and as a
/// `typing` event. Nothing of them is stored.
///
/// Given the key that signs ours; owns the board. It answers what to send,
/// pass on and show, and the network node does the sending and showing
/// (as `LinkCore` answers effects). Confined to the node's loop.
final class Typing {
    /// What became of a notice a link brought.
    struct Arrival: Equatable {
        /// Dropped (stale, repeated, a full board, a flooding link, a bad signature): counted as `typing_dropped`.
        var dropped = false
        /// The notice to pass on to every other link, once.
        var passOn: TypingNotice?
        /// It could have gone on but the links' budget was spent (`typing_not_passed_on`).
        var notPassedOn = false
        /// The typer was not typing there a moment ago: worth showing.
        var fresh = false
    }

    /// Most typers the prompt names; more are "several people".
    static let typersNamed = 3

    private var board: TypingBoard
    private let identity: SigningKey

    init(identity: SigningKey) {
        self.identity = identity
        board = TypingBoard(me: identity.publicKey)
    }

    /// Whether a draft at the prompt says we are typing: a message or `/me`
    /// being written (commands do not).
    static func isTyping(_ draft: String) -> Bool {
        !draft.isEmpty && (!draft.hasPrefix("/") || draft.hasPrefix("/me ") || draft.hasPrefix("//"))
    }

    /// Our notice for `room` (a room, or a conversation's), unless we said so lately.
    func ours(in room: RoomID, now: Double, wall: UInt64) -> TypingNotice? {
        guard board.shouldSend(in: room, now: now) else { return nil }
        return TypingNotice.sign(room: room, by: identity, time: wall)
    }

    /// A notice a link brought: checked, and what to do with it.
    func arrived(_ notice: TypingNotice, from link: LinkID, now: Double, wall: UInt64) -> Arrival {
        switch board.examine(notice, from: link, now: now, wall: wall) {
        case .check: break
        case .own: return Arrival()
        case .stale, .repeated, .full, .flood: return Arrival(dropped: true)
        }
        guard notice.isSigned else { return Arrival(dropped: true) }
        var arrival = Arrival(fresh: board.accept(notice, from: link, now: now))
        if notice.forwards < TypingNotice.maximumForwards {
            if board.mayPassOn(from: link, now: now) { arrival.passOn = notice.forwarded } else { arrival.notPassedOn = true }
        }
        return arrival
    }

    /// A message by `typer` in `room` ends its typing there.
    func posted(by typer: PublicKey, in room: RoomID, now: Double) { board.posted(by: typer, in: room, now: now) }

    /// Our post in `room` ends our typing there; the next key says so again at once.
    func postedOwn(in room: RoomID) { board.sent(messageIn: room) }

    /// Forgets what went stale.
    func expire(now: Double) { _ = board.expire(now: now) }

    /// Who types in `room` now.
    func typers(in room: RoomID, now: Double) -> [PublicKey] { board.typing(in: room, now: now) }

    /// "(bob·k3fq is typing…) " for the typers' plain labels, "" for none.
    static func line(_ names: [String]) -> String {
        guard !names.isEmpty else { return "" }
        if names.count > typersNamed { return "(several people are typing…) " }
        return "(" + names.joined(separator: ", ") + (names.count == 1 ? " is" : " are") + " typing…) "
    }
}
