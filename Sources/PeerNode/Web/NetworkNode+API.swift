import Crypto
import Gossip
import Store

/// What the local API (`WebService`, docs/API.md) asks of the node beyond
/// the typed commands: each conversation named by the client (the page
/// keeps its own open room, so the terminal's is never changed by it).
/// On the loop, like everything in `NetworkNode`.
extension NetworkNode {
    /// The API's `rooms`: every named room (public and private) and every
    /// direct conversation with a message, with unread counts and the last
    /// message; the most recently active first, rooms without a message
    /// last by name. Blocked identities' conversations are left out.
    func conversations() throws -> [ConversationRow] {
        var rows: [(order: (Int64, MessageID)?, row: ConversationRow)] = []
        func shown(_ last: StoredEnvelope?, room: RoomName?, to: PublicKey?) -> ShownMessage? {
            guard let last, !blocked.contains(last.envelope.author), let opened = node.open(last.envelope), opened.isMessage else { return nil }
            return ShownMessage(envelope: last.envelope, opened: opened, room: room, to: to, me: node.me, book: node.people)
        }
        for (id, name) in try node.store.namedRooms() {
            guard let room = try? RoomName(name), let summary = try node.store.roomSummary(of: id, name: name, me: node.me) else { continue }
            rows.append((summary.last.map { ($0.causalTime, $0.envelope.id) },
                         ConversationRow(room: room, peer: nil, isPrivate: node.privateRooms[id] != nil, unread: summary.unread,
                                         last: shown(summary.last, room: room, to: nil))))
        }
        for author in try node.store.vectorClock().entries.keys where author != node.me && !blocked.contains(author) {
            guard let c = node.conversation(with: author) else { continue }
            let summaries = try [c.room, c.roomVersion1].compactMap { try node.store.roomSummary(of: $0, name: nil, me: node.me) }
            let last = summaries.compactMap(\.last).max { ($0.causalTime, $0.envelope.id) < ($1.causalTime, $1.envelope.id) }
            guard let message = shown(last, room: nil, to: author == last?.envelope.author ? node.me : author) else { continue }
            rows.append((last.map { ($0.causalTime, $0.envelope.id) },
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

    /// The room ids a conversation is stored under (a direct one has two:
    /// envelope versions 1 and 2).
    func roomIDs(of target: WebCommand.Target) throws -> [RoomID] {
        switch target {
        case let .room(name):
            let id = node.roomID(name)
            guard node.roomName(id) != nil else { throw NodeError.notIn(name) }
            return [id]
        case let .direct(who):
            let peer = try node.resolve(who)
            guard let c = node.conversation(with: peer) else { throw NodeError.notSealable(peer) }
            return [c.room, c.roomVersion1]
        }
    }

    /// The API's `read`: everything delivered in the conversation so far is
    /// read (its unread count drops to 0) and, with read receipts on, its
    /// authors are owed a read receipt up to their latest message there.
    func markRead(_ target: WebCommand.Target) throws {
        for id in try roomIDs(of: target) {
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
    func historyPage(of target: WebCommand.Target, limit: Int, before cursor: HistoryCursor?) throws -> (events: [NodeEvent], next: HistoryCursor?) {
        var room: RoomName?, peer: PublicKey?
        switch target {
        case let .room(name): room = name
        case let .direct(who): peer = try node.resolve(who)
        }
        var entries: [StoredEnvelope] = []
        for id in try roomIDs(of: target) { entries += try node.store.history(of: id, limit: limit, before: cursor) }
        entries.sort { ($0.causalTime, $0.envelope.id) < ($1.causalTime, $1.envelope.id) }
        entries = Array(entries.suffix(limit))
        var events: [NodeEvent] = []
        for entry in entries {
            let e = entry.envelope
            guard let opened = node.open(e), opened.kind != .receipt, !blocked.contains(e.author) else { continue }
            node.observe(e, opened)
            let to = peer.map { e.author == node.me ? $0 : node.me }
            events.append(.message(ShownMessage(envelope: e, opened: opened, room: room, to: to, me: node.me, book: node.people)))
        }
        return (events, entries.count == limit ? entries.first.map(HistoryCursor.init(before:)) : nil)
    }

    /// The API's `search`: what `/search` finds (rooms and conversations
    /// this node can read), newest first, as messages.
    func found(_ query: String) throws -> [ShownMessage] {
        shown(try node.search(query, limit: ChatSession.searchLimit))
    }

    /// The API's `mentions`: what `/mentions` lists, newest first, as messages.
    func foundMentions() throws -> [ShownMessage] {
        shown(try node.mentions(limit: ChatSession.searchLimit))
    }

    /// Stored messages as the API shows them (in a room, or direct), blocked
    /// identities' and what this node cannot read left out.
    private func shown(_ found: [StoredEnvelope]) -> [ShownMessage] {
        found.compactMap { stored in
            let e = stored.envelope
            guard !blocked.contains(e.author), let opened = node.open(e), opened.isMessage else { return nil }
            if let name = node.roomName(e.room) {
                return ShownMessage(envelope: e, opened: opened, room: name, to: nil, me: node.me, book: node.people)
            }
            guard let peer = opened.peer else { return nil }
            return ShownMessage(envelope: e, opened: opened, room: nil, to: e.author == node.me ? peer : node.me, me: node.me, book: node.people)
        }
    }
}
