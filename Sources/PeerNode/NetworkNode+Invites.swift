import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// Invites to private rooms: shown when they arrive, and nothing more until
/// the user answers with `/accept` or `/decline` (docs/PROTOCOL.md §14).
extension NetworkNode {
    /// An invite arrived: it waits for the user, or is refused outright when
    /// it names a room that cannot be private (a public or direct room: it
    /// would have replaced that room's key).
    func invited(by peer: PublicKey, _ invite: Invite) -> [NodeEvent] {
        let refusal: InviteRefusal?
        do {
            refusal = try node.receiveInvite(invite, from: peer)
        } catch {
            log.warning("keeping an invite failed: \(error)")
            return []
        }
        if let refusal {
            count(.inviteRefused)
            return [.inviteRefused(by: node.people[peer], room: invite.name.value, reason: refusal.description)]
        }
        guard node.privateRooms[invite.room] == nil else { return [] }
        return [.invite(by: node.people[peer], room: invite.name.value, listed: false)]
    }

    /// `/accept [#room]` or `/decline [#room]`.
    func answerInvite(_ room: String, accept: Bool) throws -> [NodeEvent] {
        let pending = try node.pendingInvite(named: room)
        guard accept else {
            try node.decline(pending)
            return [.inviteDeclined(room: pending.name, by: pending.inviter)]
        }
        let name = try node.accept(pending)
        // What the room said before we joined, now that we can read it.
        let earlier = readLogged("the history of the room joined") { try node.store.history(of: pending.room, limit: ChatInput.maximumHistory) } ?? []
        return [.inviteAccepted(room: name, askedFor: pending.name, by: pending.inviter)]
            + earlier.compactMap { stored in
                guard !blocked.contains(stored.envelope.author), let opened = node.open(stored.envelope) else { return nil }
                return .message(ShownMessage(envelope: stored.envelope, opened: opened, room: name, to: nil, me: node.me, book: node.people))
            }
    }

    /// `/invites`: who invited us where, oldest first.
    func listInvites() throws -> [NodeEvent] {
        let pending = try node.pendingInvites()
        guard !pending.isEmpty else { return [.noInvites] }
        return pending.map { .invite(by: node.people[$0.inviter], room: $0.name, listed: true) }
    }
}
