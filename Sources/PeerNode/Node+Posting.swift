import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
import Store

/// Our own chain: each envelope of ours sealed, signed at the next
/// sequence, and committed, or written aside and sent before its row
/// (`OwnIntent`, docs/DECISIONS.md "Own posts are sent before their row").
extension Node {
    /// Signs and stores a new envelope of ours (fsynced before return, or
    /// after the send where `OwnDurability.sendsBeforeSync`).
    @discardableResult
    func post(_ text: String, kind: Kind, in room: RoomName, sendsFirst: Bool = false) throws -> Envelope {
        let envelope = try post(content: Array(text.utf8), kind: kind, in: room, sendsFirst: sendsFirst)
        if kind == .nick { setNick(PeerText(text), of: me) }
        return envelope
    }

    /// Signs and stores `content` of `kind` in a room we may write to;
    /// `sendsFirst`: its row may follow the send (`OwnIntent`).
    func post(content: [UInt8], kind: Kind, in room: RoomName, sendsFirst: Bool = false) throws -> Envelope {
        let id = try join(room)
        if let state = privateRooms.memberships[id], state.head != nil, state.roles[account] == nil { throw NodeError.notAMember }
        guard privateRooms.mayPost(in: id) else { throw NodeError.waitingForNewKey(room) }
        guard let key = roomKey(id) else { throw NodeError.noRoomKey(room) }
        return try appendOwn(room: id, kind: kind, content: content, key: key, erases: [], requires: nil, alsoRequires: nil, sendsFirst: sendsFirst)
    }

    /// Signs and stores a receipt in a room (sealed with its key) or
    /// a direct conversation (with the other party's conversation key).
    @discardableResult
    func postReceipt(_ receipt: Receipt, in room: RoomID) throws -> Envelope {
        if let key = roomKey(room) { return try appendOwn(room: room, kind: .receipt, content: receipt.encoded, key: key) }
        guard let peer = conversations.peer(in: room) else { throw NodeError.receiptRoomNotWritable }
        return try conversations.post(receipt.encoded, kind: .receipt, to: peer)
    }

    /// Signs and stores a direct message to `peer` (a text, or an action: `/me`).
    @discardableResult
    func postDirect(_ text: String, to peer: PublicKey, kind: Kind = .text, sendsFirst: Bool = false) throws -> Envelope {
        try conversations.post(Array(text.utf8), kind: kind, to: peer, sendsFirst: sendsFirst)
    }

    /// The next envelope of our own chain (sequence, previous hash and
    /// dependencies from the store), `content` of `kind` sealed under `key`
    /// (kind inside, padded), `erases` naming earlier envelopes of ours to
    /// erase, signed (version 3) and stored (durably, or synced after the send). `requires`: a message
    /// it refers to (a reaction's, a reply's), named among its dependencies
    /// so that every node delivers that message first.
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64] = [],
                   requires: Envelope? = nil, alsoRequires: Dependency? = nil) throws -> Envelope {
        try appendOwn(room: room, kind: kind, content: content, key: key, erases: erases, requires: requires, alsoRequires: alsoRequires, sendsFirst: false)
    }

    /// `appendOwn`; `sendsFirst`: not committed where the intent file holds it (`OwnIntent`), the send going first.
    func appendOwn(room: RoomID, kind: Kind, content: [UInt8], key: SymmetricKey, erases: [UInt64],
                   requires: Envelope?, alsoRequires: Dependency?, sendsFirst: Bool) throws -> Envelope {
        // Sealed first: content over the limit is refused before the gate counts a post.
        let body = try SealedBody.seal(kind: kind, content: content, key: key, author: me, room: room)
        try postingGate?()
        // One sent before its row is committed first: its sequence is taken.
        try ownIntent.commitPending(to: store)
        let started = monotonicNow()
        let head = try store.chainEnd(of: me).flatMap { $0.sequence == 0 ? nil : $0 } ?? store.head(of: me)
        let envelope = try Envelope.sign(
            by: identity, sequence: (head?.sequence ?? 0) + 1, previous: head?.id ?? .zero,
            dependencies: try store.dependenciesForNextPost(by: me)
                .requiring(requires.map { Dependency(author: $0.author, sequence: $0.sequence) }, by: me).requiring(alsoRequires, by: me),
            timestamp: Self.now(), room: room, erases: erases, body: body)
        let signed = monotonicNow()
        // Sent first where the intent file holds it (`OwnIntent`); its row follows the send.
        if sendsFirst, ownDurability.sendsBeforeSync, !store.lastWriteFailed, ownIntent.hold(envelope) {
            lastPostTimes = (signed - started, 0)
            return envelope
        }
        _ = try store.insertOwn(envelope, at: Self.now(), durable: !ownDurability.sendsBeforeSync)
        lastPostTimes = (signed - started, monotonicNow() - signed)
        return envelope
    }
}
