import Crypto
import Gossip

/// Reactions (docs/PROTOCOL.md §5, "Edits, reactions and replies"): each
/// reaction envelope gives a reaction, or takes it back when its reactor
/// had given it; the table keeps, per message, reactor and reaction, how
/// many times it was given.
extension Store {
    /// What applying a reaction envelope did.
    public enum ReactionOutcome: Equatable, Sendable {
        /// It stands now (`true`) or was taken back (`false`).
        case applied(on: Bool)
        /// The reactor has `Reaction.maximumPerPersonAndMessage` other
        /// reactions to this message already: refused.
        case tooMany
        /// This envelope (or a later one of the reactor) was applied already.
        case alreadyApplied
    }

    /// Applies `reactor`'s envelope `sequence`, which gives or takes back
    /// `reaction` on the message `target`. A reactor's envelopes are
    /// delivered in sequence order, so one at or below the last applied is
    /// a repeat. At most `Reaction.maximumPerPersonAndMessage` different
    /// reactions per reactor and message are kept.
    public func recordReaction(target: MessageRef, reactor: PublicKey, reaction: String, sequence: UInt64) throws -> ReactionOutcome {
        let targetRow = try authorRow(target.author).rowid, reactorRow = try authorRow(reactor).rowid
        return try writeTransaction {
            let existing = try db.statement(
                """
                SELECT toggles, sequence FROM reactions
                WHERE target_author = ?1 AND target_sequence = ?2 AND reactor = ?3 AND reaction = ?4
                """).bind(1, targetRow).bind(2, Int64(clamping: target.sequence)).bind(3, reactorRow).bind(4, reaction)
                .single { ($0.int64(0), UInt64(clamping: $0.int64(1))) }
            if let (toggles, last) = existing {
                guard sequence > last else { return .alreadyApplied }
                try db.statement(
                    """
                    UPDATE reactions SET toggles = ?5, sequence = ?6
                    WHERE target_author = ?1 AND target_sequence = ?2 AND reactor = ?3 AND reaction = ?4
                    """).bind(1, targetRow).bind(2, Int64(clamping: target.sequence)).bind(3, reactorRow).bind(4, reaction)
                    .bind(5, toggles + 1).bind(6, Int64(clamping: sequence)).run()
                return .applied(on: (toggles + 1) % 2 == 1)
            }
            let kinds = try db.statement(
                "SELECT count(*) FROM reactions WHERE target_author = ?1 AND target_sequence = ?2 AND reactor = ?3")
                .bind(1, targetRow).bind(2, Int64(clamping: target.sequence)).bind(3, reactorRow).single { $0.int64(0) } ?? 0
            guard kinds < Reaction.maximumPerPersonAndMessage else { return .tooMany }
            try db.statement(
                """
                INSERT INTO reactions(target_author, target_sequence, reactor, reaction, toggles, sequence)
                VALUES (?1, ?2, ?3, ?4, 1, ?5)
                """).bind(1, targetRow).bind(2, Int64(clamping: target.sequence)).bind(3, reactorRow).bind(4, reaction)
                .bind(5, Int64(clamping: sequence)).run()
            return .applied(on: true)
        }
    }

    /// The reactions standing on `author`'s message `sequence`: each
    /// reaction with who gave it, the most given first (then in byte order).
    public func reactions(to author: PublicKey, sequence: UInt64) throws -> [(reaction: String, by: [PublicKey])] {
        guard let row = authors[author]?.rowid else { return [] }
        let s = try db.statement(
            """
            SELECT r.reaction, a.key FROM reactions r JOIN authors a ON a.rowid = r.reactor
            WHERE r.target_author = ?1 AND r.target_sequence = ?2 AND r.toggles % 2 = 1
            ORDER BY r.reaction, a.key
            """).bind(1, row).bind(2, Int64(clamping: sequence))
        var by: [String: [PublicKey]] = [:]
        var order: [String] = []
        while try s.step() {
            let reaction = s.text(0) ?? ""
            if by[reaction] == nil { order.append(reaction) }
            by[reaction, default: []].append(try PublicKey(bytes: s.blob(1)))
        }
        return order.map { (reaction: $0, by: by[$0] ?? []) }.sorted { $0.by.count > $1.by.count }
    }

    /// Whether `reactor`'s `reaction` stands on the message `target` (the next one takes it back).
    public func reactionStands(on target: MessageRef, by reactor: PublicKey, reaction: String) throws -> Bool {
        guard let targetRow = authors[target.author]?.rowid, let reactorRow = authors[reactor]?.rowid else { return false }
        return try db.statement(
            """
            SELECT toggles % 2 FROM reactions
            WHERE target_author = ?1 AND target_sequence = ?2 AND reactor = ?3 AND reaction = ?4
            """).bind(1, targetRow).bind(2, Int64(clamping: target.sequence)).bind(3, reactorRow).bind(4, reaction)
            .single { $0.int64(0) == 1 } ?? false
    }

    /// Delivered envelopes of `room` filed under `kinds`, after delivery
    /// number `after`, in delivery order: the edits and reactions a node
    /// applies when it joins a room it could not read before.
    public func delivered(in room: RoomID, kinds: [Kind], after delivery: Int64, limit: Int) throws -> [StoredEnvelope] {
        guard let row = roomRows[room], limit > 0, !kinds.isEmpty else { return [] }
        let s = try db.statement(
            """
            SELECT bytes, causal_time, delivery FROM envelopes
            WHERE room = ?1 AND delivery > ?2 AND kind IN (\(kinds.map { String($0.rawValue) }.joined(separator: ", ")))
            ORDER BY delivery LIMIT ?3
            """).bind(1, row).bind(2, delivery).bind(3, limit)
        var out: [StoredEnvelope] = []
        while try s.step() { out.append(try stored(s)) }
        return out
    }
}
