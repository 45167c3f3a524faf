import Crypto
import FuzzSupport
import Gossip
import NodeCore

// libFuzzer entry: the replicator fed gossip messages by hostile peers. The
// input is records: one byte picks the link (0–2; 3 takes the link down and
// up again, 4 lets 3 seconds pass, 5 is a peer clock saved by an earlier
// version: 33-byte records of author byte ‖ 8-byte sequence, any value),
// two bytes give a length, then a gossip message. Envelopes are stored as if their signatures held (a fuzzer cannot
// sign), so the replicator's state moves as it would under a peer that lies
// only in its clocks, requests and sequence numbers. Properties: the clock
// only moves forward and never past what is stored; we only send what we hold,
// only to links that are up.

let me = (try? PublicKey(bytes: [UInt8](repeating: 0x11, count: 32)))

/// What the simulated store holds: author → sequences.
struct Held {
    var sequences: [PublicKey: Set<UInt64>] = [:]
    func contiguous(_ author: PublicKey) -> UInt64 {
        var n: UInt64 = 0
        while sequences[author]?.contains(n + 1) == true { n += 1 }
        return n
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGossip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    invariant(me != nil, "the fuzz target's key could not be made")
    guard let me else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var held = Held()
    held.sequences[me] = [1, 2, 3]
    var replicator = Replicator(me: me, clock: VectorClock([me: 3]), random: SplitMix(seed: 1))
    var up: Set<LinkID> = []
    var now = 0.0
    var queue: [Replicator.Action] = []
    // What the node keeps beside the replicator: per-peer clocks remembered
    // (and saved), the prompt's progress, the claims about our own history.
    var remembered: [LinkID: PeerClocks] = [:]
    var savedByEarlierVersion = VectorClock()
    var progress = SyncProgress()
    var claims = OwnHistoryClaims()
    var typing = TypingBoard(me: me)
    var presence = PresenceBoard(me: me)
    var files = FileFetch()
    for link in 0..<3 {
        up.insert(link)
        queue += replicator.linkUp(link, now: now)
    }
    var rest = bytes[...]
    while rest.count >= 3 {
        let selector = Int(rest[rest.startIndex]) % 6
        let length = Int(rest[rest.startIndex + 1]) << 8 | Int(rest[rest.startIndex + 2])
        let body = Array(rest.dropFirst(3).prefix(length))
        rest = rest.dropFirst(3 + length)
        switch selector {
        case 3:
            let link = body.first.map { Int($0) % 3 } ?? 0
            replicator.linkDown(link)
            // Any version: the peer is sent its catch-up (1), asks for it (2, 3), or takes tree push (4).
            queue += replicator.linkUp(link, now: now, version: body.count > 1 ? [.v1, .v2, .v3, .v4][Int(body[1]) % 4] : .v2)
            up.insert(link)
        case 4:
            now += 3
            queue += replicator.tick(now: now)
        case 5:
            for start in stride(from: 0, to: body.count - 8, by: 9) {
                guard let author = try? PublicKey(bytes: [UInt8](repeating: body[start], count: 32)) else { continue }
                savedByEarlierVersion[author] = body[(start + 1)...(start + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            }
        default:
            guard up.contains(selector), let message = try? GossipMessage.decode(body) else { continue }
            switch message {
            case let .clock(entries, full): queue += replicator.clockReceived(selector, entries: entries, full: full, now: now)
            case let .envelopes(batch): queue += replicator.envelopesReceived(selector, batch, now: now)
            case let .request(ranges): queue += replicator.requestReceived(selector, ranges: ranges)
            case let .clockSince(base, entries): queue += replicator.clockSinceReceived(selector, base: base, entries: entries, now: now)
            case .fullClockWanted: queue += replicator.fullClockWanted(selector)
            case let .stored(entries): queue += replicator.storedReceived(selector, entries: entries, now: now)
            case let .ihave(entries): queue += replicator.ihaveReceived(selector, entries: entries, now: now)
            case let .prune(authors): replicator.pruneReceived(selector, authors: authors)
            case let .graft(authors): replicator.graftReceived(selector, authors: authors)
            case let .typing(notice):
                // Checked as the node checks it, the signature taken as holding (a fuzzer cannot sign).
                if typing.examine(notice, from: selector, now: now, wall: 1_800_000_000_000) == .check { typing.accept(notice, from: selector, now: now) }
                invariant(typing.typing(in: notice.room, now: now).count <= TypingBoard.maximumTracked, "more typers shown than tracked")
            case let .presence(beacon):
                // Checked as the node checks it, the signature taken as holding.
                if presence.examine(beacon, from: selector, now: now, wall: 1_800_000_000_000) == .check { presence.accept(beacon, now: now, wall: 1_800_000_000_000) }
                invariant(presence.entries.count <= PresenceBoard.maximumTracked, "more devices on the presence board than tracked")
            case let .file(message):
                // The receiver's side of a transfer: a chunk checked against the tree, a "not held" taken.
                let peer = try? PublicKey(bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: selector), count: 32))
                guard let peer else { break }
                if !files.fetches(message.root) { files.start(message.root, chunks: 64, held: { _ in false }) }
                let links = [selector: peer]
                switch message {
                case let .chunk(root, index, proof, sealed):
                    let valid = FileTree.verify(leaf: FileTree.leaf(index: index, sealed: sealed), index: index, chunks: 64, proof: proof, root: root)
                    _ = files.received(root, index: index, from: peer, valid: valid, links: links, now: now)
                case let .none(root, chunks):
                    _ = files.lacking(root, chunks: chunks, from: peer, links: links, now: now)
                case let .want(root, _, _, _):
                    for case let .want(_, _, asked) in files.tick(links: links, now: now) {
                        invariant(asked.count <= FileFetch.perLink, "more chunks asked of one link than perLink")
                    }
                    _ = root
                }
            case .overlay: break
            }
        }
        // The shell's side: perform every action, as the node does.
        while !queue.isEmpty {
            let action = queue.removeFirst()
            switch action {
            case let .send(link, _):
                invariant(up.contains(link), "a message for a link that is down")
            case let .sendStored(link, author, from, through):
                invariant(up.contains(link), "stored envelopes for a link that is down")
                invariant(from >= 1 && from <= through && through <= replicator.clock[author], "offered envelopes that are not held")
            case let .verifyAndStore(link, batch):
                var inserted: [CarriedEnvelope] = []
                for c in batch where held.sequences[c.envelope.author, default: []].insert(c.envelope.sequence).inserted {
                    inserted.append(c)
                }
                let authors = Set(batch.map(\.envelope.author))
                let newClock = authors.map { Dependency(author: $0, sequence: held.contiguous($0)) }
                queue += replicator.stored(from: up.contains(link) ? link : nil, checked: batch, inserted: inserted, invalid: 0,
                                           newClock: newClock, now: now)
            case let .disconnect(link, _), let .pushesLimited(link, _):
                up.remove(link)
                replicator.linkDown(link)
            case let .remember(link, clocks):
                remembered[link] = clocks
            case .clockEntriesIgnored, .heldBack, .duplicates, .pendingFull:
                break
            }
        }
        // What a hostile link declares flows through every summary of it (what
        // /sync, /peers, the prompt and /stats compute): none may trap, and the
        // authors it may declare that we hold nothing of stay bounded.
        for link in up {
            let declared = replicator.declaredClock(of: link) ?? VectorClock()
            let known = replicator.knownClock(of: link) ?? VectorClock()
            _ = declared.count(beyond: replicator.clock)
            _ = replicator.clock.count(beyond: known)
            _ = known.count(beyond: replicator.clock)
            _ = declared.total
            _ = declared.entries.values.reduce(UInt64(0)) { $0.saturatingAdd($1) }
            let unknown = declared.entries.keys.filter { replicator.clock[$0] == 0 }.count
            invariant(unknown <= Replicator.maximumUnknownAuthors, "a link declared more unknown authors than the cap")
        }
        // /sync and --json's sync event: linked peers' clocks, then the ones
        // remembered and one saved by an earlier version (any 64-bit value).
        let peerOf = { (link: LinkID) -> PublicKey? in try? PublicKey(bytes: [UInt8](repeating: UInt8(0x40 + link), count: 32)) }
        var linkedDeclarations: [Backlog.Declaration] = []
        for link in up.sorted() {
            if let declared = replicator.declaredClock(of: link), let peer = peerOf(link) {
                linkedDeclarations.append(.init(peer: peer, clock: declared, linked: true, seenAt: 0))
            }
        }
        var offline: [Backlog.Declaration] = []
        for (link, clocks) in remembered.sorted(by: { $0.key < $1.key }) where !up.contains(link) {
            if let declared = clocks.declared, let peer = peerOf(link) { offline.append(.init(peer: peer, clock: declared, linked: false, seenAt: 1)) }
        }
        if let old = peerOf(9) { offline.append(.init(peer: old, clock: savedByEarlierVersion, linked: false, seenAt: 2)) }
        let gaps = Backlog.gaps(ours: replicator.clock, declarations: linkedDeclarations + offline)
        let total = Backlog.total(gaps)
        invariant(gaps.allSatisfy { $0.missing > 0 } && total >= (gaps.map(\.missing).max() ?? 0), "a gap of nothing, or a total below a gap")
        // The prompt's bar is the linked part of the same sum.
        let linkedMissing = Backlog.missing(ours: replicator.clock, declared: linkedDeclarations.map(\.clock))
        invariant(linkedMissing == Backlog.total(Backlog.gaps(ours: replicator.clock, declarations: linkedDeclarations)),
                  "the prompt's backlog and /sync's disagree")
        _ = progress.tag(missing: linkedMissing)
        _ = progress.tag(missing: total)
        // The gate on our own posts reads every linked peer's claim about us.
        var ownClaims: [PublicKey: UInt64] = [:]
        for d in linkedDeclarations { ownClaims[d.peer] = d.clock[me] }
        claims.update(claims: ownClaims, ours: replicator.clock[me], now: now, patience: 30)
        _ = claims.believes(now: now, patience: 30)
        for (author, sequence) in replicator.clock.entries {
            invariant(sequence == held.contiguous(author), "the clock is not what the store holds")
        }
    }
    return 0
}
