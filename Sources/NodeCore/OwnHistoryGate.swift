import Crypto

/// Whether this node may sign a new envelope of its own now. A post must
/// never reuse a sequence number that peers already hold (our database was
/// lost, or restored from an old backup): that would be a fork, kept by
/// nobody. So posting waits while a linked peer claims more of our
/// messages than we hold (believed for `patience`, `OwnHistoryClaims`), and
/// an identity that has posted before, on a database holding none of it,
/// waits for a linked peer's clock before its first post. The nick given
/// on the command line waits with it. Pure: the shell passes the linked
/// peers' claims, our clock entry and the time, and does the effects.
public struct OwnHistoryGate: Sendable {
    /// A peer's claim to hold more of our messages is believed this long
    /// without any of them arriving.
    public static let patience = 30.0

    /// Why a post must wait.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        /// This identity posted before, and no linked peer has said what.
        case historyUnknown
        /// Linked peers hold `missing` more of our messages than we do.
        case stillComing(missing: UInt64)
        /// The machine stopped since the node last started (our last posts
        /// may be only on peers), and no linked peer has said what.
        case machineStopped

        public var description: String {
            switch self {
            case .historyUnknown:
                "this identity has posted before, but this database holds none of its messages; "
                    + "posting waits until a peer says what you posted, so no sequence number is used twice (no peer is linked yet)"
            case .machineStopped:
                "this machine stopped while peernode ran, and your last message may have reached a peer before this disk; "
                    + "posting waits until a peer says what you posted (at most \(Int(OwnHistoryGate.patience)) s after start with no peer linked), so no sequence number is used twice"
            case let .stillComing(missing):
                "your earlier messages are still coming back from your peers (\(missing) to go); try again in a moment"
            }
        }
    }

    public enum Effect: Equatable, Sendable {
        /// A claim went unproven for the whole window: no longer believed (each peer once).
        case disbelieved(PublicKey, missing: UInt64)
        /// A linked peer declared and holds no more of ours: this database knows our history (save it).
        case historyKnown
        /// Post the nick that waited (`pendingNick`).
        case postNick(String)
        /// The machine stopped, and no linked peer has said what we posted
        /// for `patience` since the start: posting goes on (save that this
        /// database knows our history, and say so).
        case waitedAlone
    }

    /// The nick from the command line not posted yet.
    public private(set) var pendingNick: String?
    public private(set) var claims = OwnHistoryClaims()
    /// When this node started, if the machine stopped since its last start
    /// and no peer has said what we posted (nil: the usual start).
    public let machineStoppedAt: Double?

    public init(pendingNick: String? = nil, machineStoppedAt: Double? = nil) {
        self.pendingNick = pendingNick
        self.machineStoppedAt = machineStoppedAt
    }

    /// Nil when a post may go now. `known`: this database knows our history
    /// (`historyKnown` was saved, the identity is new here, or it holds our
    /// messages); `claims`: each linked peer's declared entry for us.
    public func refusal(known: Bool, claims linked: [PublicKey: UInt64], ours: UInt64, now: Double) -> Refusal? {
        guard !linked.isEmpty || known else { return machineStoppedAt == nil ? .historyUnknown : .machineStopped }
        let theirs = claims.believes(now: now, patience: Self.patience) ? linked.values.max() ?? 0 : 0
        return theirs > ours ? .stillComing(missing: theirs - ours) : nil
    }

    /// We are about to sign our envelope `sequence`: our chain growing up to it proves no claim.
    public mutating func signing(_ sequence: UInt64) { claims.signing(sequence) }

    /// Whether a node whose machine stopped (`Refusal.machineStopped`) has
    /// waited long enough with no linked peer to post anyway: a fork needs
    /// a peer that took our last post in the fraction of a millisecond
    /// before the stop and stays away this long after the start.
    public static func aloneLongEnough(startedAt: Double, now: Double, linkedPeers: Int) -> Bool {
        linkedPeers == 0 && now - startedAt >= patience
    }

    /// The person posts: the waiting nick goes first (nil: none waits).
    public mutating func takePendingNick() -> String? {
        defer { pendingNick = nil }
        return pendingNick
    }

    /// Once a second: are claims coming true; may the waiting nick go; does
    /// this database now know our history?
    public mutating func tick(known: Bool, claims linked: [PublicKey: UInt64], ours: UInt64, now: Double) -> [Effect] {
        var effects: [Effect] = []
        claims.update(claims: linked, ours: ours, now: now, patience: Self.patience)
        if !claims.believes(now: now, patience: Self.patience) {
            for (peer, claimed) in linked.sorted(by: { $0.key < $1.key }) where claimed > ours && claims.disbelieve(peer) {
                effects.append(.disbelieved(peer, missing: claimed - ours))
            }
        }
        if !known, let started = machineStoppedAt, Self.aloneLongEnough(startedAt: started, now: now, linkedPeers: linked.count) {
            effects.append(.waitedAlone)
        }
        let open = refusal(known: known, claims: linked, ours: ours, now: now) == nil
        // Not known yet, so the check passes only once a linked peer has declared.
        if !known, open { effects.append(.historyKnown) }
        if open, !linked.isEmpty, let nick = takePendingNick() { effects.append(.postNick(nick)) }
        return effects
    }
}
