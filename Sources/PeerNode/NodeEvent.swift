import ChatText
import Crypto
import Gossip
import NetworkText
import NodeCore

/// What the node tells whoever watches it: one stream, and a presenter per
/// way of watching (`TerminalPresenter` for lines a person reads,
/// `JSONPresenter` for `--json`, `RelayLogPresenter` for a relay's log).
/// An event carries every field a presenter shows (people come with their
/// nicks and marks), so no presenter reaches into the node, and nothing
/// else in the node asks which mode it runs in.
enum NodeEvent {
    /// Start: who this node is and where it listens.
    case ready(id: PublicKey, nick: String?, listen: String)
    /// The first time since the start that this node holds everything a linked peer announced: what was
    /// shown before it is the backlog (`ShownMessage.backlog`), what comes after is live.
    case caughtUp(held: UInt64)
    /// What a person should read first (the greeting and the room's last lines).
    case greeting([String])
    /// The first link to the node `node` is up. `Person` is whom it signs
    /// for, with the nick from its messages, else from its handshake: its
    /// account when `node` is a device, and then `device` is the device's name.
    /// `subprotocol`: the link's version and cipher as agreed (`peernode.10.aesgcm`), for the relay's log.
    case peerUp(Person, address: String, node: PublicKey, device: String?, subprotocol: String = "")
    /// A link to `node` speaks a version whose envelopes are older than
    /// this build signs: what this node writes now is held back from it
    /// until it is upgraded (docs/PROTOCOL.md §10). Said once a peer a run.
    case olderPeer(Person, node: PublicKey, linkVersion: Int)
    /// No link to the peer is left (`reason`: what its last link said when it closed).
    case peerDown(PublicKey, reason: PeerText?, person: Person)
    case message(ShownMessage)
    /// An edit (`shown` is the edit envelope, its text the new one) of `original`.
    case edited(ShownMessage, original: Envelope)
    /// A tombstone (`shown`) erased these messages of its author.
    case deleted(ShownMessage, erased: [MessageID])
    /// A reaction (`shown`) given (`on`) or taken back on `target`, whose
    /// text is `text` (nil: not readable); `count`: how many give it now.
    case reacted(ShownMessage, target: Envelope, text: PeerText?, reaction: String, on: Bool, count: Int)
    /// A reply shown before the message it answers arrived, now with its quote.
    case replyQuoted(ShownMessage)
    /// `/versions`: a message (`shown`, as first sent) and each of its versions, oldest first.
    case versions(ShownMessage, [(envelope: Envelope, text: PeerText)])
    /// Someone typing in a room (`room`) or in our conversation (`room` nil).
    case typing(Person, room: RoomName?)
    /// `/who *`: every account with a beacon that holds now (ours first).
    case online([Member])
    /// Someone's device said it is online, away, gone or a relay (`Presence`): what is shown of it changed.
    case presence(Person, device: PublicKey, beacon: PresenceBeacon)
    /// How far one of our messages has got with a peer.
    case receipt(MessageID, by: PublicKey, state: ReceiptState)
    /// An author signed two different envelopes at one sequence; the first held is kept.
    case fork(Person, sequence: UInt64, kept: MessageID, fork: MessageID)
    /// An invite waiting for an answer: as it arrives, or `listed` by `/invites`.
    case invite(by: Person, room: String, listed: Bool)
    case noInvites
    case inviteRefused(by: Person, room: String, reason: String)
    /// Joined as `room` (another name here when `askedFor` was taken).
    case inviteAccepted(room: RoomName, askedFor: String, by: PublicKey, opened: Bool)
    case inviteDeclined(room: String, by: PublicKey)
    /// `/invite` sent.
    case invited(Person, room: String)
    case blockChanged(Person, blocked: Bool)
    /// A device's claim was delivered: `account` has a device more.
    case deviceAdded(Person, device: PublicKey, name: PeerText)
    /// `device` of `account` was revoked by `by`: what it signs after `last` is refused.
    case deviceRevoked(Person, device: PublicKey, by: PublicKey, last: UInt64)
    /// A private room's membership changed: `action` by `by` about `target`.
    case membershipChanged(room: RoomName, by: Person, action: String, target: Person, epoch: UInt32)
    /// Another device of ours made a change this one followed (`FollowChange`):
    /// its name (`change`), the room or identity it was about, by `device`.
    case followed(change: String, about: String, device: PublicKey, name: String?)
    /// `/device add`: the code offered and what to type on the new machine; then the device linked.
    case deviceCode(code: String, port: UInt16, instructions: [String])
    case deviceLinked(name: String, device: PublicKey)
    /// `/members`: each account in a private room with its role, then the banned.
    case roomRoles(room: RoomName, [(person: Person, role: String)], banned: [Person])
    /// `/devices`, `/whois`: an account and its devices.
    case devices(Person, [DeviceInfo])
    case readReceipts(on: Bool)
    /// `/stats`: counters by name, and where the time goes (`StageTimes`).
    case stats(links: Int, counters: [(name: String, value: Int)], stages: [(stage: StageTimes.Stage, summary: StageTimes.Summary)])
    case peers(PeerList)
    case members(room: RoomName, [Member])
    case sync(SyncReport)
    /// A file being fetched (`/get`): message `number` in `place`, `bytes` of `of` held.
    case fileProgress(number: Int, place: String, root: [UInt8], bytes: UInt64, of: UInt64)
    /// Fetched, opened, checked against the offer's hash and saved at `path`.
    case fileDone(number: Int, place: String, root: [UInt8], path: String, hash: [UInt8])
    case fileFailed(number: Int, place: String, root: [UInt8], reason: String)
    /// `/cancel`: the fetch stopped and what came of it erased (`file_failed`, reason "cancelled", in `--json`).
    case fileCancelled(number: Int, place: String, root: [UInt8])
    /// Nobody linked has served a chunk of it for a while (it goes on when someone does).
    /// `bad`: those linked that hold it but sent a chunk that did not verify (asked no more for it).
    case fileWaiting(number: Int, place: String, root: [UInt8], bad: [Person])
    /// A command failed; the reason is for the person who typed it.
    case failed(String)
    /// What a command says that has no event of its own (`/join`, `/nick`,
    /// `/help`…; `/history` and the other listings at the terminal): lines
    /// there, `notice` lines in `--json`.
    case chatLines([String])
    /// `--web`: the page's address, with its token, to open in a browser.
    case webPage(url: String)
    /// The API's `rooms`: the rooms and direct conversations, most recent first.
    case conversations([ConversationRow])
    /// The API's `search`: the matches, newest first.
    case found([ShownMessage])
    /// A listing command's answer to a script (`--json`): `/history`,
    /// `/search`, `/mentions`, `/rooms` and `/files`, which a person reads as
    /// `chatLines`. Not sent to the page, whose API asks for these itself.
    case answer(ScriptAnswer)
}

/// What `/history`, `/search`, `/mentions`, `/rooms`, `/files` and `/invites` answer in `--json`:
/// a head line with the count, then one line per row.
enum ScriptAnswer {
    /// The open room's (`room`) or direct conversation's (`with`) last messages, oldest first.
    case history(room: RoomName?, with: PublicKey?, [ShownMessage])
    /// `/search TEXT`'s matches, newest first.
    case search(String, [ShownMessage])
    /// `/mentions`: messages naming us, newest first.
    case mentions([ShownMessage])
    /// `/rooms`: the rooms and direct conversations, most recent first.
    case rooms([ConversationRow])
    /// `/files` (and the API's `files`): the open place's standing offers, oldest first.
    case files(FileListing)
    /// `/invites`: how many invites wait (each follows as its `invite` event).
    case invites(Int)
    /// `/typing` in the open room (`room`) or conversation (`with`): whether
    /// a notice went (one within `TypingBoard.sendInterval` of the last does not).
    case typing(room: RoomName?, with: PublicKey?, sent: Bool)
}

/// One device of an account, as `/devices` lists it.
struct DeviceInfo {
    let key: PublicKey
    let name: PeerText
    /// The account's own key (its first device).
    let isAccountKey: Bool
    let isThisNode: Bool
    let linkedNow: Bool
    /// When its newest envelope here was signed (ms, its clock); nil: none here.
    let lastSeen: UInt64?
    /// Revoked: its envelopes after this sequence are refused.
    let revokedAfter: UInt64?
}

/// A room or direct conversation, as the page's list shows it.
struct ConversationRow {
    /// The room; nil for a direct conversation.
    let room: RoomName?
    /// The other party of a direct conversation.
    let peer: Person?
    let isPrivate: Bool
    /// Texts and actions from others after the read mark.
    let unread: Int
    /// Its last message, for the preview (nil: none yet, or not a message).
    let last: ShownMessage?
}

/// A message shown: in a room (`room`), or a direct one (`to`).
struct ShownMessage {
    let envelope: Envelope
    let opened: OpenedEnvelope
    /// The room's name; nil for a direct message.
    let room: RoomName?
    /// The other party of a direct message.
    let to: PublicKey?
    /// Nicks and marks of its author, the other party and this node (for
    /// mentions) when it was shown.
    private(set) var people: People
    /// Someone else's text or action that names our nick (`Mentions`).
    let mention: Bool
    /// For a reply: what it shows of the message it answers (`quote(_:book:)`).
    private(set) var quote: Quote?
    /// Its number in its room, as `/history` shows it (nil: not counted, or direct).
    var number: Int?
    /// Read back from the store (the API's history): its text is its latest
    /// edit's (`edited`), and the reactions standing on it.
    var edited = false
    var reactions: [(reaction: String, count: Int)] = []
    /// A file offered that this node holds whole (the page links and shows it).
    var fileHeld = false
    /// An edit of a file offer: the offer as it now reads (its file, the new caption), for the line.
    var editedOffer: FileOffer?
    /// Someone else's, shown before this node first caught up with its peers (`NodeEvent.caughtUp`).
    var backlog = false
    /// A nick change: the nick it replaces, for "bob·fnwq is now known as robert".
    var nickBefore: PeerText?
    /// Ours, read back for the page: how far it has got (`Receipts.reached`).
    var reached: ReceiptState?

    /// `people` is taken from the node's book for those it names.
    init(envelope: Envelope, opened: OpenedEnvelope, room: RoomName?, to: PublicKey?, me: PublicKey, book: People) {
        self.envelope = envelope
        self.opened = opened
        self.room = room
        self.to = to
        people = book.only([envelope.author, me] + (to.map { [$0] } ?? []))
        mention = envelope.author != me && opened.isMessage && Mentions.names(book.nick(me)?.unsanitized ?? "", in: opened.text.unsanitized)
    }

    /// Sets a reply's quote, with the quoted author's nick and marks from `book`.
    mutating func quote(_ quote: Quote?, book: People) {
        self.quote = quote
        if let author = quote?.target.author { naming(author, book: book) }
    }

    /// Takes `other`'s nick and marks from `book` too (someone the line names: a quoted or reacted-to author).
    mutating func naming(_ other: PublicKey, book: People) {
        people = book.only(Array(people.nicks.keys) + [envelope.author, other] + (to.map { [$0] } ?? []))
    }
}

enum ReceiptState: String {
    /// A peer has stored it.
    case stored
    /// A peer has shown it.
    case delivered
    /// A person at a peer has seen it.
    case read
}

/// `/peers`: each linked peer, then each known one not linked.
struct PeerList {
    let linked: Int
    /// The overlay's bound on links (0: none, every peer found is linked).
    let maximumLinks: Int
    /// Peers known in reserve (the overlay's passive view).
    let reserve: Int
    let rows: [PeerRow]
    private(set) var people: People
}

/// One row of `/peers`.
struct PeerRow {
    let id: PublicKey?
    let address: String
    /// "linked", "found on the LAN", "--peer" (known but not linked), or "--peer, not linked yet".
    let state: String
    let linkedFor: Double?
    let roundTrip: Double?
    /// Envelopes we hold that it lacks, and it holds that we lack.
    let sending: UInt64, receiving: UInt64
    /// Why a linked peer is linked: "neighbour" (the overlay keeps it), "kept"
    /// (a --peer, ours or its), "asked" (we asked it to be a neighbour and wait
    /// for the answer), "unclaimed" (it has not said what it wants yet; closed
    /// after `Overlay.claimGrace`), "older version" (a link of an earlier build);
    /// "" when not linked.
    var view = ""
    /// Authors whose new messages go to it as ids only (their tree reaches it
    /// by another link); everyone else's go in full.
    var lazyAuthors = 0
    /// The device's name, when the peer is a device of an account (two of one account's devices are two rows).
    var device: String?
    /// A linked peer's link version and cipher.
    var version: Int?
    var cipher: NoiseCipher?
}

/// One author of a room, for `/who`.
struct Member {
    enum State: String {
        case you
        case linked
        case notLinked = "not linked"
    }

    let person: Person
    let state: State
    /// Online, away (why), gone, or when last seen: from its devices' beacons (`Presence`).
    var presence = Presence.Status.unknown
    /// The names of its devices that posted here (not its account key): one person, several machines.
    var devices: [String] = []

    init(person: Person, state: State, presence: Presence.Status = .unknown, devices: [String] = []) {
        self.person = person
        self.state = state
        self.presence = presence
        self.devices = devices
    }
}

/// `/sync`: what this node lacks of what its peers declared, and forks found.
struct SyncReport {
    let gaps: [Backlog.Gap]
    /// Messages held, from how many authors, and peers linked now.
    let held: UInt64
    let authors: Int
    let linked: Int
    /// Each forked author and the sequences it signed twice.
    let forks: [(author: PublicKey, sequences: [UInt64])]
    /// Milliseconds since 1970, for "last seen … ago".
    let now: UInt64
    private(set) var people: People
}

/// Where the node's events go. A batch is written together (one write).
protocol Presenter {
    func present(_ events: [NodeEvent])
    /// Whether it shows `.receipt` per message. Each costs a read of our
    /// own messages from the store, so the node makes them only for a
    /// presenter that shows them (the terminal shows the prompt's mark).
    var showsReceipts: Bool { get }
}

extension Presenter {
    var showsReceipts: Bool { false }
}

/// Several presenters at once (the terminal or the JSON lines, and the web page).
/// Those that show events as their `--json` lines get them formatted once.
struct PresenterGroup: Presenter {
    let all: [any Presenter]

    func present(_ events: [NodeEvent]) {
        var lines: [String]?
        for p in all {
            guard let json = p as? any JSONLinePresenter else {
                p.present(events)
                continue
            }
            guard json.wantsLines else { continue }
            guard json.takesAnswers || !events.contains(where: \.isAnswer) else {
                json.present(events)
                continue
            }
            let formatted = lines ?? events.flatMap(JSONPresenter.lines)
            lines = formatted
            json.present(lines: formatted)
        }
    }

    var showsReceipts: Bool { all.contains { $0.showsReceipts } }
}

/// A presenter that shows each event as its `--json` line (`JSONPresenter`,
/// the web API's clients).
protocol JSONLinePresenter: Presenter {
    /// False while nobody would read them (the API with no client).
    var wantsLines: Bool { get }
    /// Whether it shows `.answer` and `.chatLines`, what commands typed at
    /// the terminal or in `--json` answer (the `--json` lines do; the page's
    /// API answers its own commands).
    var takesAnswers: Bool { get }
    func present(lines: [String])
}

extension JSONLinePresenter {
    var takesAnswers: Bool { true }

    func present(_ events: [NodeEvent]) {
        guard wantsLines else { return }
        present(lines: (takesAnswers ? events : events.filter { !$0.isAnswer }).flatMap(JSONPresenter.lines))
    }
}

extension NodeEvent {
    /// What a command answers (`JSONLinePresenter.takesAnswers`).
    var isAnswer: Bool {
        switch self {
        case .answer, .chatLines: true
        default: false
        }
    }
}

/// A presenter that turns each event into lines on an `Output`.
protocol LinePresenter: Presenter {
    var out: Output { get }
    static func lines(_ event: NodeEvent) -> [String]
}

extension LinePresenter {
    func present(_ events: [NodeEvent]) {
        let lines = events.flatMap(Self.lines)
        guard !lines.isEmpty else { return }
        out.lines(lines)
    }
}
