import ChatText
import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// What the person (or script) sees and types: deliveries shown in causal
/// order, direct messages, `/stats`, and each line from stdin.
extension NetworkNode {
    // MARK: the user

    /// Prints what was delivered since last time, in delivery (causal) order.
    func showDeliveries() {
        guard !relay else { return }
        guard let fresh = try? node.store.delivered(after: lastShown) else { return }
        out.hold()
        defer { out.release() }
        for stored in fresh {
            lastShown = stored.delivery
            let e = stored.envelope
            // What this node cannot open (others' conversations, rooms it is not in) is not shown.
            guard let opened = node.open(e) else { continue }
            node.observe(e, opened)
            // A blocked identity's messages are kept (and relayed) but not shown.
            if blocked.contains(e.author) { continue }
            switch opened.kind {
            case .receipt:
                if e.author != node.me, let receipt = Receipt.decode(opened.content) { receiptArrived(receipt, from: e.author, room: e.room) }
                continue
            case .invite:
                // An invite comes in a conversation, never in a room.
                if e.author != node.me, let peer = opened.peer, let invite = Invite.decode(opened.content) { invited(by: peer, invite) }
                continue
            default:
                break
            }
            if let peer = opened.peer {
                if opened.isMessage { showDirect(e, peer: peer, text: opened.text) }
                continue
            }
            guard let roomName = node.roomName(e.room) else { continue }
            owe(e, kind: opened.kind, room: e.room, current: roomName == session.room)
            showRoomMessage(e, room: roomName, opened: opened)
        }
    }

    /// One message of a room, as a line or a `message` event.
    func showRoomMessage(_ e: Envelope, room roomName: RoomName, opened: OpenedEnvelope) {
        if json {
            guard opened.isMessage else { return }
            out.line(JSONEvents.line(["type": .string("message"), "id": .string(e.id.hex), "author": .string(e.author.hex), "nick": .text(node.nicks[e.author] ?? PeerText("")), "seq": .number(e.sequence), "room": .string(roomName.value), "kind": .string(opened.kind == .text ? "text" : "action"), "text": .text(opened.text), "ts": .number(e.timestamp)]))
        } else {
            out.line(Renderer(people: node.people).line(e, room: roomName.value, opened: opened))
        }
    }

    func showDirect(_ e: Envelope, peer: PublicKey, text: PeerText) {
        // A direct message is shown wherever the person is: it counts as read there.
        owe(e, kind: .text, room: e.room, current: true)
        let to = e.author == node.me ? peer : node.me
        if json {
            out.line(JSONEvents.line(["type": .string("message"), "id": .string(e.id.hex), "author": .string(e.author.hex), "nick": .text(node.nicks[e.author] ?? PeerText("")), "seq": .number(e.sequence), "kind": .string("dm"), "to": .string(to.hex), "text": .text(text), "ts": .number(e.timestamp)]))
        } else {
            out.line(Renderer(people: node.people).directLine(e, to: to, text: text))
        }
    }

    /// A line from stdin.
    func handleLine(_ line: String) -> Bool {
        switch ChatInput.parse(line) {
        case let .message(text): return post(text, kind: .text)
        case let .action(text): return post(text, kind: .action)
        case let .quit(reason):
            // Like IRC's QUIT message: the room sees why (and it stays in its history).
            if !reason.isEmpty { _ = post("has quit (\(reason))", kind: .action) }
            return false
        case .stats:
            showStats()
            return true
        case let .invite(who, room):
            do {
                let peer = try node.resolve(who)
                let e = try node.invite(peer, to: try RoomName(room))
                perform(replicator.localPost(e))
                if !json { out.line("-- invited \(Renderer(people: node.people).label(peer)) to \(TerminalText.sanitize(room))") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case let .answerInvite(room, accept):
            answerInvite(room, accept: accept)
            return true
        case .invites:
            listInvites()
            return true
        case let .set(key, value):
            do {
                try node.store.setSetting(key, value)
                sendsReadReceipts = value == "on"
                if !json { out.line("-- read receipts \(value)") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case .who, .peers, .sync:
            let parsed = ChatInput.parse(line)
            if json {
                if parsed == .who {
                    for l in whoEvents() { out.line(l) }
                } else if parsed == .peers {
                    for l in peerEvents() { out.line(l) }
                } else {
                    let gaps = gaps()
                    out.line(JSONEvents.line(["type": .string("sync"), "complete": .string(gaps.isEmpty ? "yes" : "no"),
                                              "missing": .number(Backlog.total(gaps)), "authors": .number(UInt64(gaps.count)),
                                              "forks": .number(UInt64(Set(((try? node.store.forks()) ?? []).map(\.author)).count))]))
                }
            } else {
                out.hold()
                for l in parsed == .who ? whoLines() : parsed == .peers ? peerLines() : syncLines() { out.line(l) }
                out.release()
            }
            return true
        case let .block(who, on):
            do {
                let key = try node.resolve(who)
                try node.store.setBlocked(key, on, at: Node.now())
                blocked.set(try node.store.blockedIdentities())
                if on { perform(table.block(key)) }
                if !json { out.line("-- \(on ? "blocked" : "unblocked") \(Renderer(people: node.people).label(key))") }
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        case let .direct(who, text):
            do {
                // `node.postingGate` refuses it while our history may be elsewhere.
                let peer = try node.resolve(who)
                let e = try node.postDirect(text, to: peer)
                perform(replicator.localPost(e))
                showDeliveries()
            } catch {
                out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
            }
            return true
        default:
            let (lines, keepGoing) = session.handle(line)
            for l in lines {
                if json {
                    if l.hasPrefix("error: ") { out.line(JSONEvents.line(["type": .string("error"), "error": .string(String(l.dropFirst(7)))])) }
                } else {
                    out.line(l)
                }
            }
            lastShown = max(lastShown, node.store.lastDeliveryNumber)
            return keepGoing
        }
    }

    func post(_ text: String, kind: Kind) -> Bool {
        do {
            // Checked here too (the gate would check the post), so a refusal
            // keeps the pending nick instead of failing it on the way.
            try ensureOwnHistoryIsBack()
            postPendingNick()
            let e = try node.post(text, kind: kind, in: session.room)
            lastOwnPost[session.room] = e.sequence
            perform(replicator.localPost(e))
            showDeliveries()
        } catch {
            out.line(json ? JSONEvents.line(["type": .string("error"), "error": .string("\(error)")]) : "error: \(error)")
        }
        return true
    }

    /// `/stats`: one line (JSON or plain), counters sorted by name.
    func showStats() {
        var pairs: [(String, JSONEvents.Value)] = [("type", .string("stats")), ("links", .number(UInt64(linkedPeers.count)))]
        var all = counters.byName.merging(discovery?.counters ?? [:]) { a, _ in a }
        if node.refusedNicks > 0 { all["bad_nick"] = node.refusedNicks }
        pairs += all.sorted { $0.key < $1.key }.map { ($0.key, .number(UInt64(max(0, $0.value)))) }
        if json {
            out.line(JSONEvents.line(pairs: pairs))
        } else {
            out.line("-- stats: " + pairs.dropFirst().map { key, value in
                if case let .number(n) = value { return "\(key)=\(n)" }
                return key
            }.joined(separator: " "))
        }
    }
}
