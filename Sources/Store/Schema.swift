import CSQLite
import Gossip

/// The database layout and its migrations. `PRAGMA user_version` is the
/// schema version; `PRAGMA application_id` marks the file as peernode's.
enum Schema {
    /// "pnod": set on every database this program creates.
    static let applicationID: Int64 = 0x706e_6f64

    /// Migration N (index N-1) takes the schema from version N-1 to N.
    static let migrations: [String] = [
        """
        CREATE TABLE authors(
            rowid INTEGER PRIMARY KEY,
            key BLOB NOT NULL UNIQUE,
            contiguous INTEGER NOT NULL DEFAULT 0,  -- highest sequence with none missing below
            delivered INTEGER NOT NULL DEFAULT 0    -- highest sequence shown (causally ready)
        );
        CREATE TABLE rooms(
            rowid INTEGER PRIMARY KEY,
            room_id BLOB NOT NULL UNIQUE,
            name TEXT,                               -- known for public rooms this node joined
            read_delivery INTEGER NOT NULL DEFAULT 0 -- delivery number read up to
        );
        CREATE TABLE envelopes(
            rowid INTEGER PRIMARY KEY,
            author INTEGER NOT NULL REFERENCES authors(rowid),
            sequence INTEGER NOT NULL,
            id BLOB NOT NULL,
            room INTEGER NOT NULL REFERENCES rooms(rowid),
            kind INTEGER NOT NULL,
            timestamp INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            causal_time INTEGER,                     -- NULL until delivered
            delivery INTEGER,                        -- order of delivery on this node
            bytes BLOB NOT NULL,
            UNIQUE(author, sequence)
        );
        CREATE INDEX envelopes_by_room_order ON envelopes(room, causal_time, id) WHERE causal_time IS NOT NULL;
        CREATE INDEX envelopes_by_room_delivery ON envelopes(room, delivery) WHERE delivery IS NOT NULL;
        CREATE TABLE forks(
            rowid INTEGER PRIMARY KEY,
            author INTEGER NOT NULL REFERENCES authors(rowid),
            sequence INTEGER NOT NULL,
            kept_id BLOB NOT NULL,
            fork_id BLOB NOT NULL UNIQUE,
            reason TEXT NOT NULL,
            detected_at INTEGER NOT NULL,
            bytes BLOB NOT NULL
        );
        CREATE TABLE sent_clock(
            author INTEGER PRIMARY KEY REFERENCES authors(rowid),
            sequence INTEGER NOT NULL               -- highest named as a dependency by our own posts
        );
        CREATE TABLE settings(key TEXT PRIMARY KEY, value BLOB);
        """,
        // 2: identities this node refuses links from and hides messages of.
        """
        CREATE TABLE blocked(key BLOB PRIMARY KEY, since INTEGER NOT NULL);
        """,
        // 3: per peer, the last clock each side declared to the other (a hint
        // that makes a reconnect cost what changed; see PROTOCOL.md §11).
        """
        CREATE TABLE peer_clocks(
            peer BLOB PRIMARY KEY,
            sent BLOB NOT NULL,                      -- n × (author 32 ‖ sequence 8, big-endian)
            declared BLOB,                           -- same layout; NULL when unknown
            updated_at INTEGER NOT NULL
        );
        """,
        // 4: full-text search over what this node can read (`/search`). Contentless:
        // only the rowids of envelopes are kept, the text is never stored in clear.
        """
        CREATE VIRTUAL TABLE message_text USING fts5(text, content='', tokenize='unicode61 remove_diacritics 2');
        """,
        // 5: deliveries in order across rooms (what to show next, the last delivery
        // number), and nick messages by author: both were full scans, on the live
        // path and at start-up, which grew with the store.
        """
        CREATE INDEX IF NOT EXISTS envelopes_by_delivery ON envelopes(delivery) WHERE delivery IS NOT NULL;
        CREATE INDEX IF NOT EXISTS envelopes_nicks ON envelopes(author, sequence) WHERE kind = \(Kind.nick.rawValue) AND causal_time IS NOT NULL;
        """,
        // 6: identities the user has verified (`/trust`), shown with a mark.
        """
        CREATE TABLE trusted(key BLOB PRIMARY KEY, since INTEGER NOT NULL);
        """,
        // 7: private rooms: a random id and key, handed to members in an invite.
        // The key is a secret: the database file is 0600 in a 0700 directory.
        """
        CREATE TABLE private_rooms(room_id BLOB PRIMARY KEY, name TEXT NOT NULL, key BLOB NOT NULL);
        """,
        // 8: invites waiting for the user's /accept or /decline (nothing changes
        // a user's rooms without the user). Keyed by room: a second invite to the
        // same room replaces the first.
        """
        CREATE TABLE pending_invites(
            room_id BLOB PRIMARY KEY,
            name TEXT NOT NULL,
            key BLOB NOT NULL,
            inviter BLOB NOT NULL,
            received_at INTEGER NOT NULL
        );
        """,
        // 9: per-peer clocks as rows, one per (peer, side, author), so a save
        // writes only the entries that changed (a blob was rewritten whole:
        // 36 MB per clock message under attack, issue 13 finding 4). The old
        // blobs are dropped, not converted: they are only a hint, and a peer
        // without one costs one full clock exchange.
        """
        DROP TABLE peer_clocks;
        CREATE TABLE peer_clocks(
            peer BLOB PRIMARY KEY,
            declared_known INTEGER NOT NULL,         -- 0: the peer's clock could not be rebuilt
            updated_at INTEGER NOT NULL
        );
        CREATE TABLE peer_clock_entries(
            peer BLOB NOT NULL,
            side INTEGER NOT NULL,                   -- 0: we declared it to the peer; 1: the peer declared it
            author BLOB NOT NULL,
            sequence INTEGER NOT NULL,               -- the 64 bits as a signed integer
            PRIMARY KEY(peer, side, author)
        ) WITHOUT ROWID;
        """,
        // 10: envelopes whose kind this node could not open (version 2 seals
        // it: kind 0 in the row), by room, so joining a room or accepting an
        // invite files that room's history under its kinds at once.
        """
        CREATE INDEX IF NOT EXISTS envelopes_sealed ON envelopes(room) WHERE kind = 0;
        """,
        // 11: deletion and edits (envelope version 3, docs/PROTOCOL.md §4). Which
        // envelopes an author's later one erased (so one that arrives afterwards
        // is stored without its body), and which envelopes edit which message.
        """
        CREATE TABLE erasures(
            author INTEGER NOT NULL REFERENCES authors(rowid),
            sequence INTEGER NOT NULL,               -- the erased envelope
            erased_by INTEGER NOT NULL,              -- the author's envelope that erased it
            PRIMARY KEY(author, sequence)
        ) WITHOUT ROWID;
        CREATE TABLE edits(
            author INTEGER NOT NULL REFERENCES authors(rowid),
            original INTEGER NOT NULL,               -- sequence of the message edited
            edit INTEGER NOT NULL,                   -- sequence of the edit
            PRIMARY KEY(author, original, edit)
        ) WITHOUT ROWID;
        """,
        // 12: reactions (docs/PROTOCOL.md §5): per message, per reactor, per
        // reaction, how many times it was given (odd: it stands) and the
        // reactor's envelope that last gave or took it back. And envelopes
        // by the first 8 bytes of their id, for the API, which names a
        // message by its id (8 bytes keep the index small; the whole id is
        // compared after).
        """
        CREATE INDEX envelopes_by_id ON envelopes(substr(id, 1, 8));
        CREATE TABLE reactions(
            target_author INTEGER NOT NULL REFERENCES authors(rowid),
            target_sequence INTEGER NOT NULL,
            reactor INTEGER NOT NULL REFERENCES authors(rowid),
            reaction TEXT NOT NULL,
            toggles INTEGER NOT NULL,                -- odd: shown
            sequence INTEGER NOT NULL,               -- the reactor's last envelope applied
            PRIMARY KEY(target_author, target_sequence, reactor, reaction)
        ) WITHOUT ROWID;
        """,
        // 13: devices of accounts (docs/PROTOCOL.md §15): each device whose
        // claim was delivered, the account it belongs to, its name, when the
        // account certified it and the claim's sequence in the device's chain.
        """
        CREATE TABLE devices(
            device BLOB PRIMARY KEY,
            account BLOB NOT NULL,
            name TEXT NOT NULL,
            issued INTEGER NOT NULL,
            claim INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX devices_by_account ON devices(account);
        """,
        // 14: revocations of devices (docs/PROTOCOL.md §15, "Revoking a
        // device"): which device, by which device's envelope, and the last
        // of its sequences still accepted.
        """
        CREATE TABLE revocations(
            device BLOB NOT NULL,
            by BLOB NOT NULL,
            by_sequence INTEGER NOT NULL,
            last INTEGER NOT NULL,
            PRIMARY KEY(device, by, by_sequence)
        ) WITHOUT ROWID;
        """,
        // 15: accounts' conversation keys (docs/PROTOCOL.md §15): each epoch's
        // X25519 public key, its secret when the account is ours, and the
        // device claim that announced it (NULL until one was delivered).
        """
        CREATE TABLE conversation_keys(
            account BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            public BLOB NOT NULL,
            secret BLOB,
            claim_device BLOB,
            claim_sequence INTEGER,
            PRIMARY KEY(account, epoch)
        ) WITHOUT ROWID;
        """,
        // 16: private rooms' key epochs (docs/PROTOCOL.md §14, "Membership
        // and key epochs"): each key this node holds, by the membership
        // event that made it (the create's id for the room's first key).
        """
        CREATE TABLE room_keys(
            room BLOB NOT NULL,
            event BLOB NOT NULL,
            epoch INTEGER NOT NULL,
            key BLOB NOT NULL,
            PRIMARY KEY(room, event)
        ) WITHOUT ROWID;
        """,
        // 17: a message's number in its room (`/history`'s "(N)", for /edit N
        // and the rest), kept in its row: the next number of the room is given
        // as a text, action or reply is delivered, so receipts, edits and
        // reactions no longer take numbers, and an erasure changes none.
        // Rows delivered before keep the number they had (their place among
        // everything delivered in the room); other kinds lose theirs.
        """
        ALTER TABLE envelopes ADD COLUMN number INTEGER;
        UPDATE envelopes SET number = r.n FROM (
            SELECT rowid AS id, row_number() OVER (PARTITION BY room ORDER BY delivery) AS n
            FROM envelopes WHERE delivery IS NOT NULL
        ) AS r WHERE envelopes.rowid = r.id;
        UPDATE envelopes SET number = NULL WHERE kind NOT IN (\(Store.numberedKindList));
        CREATE INDEX envelopes_by_room_number ON envelopes(room, number) WHERE number IS NOT NULL;
        """,
        // 18: a direct conversation's other party, kept once one of its
        // messages was shown (`Store.rememberConversation`): `/rooms` lists
        // it after a restart even when our account never wrote there.
        """
        ALTER TABLE rooms ADD COLUMN peer BLOB;
        """,
        // 19: for a private room whose id commits to no founder (made before
        // ids did), the create this node took as its founding one, pinned
        // on first sight or from the invite (docs/PROTOCOL.md §14, "Who
        // founded the room"); a later create, whatever its id, changes nothing.
        """
        CREATE TABLE room_founding(room BLOB PRIMARY KEY, event BLOB NOT NULL) WITHOUT ROWID;
        """,
        // 20: a revocation names the revoked device's last accepted
        // envelope (docs/PROTOCOL.md §15, "Revoking a device"), so a fork
        // at or below the limit is refused; NULL for the 40-byte form.
        """
        ALTER TABLE revocations ADD COLUMN last_id BLOB;
        """,
        // 21: files held (docs/PROTOCOL.md §16): each by its tree's root, with
        // which of its sealed chunks are on disk (one bit each), how it came
        // (1 sent here, 2 fetched, 3 fetched by a relay to serve), the offer
        // it came with where known (so a delete of the offer erases its
        // chunks), and the folder a /get under way saves it to (it goes on
        // after a restart).
        """
        CREATE TABLE files(
            root BLOB PRIMARY KEY,
            size INTEGER NOT NULL,
            held BLOB NOT NULL,
            held_count INTEGER NOT NULL,
            origin INTEGER NOT NULL,
            author BLOB,
            sequence INTEGER,
            added INTEGER NOT NULL,
            folder TEXT
        ) WITHOUT ROWID;
        CREATE INDEX files_offer ON files(author, sequence);
        """,
        // 22: where the last `/get` of a file saved it (a path), so `/files`
        // says where a fetched file went, after a restart too. NULL: never saved
        // here (ours, a relay's, or fetched before this column).
        """
        ALTER TABLE files ADD COLUMN saved TEXT;
        """,
        // 23: the file offers of each room by number, for `/files` and `/get`
        // alone, which read a room's last 10,000 envelopes and opened each
        // (80 ms on the loop in a busy room) and missed any offer older. Only
        // offers enter it: a row a message costs nothing.
        """
        CREATE INDEX envelopes_files ON envelopes(room, number) WHERE kind = \(Kind.file.rawValue) AND number IS NOT NULL;
        """,
        // 24: the offers a relay's asks named for a file besides the one its row
        // names (`Store.bindFile`): a tombstone erasing any of them erases the
        // file, so the author's delete erases it even when another member named
        // an offer of their own for it first.
        """
        CREATE TABLE file_bindings(
            root BLOB NOT NULL,
            author BLOB NOT NULL,
            sequence INTEGER NOT NULL,
            PRIMARY KEY(root, author, sequence)
        ) WITHOUT ROWID;
        CREATE INDEX file_bindings_offer ON file_bindings(author, sequence);
        """,
    ]

    /// The first schema that wrote with `secure_delete` on: an older file
    /// may hold stale copies of deleted bytes in free pages and free space
    /// within pages, so it is rebuilt (VACUUM) once when it migrates.
    static let secureDeleteVersion = 11

    static var currentVersion: Int { migrations.count }

    /// Checks the file is ours (or empty), then migrates it to `currentVersion`.
    /// Reads first: SQLite reports a file that is not a database on the first
    /// read, before anything could be written to it.
    static func prepare(_ db: Connection, path: String) throws(StoreError) {
        let applicationID: Int64
        let version: Int
        let tables: Int64
        do {
            applicationID = try db.integer("PRAGMA application_id")
            version = Int(try db.integer("PRAGMA user_version"))
            tables = try db.integer("SELECT count(*) FROM sqlite_schema")
        } catch {
            if error.code & 0xff == SQLITE_NOTADB { throw .notAPeernodeDatabase(path: path) }
            if error.code & 0xff == SQLITE_CORRUPT { throw .damagedDatabase(path: path) }
            throw .sqlite(error)
        }
        let isFresh = applicationID == 0 && version == 0 && tables == 0
        guard isFresh || applicationID == Self.applicationID else { throw .notAPeernodeDatabase(path: path) }
        guard version <= currentVersion else {
            throw .newerSchema(path: path, found: version, supported: currentVersion)
        }

        do {
            // journal_mode answers with the mode it is in: checked, not assumed.
            let mode = try db.text("PRAGMA journal_mode=WAL") ?? "unknown"
            guard mode.lowercased() == "wal" else { throw StoreError.walUnavailable(path: path, mode: mode) }
            // secure_delete: what is deleted or overwritten (an erased body, full-text
            // segments merged away) is zeroed in the file, not left in free space.
            try db.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384; PRAGMA secure_delete=ON")
            for target in (version + 1)...max(version + 1, currentVersion) where target <= currentVersion {
                try db.transaction {
                    try db.execute(migrations[target - 1])
                    try db.execute("PRAGMA user_version=\(target)")
                    if target == 1 { try db.execute("PRAGMA application_id=\(Self.applicationID)") }
                }
            }
            if !isFresh, version < secureDeleteVersion {
                try db.execute("VACUUM")
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch let e as StoreError {
            throw e
        } catch let e as SQLiteError {
            throw .sqlite(e)
        } catch {
            throw .corruptRow("\(error)")
        }
    }
}
