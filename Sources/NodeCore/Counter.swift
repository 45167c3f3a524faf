import Gossip

/// What the node counts: refusals and failures by reason, traffic, clock
/// messages by kind. The raw value is the name `/stats`, `--json` and
/// `/metrics` show (docs/RELIABILITY.md lists them); a counter is one of
/// these, never a string made up where it is counted.
public enum Counter: String, CaseIterable, Sendable, Comparable {
    // Traffic on links.
    case bytesIn = "bytes_in"
    case bytesOut = "bytes_out"
    case envelopesSent = "envelopes_sent"
    // The clock exchange (docs/PROTOCOL.md §6).
    case clockFullSent = "clock_full_sent"
    case clockDeltaSent = "clock_delta_sent"
    case clockSinceSent = "clock_since_sent"
    case clockBytesSent = "clock_bytes_sent"
    case fullClockWantedSent = "full_clock_wanted_sent"
    case fullClockWantedReceived = "full_clock_wanted_received"
    case clockEntriesIgnored = "clock_entries_ignored"
    // Envelopes refused or held back.
    case invalidEnvelope = "invalid_envelope"
    case fork
    case storeFull = "store_full"
    /// Fan-outs whose links' seals were made on all the cores at once (`LinkCore.inParallel`).
    case sealsSplit = "seals_split"
    /// Messages shown before their store's transaction (docs/DECISIONS.md, "Shown before stored").
    case shownAhead = "shown_ahead"
    /// Of those, ones the transaction did not deliver as shown (it failed):
    /// shown again when they are delivered.
    case shownAgain = "shown_again"
    case envelopesTooNewForLink = "envelopes_too_new_for_link"
    case inviteRefused = "invite_refused"
    case ownHistoryClaimIgnored = "own_history_claim_ignored"
    // Links refused or closed, by reason.
    case badGossipMessage = "bad_gossip_message"
    case disconnectedInvalid = "disconnected_invalid"
    case disconnectedFlood = "disconnected_flood"
    case pushRateLimited = "push_rate_limited"
    /// Envelopes not taken because `Replicator.pendingLimit` were already waiting to be verified.
    case pendingFull = "pending_full"
    case websocketHandshakeFailed = "websocket_handshake_failed"
    case tooManyConnectionsFromAddress = "too_many_connections_from_address"
    case wrongNetworkKey = "wrong_network_key"
    case badIdentity = "bad_identity"
    case handshakeTimeout = "handshake_timeout"
    case malformedHandshake = "malformed_handshake"
    case transportDecryptFailed = "transport_decrypt_failed"
    case blocked
    case unexpectedIdentity = "unexpected_identity"
    case selfConnection = "self_connection"
    case nonceExhausted = "nonce_exhausted"
    // Diallers.
    case discoveryMisdirected = "discovery_misdirected"
    /// A dialler's turn came while its peer was already linked (by the
    /// other side's dial): the redial is skipped, not made.
    case redialSkippedLinked = "redial_skipped_linked"
    /// A discovered dialler's turn came while its address is held (a dial
    /// there reached another identity): the dial is put off to the hold's
    /// end, counted once per turn.
    case dialSkippedHeld = "dial_skipped_held"
    // The overlay (docs/PROTOCOL.md §11, "Overlay").
    case overlaySent = "overlay_sent"
    case overlayReceived = "overlay_received"
    /// A membership message over a link's budget, dropped.
    case overlayLimited = "overlay_limited"
    /// A join from a peer that joined less than `Overlay.joinInterval` ago, dropped.
    case overlayJoinsIgnored = "overlay_joins_ignored"
    /// A `keep` past `maximumPinned`: the link is not kept outside the bound.
    case overlayPinnedRefused = "overlay_pinned_refused"
    /// A forwardJoin from a link whose peer is not a neighbour, or while
    /// `Overlay.maximumDialsInFlight` dials of the overlay are on their way: dropped.
    case overlayForwardJoinDropped = "overlay_forward_join_dropped"
    /// A membership message with no link to go on (and not worth a dial), dropped.
    case overlayUndelivered = "overlay_undelivered"
    /// A link no membership message claimed within `Overlay.claimGrace`, closed.
    case overlayUnclaimedClosed = "overlay_unclaimed_closed"
    /// A neighbour's link failed: the active view heals from the passive one.
    case overlayPeerLost = "overlay_peer_lost"
    // Tree push (docs/PROTOCOL.md §11, "Tree push").
    /// Envelopes a link pushed that were held already or being checked.
    case envelopesDuplicate = "envelopes_duplicate"
    case ihaveSent = "ihave_sent"
    case ihaveReceived = "ihave_received"
    case pruneSent = "prune_sent"
    case pruneReceived = "prune_received"
    case graftSent = "graft_sent"
    case graftReceived = "graft_received"
    /// Envelopes asked for in `request` messages (the receiver's catch-up,
    /// and what a link's clock showed before the tree brought it).
    case envelopesRequested = "envelopes_requested"
    // Typing notices (docs/PROTOCOL.md §10, "Typing").
    case typingSent = "typing_sent"
    case typingReceived = "typing_received"
    /// Dropped before or at the signature check: stale, repeated, a flood, unsigned, or on a link older than version 6.
    case typingDropped = "typing_dropped"
    /// An accepted typing notice past `TypingBoard.maximumPassedOnPerSecond`: shown, not passed on.
    case typingNotPassedOn = "typing_not_passed_on"
    case presenceSent = "presence_sent"
    case presenceReceived = "presence_received"
    /// A presence beacon refused: on an older link, stale, a changes budget spent, a full board, a flooding link, a bad signature.
    case presenceDropped = "presence_dropped"
    /// A presence beacon already held (not newer, or the same said again within 10 s): most come with a new link's board.
    case presenceRepeated = "presence_repeated"
    // Files (docs/PROTOCOL.md §16).
    /// Chunks asked of peers, and sealed chunks sent and received.
    case fileChunksWanted = "file_chunks_wanted"
    case fileChunksSent = "file_chunks_sent"
    case fileChunksReceived = "file_chunks_received"
    /// A file message on a link older than version 7, or asks past `Files.maximumQueuedWants`: dropped.
    case fileMessageDropped = "file_message_dropped"

    /// The counter of a link refused in its handshake.
    public init(_ failure: LinkFailure) {
        switch failure {
        case .wrongNetworkKey: self = .wrongNetworkKey
        case .badIdentity: self = .badIdentity
        case .handshakeTimeout: self = .handshakeTimeout
        case .malformedHandshake: self = .malformedHandshake
        case .transportDecryptFailed: self = .transportDecryptFailed
        case .blocked: self = .blocked
        case .unexpectedIdentity: self = .unexpectedIdentity
        case .selfConnection: self = .selfConnection
        case .nonceExhausted: self = .nonceExhausted
        }
    }

    /// The reasons `/metrics` shows as `drops_total{reason=…}`, in its order.
    public static let drops: [Counter] = [
        .invalidEnvelope, .fork, .storeFull, .badGossipMessage, .disconnectedInvalid, .websocketHandshakeFailed,
        .wrongNetworkKey, .badIdentity, .handshakeTimeout, .malformedHandshake, .transportDecryptFailed,
        .blocked, .unexpectedIdentity, .selfConnection, .nonceExhausted,
        .tooManyConnectionsFromAddress, .pushRateLimited, .disconnectedFlood,
    ]

    public static func < (a: Counter, b: Counter) -> Bool { a.rawValue < b.rawValue }
}

/// The node's counts, by `Counter`. Saturating: a peer decides how many
/// bytes and messages it sends.
public struct Counters: Sendable, Equatable {
    private var values: [Counter: Int] = [:]

    public init() {}

    public subscript(_ counter: Counter) -> Int { values[counter] ?? 0 }

    public mutating func add(_ counter: Counter, _ n: Int = 1) {
        let (sum, overflow) = self[counter].addingReportingOverflow(n)
        values[counter] = overflow ? Int.max : sum
    }

    /// The counters that moved, by name (what `/stats` prints).
    public var byName: [String: Int] {
        var out: [String: Int] = [:]
        for (counter, value) in values where value != 0 { out[counter.rawValue] = value }
        return out
    }
}
