import Crypto
import Gossip
import NodeCore

/// The one validity check (`Node.open`), as a unit is given it: every
/// unit reads envelopes through it, none decides on its own what stands.
protocol EnvelopeOpening: AnyObject {
    /// `e` opened, if it stands and this node can read it.
    func open(_ e: Envelope) -> OpenedEnvelope?
    /// `e` opened whatever its standing now (what was indexed when it stood comes out).
    func openIgnoringStanding(_ e: Envelope) -> OpenedEnvelope?
}

/// Our own chain, as a unit that signs is given it: the key a room or
/// conversation is sealed with, and the next envelope of ours.
protocol OwnPosting: AnyObject {
    var me: PublicKey { get }
    func sealingKey(for room: RoomID) -> SymmetricKey?
    /// Signs and stores our next envelope (`Node.appendOwn`).
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64],
                   requires: Envelope?, alsoRequires: Dependency?) throws -> Envelope
    /// The same; `sendsFirst`: its row may follow the send (`OwnIntent`).
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64],
                   requires: Envelope?, alsoRequires: Dependency?, sendsFirst: Bool) throws -> Envelope
}

extension OwnPosting {
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64] = [], requires: Envelope? = nil) throws -> Envelope {
        try appendOwn(room: room, kind: kind, content: content, key: key, erases: erases, requires: requires, alsoRequires: nil)
    }
}
