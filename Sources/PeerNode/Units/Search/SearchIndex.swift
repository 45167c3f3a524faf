import ChatText
import Crypto
import Gossip
import Store

/// `/search` and `/mentions` (SQLite FTS5): what this node can read is
/// indexed as it is delivered, a little each tick, and all at once when
/// someone searches; a room left leaves the index and a room joined is
/// indexed anew. What is indexed of a message is its text now
/// (`MessageLife.indexedText`), so an edit replaces it and an erasure takes it out.
///
/// Owns nothing but its limits: the index is in the store. Given the store
/// (`SearchRepository`) and message life. Confined to the node's loop.
final class SearchIndex {
    /// Most messages indexed on one tick: small, because the tick runs on
    /// the link loop (a long history is indexed over many seconds, or all
    /// at once when someone searches).
    static let perTick = 500
    /// Most envelope bytes indexed in one go: the envelopes read back, their
    /// texts and SQLite's full-text terms all sit in memory until the
    /// transaction ends. 500 messages of 60 KB (a burst that just passed)
    /// took the node from 42 to 133 MB at once; counted in bytes too, a
    /// batch stays near this.
    static let batchBytes = 256 << 10
    /// Most messages indexed in one go when a search needs the index complete.
    static let batch = 10_000
    /// Envelopes read back from the store at a time while indexing.
    static let page = 64
    /// How many index matches `/mentions` looks at for each it shows: the
    /// index also finds our own messages and `bob x` for `bob-x`, which the
    /// rule then leaves out.
    static let mentionCandidates = 4

    private let repository: SearchRepository
    private let messages: MessageLife

    init(repository: SearchRepository, messages: MessageLife) {
        self.repository = repository
        self.messages = messages
    }

    /// Adds what was delivered since the last call to the index (texts,
    /// actions and direct messages this node can read), up to `limit`
    /// envelopes or `batchBytes` of them (at least one). Returns how many
    /// envelopes it looked at: 0 once the index is complete.
    @discardableResult
    func indexNew(limit: Int = SearchIndex.perTick) throws(RepositoryError) -> Int {
        var through = try repository.indexedThrough()
        var texts: [(author: PublicKey, sequence: UInt64, text: String)] = []
        var count = 0, bytes = 0
        reading: while count < limit, bytes < Self.batchBytes {
            let page = try repository.delivered(after: through, limit: min(Self.page, limit - count))
            guard !page.isEmpty else { break }
            for stored in page {
                let e = stored.envelope
                count += 1
                bytes += e.encoded.count
                through = stored.delivery
                if let text = messages.indexedText(of: e) { texts.append((e.author, e.sequence, text)) }
                if bytes >= Self.batchBytes { break reading }
            }
        }
        guard count > 0 else { return 0 }
        try repository.index(texts, through: through)
        return count
    }

    /// Matching messages this node can read, most recent first.
    func search(_ query: String, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        while try indexNew(limit: Self.batch) > 0 {}
        // A blocked identity's messages stay hidden here too.
        let blocked = try repository.blocked()
        // A match in an edit is its message, listed once.
        var seen = Set<MessageID>()
        return try repository.search(query, limit: limit).compactMap(messages.matchedMessage).filter {
            !blocked.contains($0.envelope.author) && seen.insert($0.envelope.id).inserted
        }
    }

    /// Messages (newest first, at most `limit`) from others than `me` that
    /// name `nick` as a word (`Mentions`): the index finds the word, the
    /// rule keeps what names it whole.
    func mentions(of nick: String, me: PublicKey, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        guard !nick.isEmpty else { return [] }
        return try search(nick, limit: limit * Self.mentionCandidates).filter { stored in
            stored.envelope.author != me && messages.openedNow(stored.envelope).map { $0.opened.isMessage && Mentions.names(nick, in: $0.opened.text.unsanitized) } == true
        }.prefix(limit).map { $0 }
    }

    /// Takes a room's texts out of the index while its key is still known:
    /// the index must be told a text to forget it, and a message erased
    /// after we left could not be opened then. Joining again indexes the
    /// room anew (`indexJoined`).
    func unindexLeft(_ room: RoomID) throws(RepositoryError) {
        try eachTextPage({ after throws(RepositoryError) in try repository.indexed(in: room, after: after, limit: Self.page) },
                         { rows throws(RepositoryError) in try repository.unindex(rows: rows) })
    }

    /// Indexes what a room held before this node could read it (the index
    /// passed it by then), a page at a time.
    func indexJoined(_ room: RoomID) throws(RepositoryError) {
        try eachTextPage({ after throws(RepositoryError) in try repository.unindexed(in: room, after: after, limit: Self.page) },
                         { rows throws(RepositoryError) in try repository.index(rows: rows) })
    }

    /// Hands `apply` the indexed texts of the envelopes `page` gives out, a
    /// page at a time, by row after the last one.
    private func eachTextPage(_ page: (Int64) throws(RepositoryError) -> [(rowid: Int64, envelope: Envelope)],
                              _ apply: ([(rowid: Int64, text: String)]) throws(RepositoryError) -> Void) throws(RepositoryError) {
        var after: Int64 = 0
        while true {
            let rows = try page(after)
            guard let last = rows.last else { return }
            after = last.rowid
            try apply(rows.compactMap { row in messages.indexedText(of: row.envelope).map { (row.rowid, $0) } })
        }
    }
}
