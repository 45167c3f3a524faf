import Crypto
import Gossip
import NetworkText
import NodeCore

/// Which links a person is told of ("-- linked to bob", "-- link to bob
/// closed"). On a LAN larger than the overlay's bound, a node short of
/// neighbours asks peers from its reserve, and full peers say no: each ask
/// is a link that opens and closes "not a neighbour" a moment later. In a
/// twelve-node LAN that was a pair of lines every second or two at the
/// terminal. So a link that is not (yet) a neighbour or a kept link is
/// told of only once it becomes one, or when it closes for another reason
/// (its close reason is worth reading); one refused as not a neighbour is
/// not told of at all. Scripts (`--json`) still get every link.
struct LinkLines {
    /// The `peerUp` (and what is said with it) of each peer whose only link is not settled yet.
    private(set) var waiting: [PublicKey: [NodeEvent]] = [:]
    /// Peers told of as running an older version (`NodeEvent.olderPeer`), once each a run.
    private var olderTold: Set<PublicKey> = []

    /// What to say of `person`'s link at `version`: that it runs an older
    /// version, when the link cannot carry what this build signs and it was
    /// not said of that peer yet.
    mutating func older(_ person: Person, node remote: PublicKey, version: LinkProtocol) -> [NodeEvent] {
        guard version.envelopeVersion < Envelope.newestVersion, olderTold.insert(remote).inserted else { return [] }
        return [.olderPeer(person, node: remote, linkVersion: version.rawValue)]
    }

    /// A peer's first link is up: its lines now if `settled` (a neighbour, a
    /// kept link, a link of an older version), else when it settles.
    mutating func up(_ events: [NodeEvent], remote: PublicKey, settled: Bool) -> [NodeEvent] {
        if settled { return events }
        waiting[remote] = events
        return []
    }

    /// The peers whose line waits (to check whether they have settled).
    var unsettled: [PublicKey] { waiting.keys.sorted() }

    /// `remote`'s link became a neighbour or a kept link: its line now.
    mutating func settled(_ remote: PublicKey) -> [NodeEvent] {
        waiting.removeValue(forKey: remote) ?? []
    }

    /// No link carries `remote` any more.
    mutating func down(_ event: NodeEvent, remote: PublicKey, reason: PeerText?) -> [NodeEvent] {
        guard let up = waiting.removeValue(forKey: remote) else { return [event] }
        // Asked and refused, or it asked and we had no place: nothing to tell.
        if reason?.unsanitized == LinkCore.notNeighbourReason { return [] }
        return up + [event]
    }
}
