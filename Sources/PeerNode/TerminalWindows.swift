import Crypto
import Foundation
import Gossip
import TermUI

/// At a terminal, each room and each direct conversation is a window, as
/// in irssi: only the open window's lines print; a message elsewhere goes
/// to the prompt's act list (`Activity`), and one that names you or is
/// written to you rings the bell. What came in before this node first
/// caught up with its peers (`ShownMessage.backlog`) prints no rows at
/// all: it is counted, and once the catch-up is over (or it has been
/// quiet for `backlogQuiet`) one line says how many came where and the
/// open window shows its last `backlogRows` (docs/DECISIONS.md, "Windows
/// at the terminal").
///
/// Scripts and pipes are not windows: `--json` and plain lines on a pipe
/// carry every event, as before. Pure apart from the closures the node
/// gives it; it runs on the node's loop.
final class TerminalWindows {
    /// Rows of the open window shown after a catch-up, or on entering it.
    static let backlogRows = 20
    /// A catch-up that has brought nothing for this long is summed up even
    /// if the node has not caught up (a peer that announces what it cannot
    /// serve must not keep the screen silent).
    static let backlogQuiet = 2.0

    /// This machine's key: what it posts prints in any window.
    let me: PublicKey
    /// The rooms of the open window (a conversation has two).
    var openRooms: () -> Set<RoomID> = { [] }
    /// Rings the terminal's bell, and clears its screen (`/clear`).
    var ring: () -> Void = {}
    var clear: () -> Void = {}
    /// A nick was learned or changed: Tab's completer is given again (`completerChanged`) at the next prompt refresh.
    var completerStale = false
    var completerChanged: (Completer) -> Void = { _ in }

    /// What was held back as backlog since the last summary, per room: its
    /// messages, and all its lines (nick changes, leaves and the like too).
    private(set) var heldBack: [RoomID: Held] = [:]

    struct Held: Equatable {
        var messages = 0
        var lines = 0
    }
    /// The last `backlogRows` events held back in each room, in the order
    /// they came (numbered, to merge a conversation's two rooms).
    private var kept: [RoomID: [(order: Int, event: NodeEvent)]] = [:]
    private var order = 0
    /// When the last of them came.
    private(set) var lastHeldBack = 0.0

    init(me: PublicKey) {
        self.me = me
    }

    /// Whether the terminal prints `event` now. A message of another
    /// window rings the bell when it names us or is written to us.
    func admits(_ event: NodeEvent, now: Double) -> Bool {
        guard let shown = Self.shown(in: event) else { return true }
        if shown.backlog {
            if case .message = event {
                heldBack[shown.envelope.room, default: Held()].lines += 1
                if shown.opened.isMessage { heldBack[shown.envelope.room, default: Held()].messages += 1 }
            }
            lastHeldBack = now
            order += 1
            kept[shown.envelope.room, default: []].append((order, event))
            if let count = kept[shown.envelope.room]?.count, count > Self.backlogRows { kept[shown.envelope.room]?.removeFirst(count - Self.backlogRows) }
            return false
        }
        // What this machine posted prints where it was typed (`/msg bob …` from #random says it went),
        // as irssi echoes a /msg in the window it was typed in.
        if openRooms().contains(shown.envelope.room) || shown.envelope.author == me { return true }
        if case .message = event, shown.opened.isMessage, shown.mention || shown.room == nil,
           Renderer(people: shown.people).isFromSomeoneElse(shown.envelope) { ring() }
        return false
    }

    /// Whether held-back backlog is due for its summary: the node caught up,
    /// or nothing more came for `backlogQuiet`.
    func backlogDue(caughtUp: Bool, now: Double) -> Bool {
        !heldBack.isEmpty && (caughtUp || now - lastHeldBack >= Self.backlogQuiet)
    }

    /// The counts held back, and the last `backlogRows` events of those
    /// that came in `rooms` (the open window), to show now; all emptied.
    func takeHeldBack(showing rooms: Set<RoomID>) -> (held: [RoomID: Held], rows: [NodeEvent]) {
        let rows = kept.filter { rooms.contains($0.key) }.values.joined().sorted { $0.order < $1.order }.suffix(Self.backlogRows)
        defer {
            heldBack = [:]
            kept = [:]
        }
        return (heldBack, rows.map { Self.live($0.event) })
    }

    /// `event` as shown live: no longer held back.
    static func live(_ event: NodeEvent) -> NodeEvent {
        switch event {
        case var .message(m):
            m.backlog = false
            return .message(m)
        case var .replyQuoted(m):
            m.backlog = false
            return .replyQuoted(m)
        case .edited(var m, let original):
            m.backlog = false
            return .edited(m, original: original)
        case .deleted(var m, let erased):
            m.backlog = false
            return .deleted(m, erased: erased)
        case .reacted(var m, let target, let text, let reaction, let on, let count):
            m.backlog = false
            return .reacted(m, target: target, text: text, reaction: reaction, on: on, count: count)
        default:
            return event
        }
    }

    /// The message an event is about, where it belongs to one window.
    /// Everything else (link lines, invites, membership, answers) prints
    /// in any window.
    static func shown(in event: NodeEvent) -> ShownMessage? {
        switch event {
        case let .message(m), let .replyQuoted(m), let .edited(m, _), let .deleted(m, _), let .reacted(m, _, _, _, _, _):
            m
        default:
            nil
        }
    }
}

/// The terminal's presenter with its windows: what `TerminalWindows`
/// admits goes to `TerminalPresenter`'s lines.
struct WindowedTerminalPresenter: Presenter {
    let lines: TerminalPresenter
    let windows: TerminalWindows

    func present(_ events: [NodeEvent]) {
        let now = ProcessInfo.processInfo.systemUptime
        lines.present(events.filter { windows.admits($0, now: now) })
    }

    var showsReceipts: Bool { lines.showsReceipts }
}
