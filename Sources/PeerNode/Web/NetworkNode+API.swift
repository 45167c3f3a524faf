import ChatText
import Crypto
import Gossip
import Store

/// A conversation an API command names, resolved once: a room, or the
/// other party of a direct conversation, and the room ids it is stored
/// under (a direct one has two: envelope versions 1 and 2).
struct APIConversation {
    let room: RoomName?
    let peer: PublicKey?
    let ids: [RoomID]
}

/// What the local API (`WebService`, docs/API.md) asks of the node beyond
/// the typed commands: each conversation named by the client (the page
/// keeps its own open room, so the terminal's is never changed by it).
/// On the loop, like everything in `NetworkNode`.
extension NetworkNode {
    /// The API's `rooms`: every named room (public and private) and every
    /// direct conversation with a message, with unread counts and the last
    /// message; the most recently active first, rooms without a message
    /// last by name. Blocked identities' conversations are left out.
    /// Direct conversations are looked for where it is cheap
    /// (`conversationPartners`), not by working out one with every author.
    func conversations() throws -> [ConversationRow] {
        var rows: [(order: (Int64, MessageID)?, row: ConversationRow)] = []
        for (id, name) in try node.store.namedRooms() {
            guard let room = node.storeFailures.read("a room's name", { try RoomName(name) }), let summary = try node.store.roomSummary(of: id, name: name, me: node.me) else { continue }
            rows.append((summary.last.map { ($0.causalTime, $0.envelope.id) },
                         ConversationRow(room: room, peer: nil, isPrivate: node.privateRooms[id] != nil, unread: summary.unread,
                                         last: summary.last.flatMap { shownMessage($0.envelope).map(asItIsNow) })))
        }
        for author in try conversationPartners() where !blocked.contains(author) {
            guard let c = node.conversations.conversation(with: author) else { continue }
            let summaries = try [c.room, c.roomVersion1].compactMap { try node.store.roomSummary(of: $0, name: nil, me: node.me) }
            guard let last = summaries.compactMap(\.last).max(by: { ($0.causalTime, $0.envelope.id) < ($1.causalTime, $1.envelope.id) }),
                  let message = shownMessage(last.envelope).map(asItIsNow) else { continue }
            rows.append(((last.causalTime, last.envelope.id),
                         ConversationRow(room: nil, peer: node.people[author], isPrivate: true,
                                         unread: summaries.reduce(0) { $0 + $1.unread }, last: message)))
        }
        return rows.sorted { a, b in
            switch (a.order, b.order) {
            case let (x?, y?): return x > y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return (a.row.room?.value ?? "") < (b.row.room?.value ?? "")
            }
        }.map(\.row)
    }

    /// Who we may have a direct conversation with, found without a key
    /// exchange per author (one is 0.24 ms; a LAN of 10,000 authors made the
    /// first `/rooms` hold the loop 2.4 s): the authors of the unnamed rooms
    /// our account wrote in (a message, or the delivered receipt every shown
    /// message is owed), the parties of the conversations mapped since
    /// the start (any direct message opened), and those of every
    /// conversation a message was shown in (`Store.rememberConversation`),
    /// which covers one whose only messages came in an earlier run and got
    /// no receipt.
    func conversationPartners() throws -> [PublicKey] {
        var partners: Set<PublicKey> = []
        let ours = try node.devices.devices(of: node.account).map(\.device)
        for room in try node.store.unnamedRooms(writtenBy: ours.isEmpty ? [node.me] : ours)
        where room != node.accountsRoom && node.following.rooms[room] == nil && node.privateRooms[room] == nil {
            if let peer = node.conversations.peer(in: room) {
                partners.insert(node.people.account(peer))
                continue
            }
            // Receipts count: a conversation where only we wrote has the other party's receipts.
            for author in try node.store.authors(in: room, receipts: true) { partners.insert(node.people.account(author)) }
        }
        for (room, peer) in node.conversations.peers where node.store.holds(room: room) { partners.insert(node.people.account(peer)) }
        // Conversations shown in an earlier run, where we may never have written.
        for peer in try node.store.rememberedConversationPeers() { partners.insert(node.people.account(peer)) }
        partners.remove(node.account)
        return partners.sorted()
    }

    /// The conversation `target` names: a room this node is in, or someone
    /// a direct message can be sealed to.
    func resolve(_ target: WebCommand.Target) throws -> APIConversation {
        switch target {
        case let .room(name):
            let id = node.roomID(name)
            guard node.roomName(id) != nil else { throw NodeError.notIn(name) }
            return APIConversation(room: name, peer: nil, ids: [id])
        case let .direct(who):
            let peer = try node.people.resolve(who)
            guard let c = node.conversations.conversation(with: peer) else { throw NodeError.notSealable(peer) }
            return APIConversation(room: nil, peer: peer, ids: [c.room, c.roomVersion1])
        }
    }

    /// The API's `files`: the conversation's standing offers, as `/files` lists them.
    func fileListing(of conversation: APIConversation) throws -> FileListing {
        guard let room = conversation.ids.first else { throw NodeError.badCommand("files needs a room or a conversation") }
        let account = conversation.peer.map(node.people.account)
        let place = account.map { "your conversation with " + session.plainLabel($0) } ?? conversation.room?.value ?? ""
        return try node.files.listing(of: room, place: place, name: conversation.room, with: account, people: node.people)
    }

    /// The API's `read`: everything delivered in the conversation so far is
    /// read (its unread count drops to 0) and, with read receipts on, its
    /// authors are owed a read receipt up to their latest message there.
    func markRead(_ conversation: APIConversation) throws {
        for id in conversation.ids {
            try node.store.markRead(id)
            receipts.read(try node.store.latestSequences(in: id, me: node.me), in: id)
        }
    }

    /// The API's `join`: the room is joined (listed, readable) but the
    /// terminal's open room stays; the warning when it looks like another.
    func joinRoom(_ name: RoomName) throws -> String? {
        let warning = session.lookAlikeWarning(name)
        _ = try node.join(name)
        return warning
    }

    /// A page of a conversation's history for the API: the messages before
    /// `cursor` (the newest when nil), oldest first, and where the page
    /// before starts (nil at its beginning). Reading it changes no read mark.
    func historyPage(of conversation: APIConversation, limit: Int, before cursor: HistoryCursor?) throws -> (events: [NodeEvent], next: HistoryCursor?) {
        var entries: [StoredEnvelope] = []
        for id in conversation.ids { entries += try node.store.history(of: id, limit: limit, before: cursor) }
        entries.sort { ($0.causalTime, $0.envelope.id) < ($1.causalTime, $1.envelope.id) }
        entries = Array(entries.suffix(limit))
        let events = entries.compactMap { entry -> NodeEvent? in
            guard let shown = shownMessage(entry.envelope, messagesOnly: false), shown.opened.kind != .receipt else { return nil }
            node.observe(shown.envelope, shown.opened)
            var now = asItIsNow(shown)
            if now.opened.isMessage { now.number = node.storeFailures.read("a message's number") { try node.store.number(of: entry) } }
            if now.opened.isMessage, entry.envelope.author == node.me { now.reached = receipts.reached(entry.envelope.sequence, in: entry.envelope.room) }
            return .message(now)
        }
        return (events, entries.count == limit ? entries.first.map(HistoryCursor.init(before:)) : nil)
    }

    /// `/history N` for a script (`--json`): the open room's or direct
    /// conversation's last N messages (nick lines and joins are not
    /// messages), as they read now, with their numbers. They count as
    /// read, as the lines a person is shown do.
    func historyAnswer(_ count: Int) throws -> ScriptAnswer {
        let peer = session.conversationPeer
        let conversation: APIConversation
        if let peer {
            guard let c = node.conversations.conversation(with: peer) else { throw NodeError.notSealable(peer) }
            conversation = APIConversation(room: nil, peer: peer, ids: [c.room, c.roomVersion1])
        } else {
            conversation = APIConversation(room: session.room, peer: nil, ids: [node.roomID(session.room)])
        }
        // Receipts, edits and reactions are in a page too: read more until N messages are in it.
        var limit = count
        var messages: [ShownMessage] = []
        while true {
            let (events, before) = try historyPage(of: conversation, limit: limit, before: nil)
            messages = events.compactMap { if case let .message(m) = $0, m.opened.isMessage { m } else { nil } }
            guard messages.count < count, before != nil, limit < ChatSession.historyScanLimit else { break }
            limit = min(limit * 4, ChatSession.historyScanLimit)
        }
        try markRead(conversation)
        return .history(room: peer == nil ? session.room : nil, with: peer.map { node.people.account($0) }, Array(messages.suffix(count)))
    }

    /// The API's `search`: what `/search` finds (rooms and conversations
    /// this node can read), newest first, as messages.
    func found(_ query: String) throws -> [ShownMessage] {
        try node.searchIndex.search(query, limit: ChatSession.searchLimit).compactMap(foundMessage)
    }

    /// The API's `mentions`: what `/mentions` lists, newest first, as messages.
    func foundMentions() throws -> [ShownMessage] {
        try node.searchIndex.mentions(of: node.nick ?? "", me: node.me, limit: ChatSession.searchLimit).compactMap(foundMessage)
    }

    /// A match of a search, as it reads now, with its number.
    private func foundMessage(_ entry: StoredEnvelope) -> ShownMessage? {
        guard var shown = shownMessage(entry.envelope).map(asItIsNow) else { return nil }
        shown.number = node.storeFailures.read("a message's number") { try node.store.number(of: entry) }
        return shown
    }

    /// A message read back from the store as it reads now: its latest
    /// edit's text, marked edited, with the reactions standing on it.
    func asItIsNow(_ shown: ShownMessage) -> ShownMessage {
        guard shown.opened.isMessage, let (opened, edited) = node.messageLife.openedNow(shown.envelope) else { return shown }
        var now = edited ? ShownMessage(envelope: shown.envelope, opened: opened, room: shown.room, to: shown.to, me: node.me, book: node.people) : shown
        now.quote(shown.quote, book: node.people)
        now.edited = edited
        now.reactions = node.reactions.standing(on: shown.envelope).map { ($0.reaction, $0.by.count) }
        now.fileHeld = opened.offer.map { node.files.holdsWhole($0.root) } ?? false
        return now
    }

    /// A stored envelope as the API shows it: in its room, or as a direct
    /// message of ours; nil when this node cannot read it, a blocked
    /// identity wrote it, or (with `messagesOnly`) it is not a text or action.
    func shownMessage(_ e: Envelope, messagesOnly: Bool = true) -> ShownMessage? {
        guard !blocked.contains(e.author), let opened = node.open(e), opened.isMessage || !messagesOnly else { return nil }
        var shown: ShownMessage
        if let name = node.roomName(e.room) {
            shown = ShownMessage(envelope: e, opened: opened, room: name, to: nil, me: node.me, book: node.people)
        } else {
            guard let peer = opened.peer else { return nil }
            shown = ShownMessage(envelope: e, opened: opened, room: nil, to: node.people.account(e.author) == node.account ? peer : node.account, me: node.me, book: node.people)
        }
        shown.quote(node.reactions.quote(of: e, opened), book: node.people)
        return shown
    }

    /// A command from the web API (`WebService`): what a typed line does,
    /// with its events returned to the one client that asked instead of
    /// shown to every presenter. Quitting is not the API's to do.
    func run(_ input: ChatInput) -> (events: [NodeEvent], failure: String?) {
        if case .quit = input { return ([], "the API cannot stop the node") }
        defer { flushOwn() }
        do {
            return (try handle(input, line: "").events, nil)
        } catch {
            return ([], "\(error)")
        }
    }
}
