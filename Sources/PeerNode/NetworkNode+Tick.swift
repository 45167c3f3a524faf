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

    func tick() {
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
        // Links that became neighbours since they came up are told of now.
        for remote in linkLines.unsettled where linkSettled(remote) { emit(linkLines.settled(remote)) }
        if !node.privateRooms.memberships.isEmpty, now - lastRoomRotationCheck >= Self.roomRotationCheckInterval {
            lastRoomRotationCheck = now
            rekeyRooms(standingIn: true)
        }
        refreshPrompt()
        feed(.tick)
        savePeerClocks(now: now)
        tickOwnHistory(now: now)
        let due = links.sorted(by: { $0.key < $1.key }).filter { id, link in
            table.links[id]?.remote != nil && now - link.lastProbe >= Self.probeInterval(link)
        }.map(\.key)
        // Sent once this turn's work is done: a pong read after the tick's
        // work would time the tick, not the link.
        if !due.isEmpty { loop.after(0) { [self] in for id in due { probeRoundTrip(on: id, now: monotonic()) } } }
    }
}
