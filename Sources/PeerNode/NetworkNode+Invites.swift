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
    func invited(by peer: PublicKey, _ invite: Invite) {
        let renderer = Renderer(people: node.people)
        let refusal: InviteRefusal?
        do {
            refusal = try node.receiveInvite(invite, from: peer)
        } catch {
            log.warning("keeping an invite failed: \(error)")
            return
        }
        if let refusal {
            count(.inviteRefused)
            if json {
                out.line(JSONEvents.line(["type": .string("invite_refused"), "by": .string(peer.hex), "room": .string(invite.name.value), "reason": .string(refusal.description)]))
            } else {
                out.line("-- ⚠ \(renderer.label(peer)) sent an invite to \(TerminalText.sanitize(invite.name.value)) that was refused: \(refusal)")
            }
            return
        }
        guard node.privateRooms[invite.room] == nil else { return }
        if json {
            out.line(JSONEvents.line(["type": .string("invite"), "by": .string(peer.hex), "nick": .text(node.nicks[peer] ?? PeerText("")),
                                      "room": .string(invite.name.value), "state": .string("pending")]))
        } else {
            let name = TerminalText.sanitize(invite.name.value)
            out.line("-- \(renderer.label(peer)) invites you to the private room \(name): /accept \(name) joins it, /decline \(name) refuses")
        }
    }

    /// `/accept [#room]` or `/decline [#room]`.
    func answerInvite(_ room: String, accept: Bool) {
        do {
            let pending = try node.pendingInvite(named: room)
            if accept {
                let name = try node.accept(pending)
                if json {
                    out.line(JSONEvents.line(["type": .string("invite_accepted"), "room": .string(name.value), "by": .string(pending.inviter.hex)]))
                } else {
                    let renamed = name.value == pending.name ? "" : " (named \(name.value) here: you already have a room called \(TerminalText.sanitize(pending.name)))"
                    out.line("-- joined the private room \(name.value)\(renamed): /switch \(name.value)")
                }
                // What the room said before we joined, now that we can read it.
                let earlier = (try? node.store.history(of: pending.room, limit: ChatInput.maximumHistory)) ?? []
                out.hold()
                for stored in earlier where !blocked.contains(stored.envelope.author) {
                    if let opened = node.open(stored.envelope) { showRoomMessage(stored.envelope, room: name, opened: opened) }
                }
                out.release()
            } else {
                try node.decline(pending)
                if json {
                    out.line(JSONEvents.line(["type": .string("invite_declined"), "room": .string(pending.name), "by": .string(pending.inviter.hex)]))
                } else {
                    out.line("-- declined the invite to \(TerminalText.sanitize(pending.name))")
                }
            }
        } catch {
            out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
        }
    }

    /// `/invites`: who invited us where, oldest first.
    func listInvites() {
        let pending = (try? node.pendingInvites()) ?? []
        let renderer = Renderer(people: node.people)
        if json {
            for p in pending {
                out.line(JSONEvents.line(["type": .string("invite"), "by": .string(p.inviter.hex), "nick": .text(node.nicks[p.inviter] ?? PeerText("")),
                                          "room": .string(p.name), "state": .string("pending")]))
            }
            return
        }
        guard !pending.isEmpty else {
            out.line("-- no invites waiting")
            return
        }
        out.hold()
        defer { out.release() }
        for p in pending {
            out.line("-- \(TerminalText.sanitize(p.name)) from \(renderer.label(p.inviter)): /accept \(TerminalText.sanitize(p.name)) or /decline \(TerminalText.sanitize(p.name))")
        }
    }
}
