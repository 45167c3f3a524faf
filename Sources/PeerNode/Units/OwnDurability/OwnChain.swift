import Crypto
import Gossip
import Reactor
import Store

/// Our own chain: the next envelope of ours sealed, signed at the next
/// sequence (its head and dependencies from the store), and committed, or
/// written aside and sent before its row where `OwnIntent` may hold it
/// (docs/DECISIONS.md, "Own posts are sent before their row"). The one
/// place anything of ours is signed. Confined to the node's loop.
final class OwnChain {
    private let identity: SigningKey
    private let store: Store
    private let durability: OwnDurability
    private let intent: OwnIntent
    /// Seconds the last envelope took to sign (its dependencies found,
    /// signed) and to commit (0 when its row follows the send): `StageTimes`
    /// `sign` and `row`.
    private(set) var lastTimes = (sign: 0.0, row: 0.0)

    init(identity: SigningKey, store: Store, durability: OwnDurability, intent: OwnIntent) {
        self.identity = identity
        self.store = store
        self.durability = durability
        self.intent = intent
    }

    /// `content` of `kind` sealed under `key`, signed as our next envelope
    /// in `room` (`erases`, `requires`, `alsoRequires`: see `Node.appendOwn`)
    /// once `gate` allows it, and stored; `sendsFirst`: held aside instead,
    /// its row committed after the send (`OwnIntent.commitPending`).
    func append(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64],
                requires: Envelope?, alsoRequires: Dependency?, sendsFirst: Bool, gate: (() throws -> Void)?) throws -> Envelope {
        let me = identity.publicKey
        // Sealed first: content over the limit is refused before the gate counts a post.
        let body = try SealedBody.seal(kind: kind, content: content, key: key, author: me, room: room)
        try gate?()
        // One sent before its row is committed first: its sequence is taken.
        try intent.commitPending(to: store)
        let started = monotonicNow()
        // From memory (`chainEnd`: (0, zero) for nothing yet); read past a gap, where our highest is the head.
        let head = try store.chainEnd(of: me) ?? store.head(of: me)
        let envelope = try Envelope.sign(
            by: identity, sequence: (head?.sequence ?? 0) + 1, previous: head?.id ?? .zero,
            dependencies: try store.dependenciesForNextPost(by: me)
                .requiring(requires.map { Dependency(author: $0.author, sequence: $0.sequence) }, by: me).requiring(alsoRequires, by: me),
            timestamp: Node.now(), room: room, erases: erases, body: body)
        let signed = monotonicNow()
        if sendsFirst, durability.sendsBeforeSync, !store.lastWriteFailed, intent.hold(envelope) {
            lastTimes = (signed - started, 0)
            return envelope
        }
        _ = try store.insertOwn(envelope, at: Node.now(), durable: !durability.sendsBeforeSync)
        lastTimes = (signed - started, monotonicNow() - signed)
        return envelope
    }
}
