import ChatText
import NetworkText
import NodeCore
import Gossip
import Crypto
import CMalloc
import Foundation

/// The node's once-a-second turn (`NetworkNode.tickInterval`): background
/// work when the links are quiet, memory back to the system, typing
/// notices expired, private rooms' keys replaced when due, peer clocks
/// saved, and link round trips probed.
extension NetworkNode {
    /// Links quiet this long: background work may run.
    static let quietPeriod = 0.25
    /// Background work runs at least this often, however busy the links.
    static let backgroundDeferral = 10.0
    /// Freed memory goes back to the system at most this often, when quiet.
    static let memoryTrimInterval = 30.0
    /// How often private rooms are checked for a key the schedule replaces (s).
    static let roomRotationCheckInterval = 60.0
    /// Erased bodies are purged from the files (`Store.purgeErased`: the
    /// whole search index merged, the WAL truncated) at most this often, so
    /// an author posting tombstone after tombstone costs one merge per
    /// interval, not one each…
    static let erasurePurgeInterval = 5.0
    /// …and the purge takes at most this share of the loop's time: the
    /// merge grows with the index (0.2 s for 100,000 messages here), so
    /// after a purge that took t seconds the next waits t / share at least.
    static let erasurePurgeShare = 0.05

    /// The first moment a linked peer's announced history is all here: the
    /// backlog has ended (`NodeEvent.caughtUp`). At every tick, and after
    /// each turn's deliveries (`showDeliveries`), so the end is said as the
    /// last of it is shown, not up to a second later.
    func checkCaughtUp() {
        guard !caughtUp, !relay, linkedPeers.keys.contains(where: { replicator.declaredClock(of: $0) != nil }), missingFromLinked == 0 else { return }
        caughtUp = true
        emit(.caughtUp(held: replicator.clock.total))
        sumUpBacklog(now: monotonic())
    }

    /// At a terminal: the backlog held back (`TerminalWindows`) in one line
    /// of counts, then the open window's last rows when some of it came there.
    func sumUpBacklog(now: Double) {
        guard let windows, windows.backlogDue(caughtUp: caughtUp, now: now) else { return }
        var places: [String: Int] = [:]
        let (held, rows) = windows.takeHeldBack(showing: session.openRoomIDs)
        for (room, count) in held where count.messages > 0 {
            let name = node.roomName(room).map { TerminalText.sanitize($0.value) }
                ?? node.conversations.peer(in: room).map { "\(session.plainLabel(node.people.account($0))) (direct)" } ?? "elsewhere"
            places[name, default: 0] += count.messages
        }
        let here = held.filter { session.openRoomIDs.contains($0.key) }.values.reduce(0) { $0 + $1.lines }
        let total = places.values.reduce(0, +)
        let list = places.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let line = "-- \(counted(total, "message")) came in \(caughtUp ? "while catching up" : "so far"): \(list)"
            + (here > rows.count ? "; the last \(rows.count) here below, /history N for more" : "")
        emit((total == 0 ? [] : chatLines([line])) + rows)
    }

    func tick() {
        ticksRun += 1
        let now = monotonic()
        checkStoreSize()
        // A store failure met in the background is said now, not at the next line shown.
        if node.storeFailures.unsaid != nil { emit([]) }
        // Background work (the search index, receipts: each a write, a receipt
        // also an fsync) waits for a quiet moment on the links, so it does not
        // hold up messages passing through; it waits no longer than
        // `backgroundDeferral`.
        if now - lastLinkTraffic >= Self.quietPeriod || now - lastBackgroundWork >= Self.backgroundDeferral {
            lastBackgroundWork = now
            if !relay { _ = readLogged("new messages for the search index") { try node.searchIndex.indexNew() } }
            sendReceipts(now: now)
            // Erased bodies leave the files: the index merged, the WAL truncated.
            if node.store.hasUnpurgedErasures, now >= nextErasurePurge {
                do { try node.store.purgeErased() } catch { node.storeFailures.failed("purging erased messages from the files", error) }
                let took = monotonic() - now
                nextErasurePurge = now + max(Self.erasurePurgeInterval, took / Self.erasurePurgeShare)
            }
        }
        // After a burst (a catch-up, a flood, a peer that stopped reading) the
        // allocator keeps the freed memory; give it back once things are quiet.
        if now - lastLinkTraffic >= Self.quietPeriod, now - lastMemoryTrim >= Self.memoryTrimInterval {
            lastMemoryTrim = now
            _ = malloc_trim(0)
        }
        typing.expire(now: now)
        sendPresence(now: now)
        checkCaughtUp()
        sumUpBacklog(now: now)
        // Links that became neighbours since they came up are told of now.
        for remote in linkLines.unsettled where linkSettled(remote) { emit(linkLines.settled(remote)) }
        if !node.privateRooms.memberships.isEmpty, now - lastRoomRotationCheck >= Self.roomRotationCheckInterval {
            lastRoomRotationCheck = now
            rekeyRooms(standingIn: true)
        }
        refreshPrompt()
        feed(.tick)
        for hook in onTick { hook() }
        savePeerClocks(now: now)
        tickOwnHistory(now: now)
        tickFiles()
        let due = links.sorted(by: { $0.key < $1.key }).filter { id, link in
            table.links[id]?.remote != nil && link.probe.isDue(now: now)
        }.map(\.key)
        // Sent once this turn's work is done: a pong read after the tick's
        // work would time the tick, not the link.
        if !due.isEmpty {
            loop.after(0) { [self] in
                for id in due {
                    guard let link = links[id] else { continue }
                    link.connection.ping(links[id]?.probe.start(now: monotonic(), first: UInt32.random(in: 0...UInt32.max)) ?? [])
                }
            }
        }
    }

    /// Posts the receipts owed (`Receipts`) and sends them.
    func sendReceipts(now: Double) {
        // Receipts are ours too: they wait (still owed) while a post would.
        guard ownHistoryRefusal(now: now) == nil else { return }
        for e in receipts.postDue(now: now) {
            sentOwnUpTo = max(sentOwnUpTo, e.sequence)
            feed(.posted(e))
        }
    }
}

/// The own-history gate (`OwnHistoryGate`, pure) fed with the linked
/// peers' claims; its effects done here.
extension NetworkNode {
    /// Each linked peer's declared sequence for us (empty until a linked
    /// peer has declared its clock).
    var ownClaims: [PublicKey: UInt64] {
        var out: [PublicKey: UInt64] = [:]
        for (id, remote) in linkedPeers {
            if let claimed = replicator.declaredClock(of: id)?[node.me] { out[remote] = max(out[remote] ?? 0, claimed) }
        }
        return out
    }

    /// Why a post of ours must wait now (nil: it may go).
    func ownHistoryRefusal(now: Double) -> OwnHistoryGate.Refusal? {
        ownHistory.refusal(known: node.ownDurability.historyIsKnown, claims: ownClaims, ours: replicator.clock[node.me], now: now)
    }

    /// Throws while our own history may still be elsewhere (every post of ours passes here).
    func ensureOwnHistoryIsBack() throws(OwnHistoryGate.Refusal) {
        if let refusal = ownHistoryRefusal(now: monotonic()) { throw refusal }
        // Let through while not known: a linked peer has said (as the tick would record).
        if !node.ownDurability.historyIsKnown { ownHistoryKnown() }
    }

    /// This database knows our history now: saved, so the next start does not wait.
    func ownHistoryKnown() {
        do { try node.ownDurability.markKnown() } catch { log.warning("saving that our history is known failed: \(error)") }
    }

    /// On each tick: claims that came to nothing, our history known, the waiting nick.
    func tickOwnHistory(now: Double) {
        let effects = ownHistory.tick(known: node.ownDurability.historyIsKnown, claims: ownClaims, ours: replicator.clock[node.me], now: now)
        for effect in effects {
            switch effect {
            case let .disbelieved(peer, missing):
                count(.ownHistoryClaimIgnored)
                log.warning("\(peer.shortFingerprint) says it holds \(missing) more of your messages but sent none in \(Int(OwnHistoryGate.patience)) s; posting goes on without them")
            case .historyKnown:
                ownHistoryKnown()
            case .waitedAlone:
                log.warning("this machine stopped while peernode ran, and no linked peer has said what you posted in \(Int(OwnHistoryGate.patience)) s: posting goes on")
                ownHistoryKnown()
            case let .postNick(nick):
                post(nick: nick)
            }
        }
    }

    /// Posts the nick that waited, unless our history brought back the same one.
    func post(nick: String) {
        guard node.nick != nick else { return }
        do {
            sendOwn(try node.post(nick, kind: .nick, in: session.room))
        } catch {
            log.warning("could not post the nick \(nick): \(error)")
        }
    }
}
