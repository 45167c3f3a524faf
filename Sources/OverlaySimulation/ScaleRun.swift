import Crypto
import Gossip

/// One seeded run of a whole LAN: the real `Membership` cores (as the node
/// sets them) decide the links; `TreePush` spreads every envelope by the
/// node's rules; figures are collected as the issue asks for them
/// (docs/SCALE.md). Pure: no socket, thread or clock.
public struct ScaleRun {
    public struct Settings: Sendable {
        public var nodes = 1_000
        public var authors = 10_000
        public var messages = 1_000_000
        /// `--max-links` (0: the full mesh of earlier builds, flooding, no tree).
        public var maximumLinks = 6
        /// Peers each node's discovery hears (it keeps at most 256, `DiscoveryCore.maximumPeers`).
        public var discoveryView = 256
        /// Messages before the figures count (the tree settles on them).
        public var warmup = 200
        /// Share of the nodes killed at once after the messages, and messages a second while the rest heal.
        public var killFraction = 0.2
        public var healRate = 20
        public var seed: UInt64 = 1
        public init() {}

        /// The hop count the issue sets as the aim: ⌈log2 n⌉ + 2.
        public var hopAim: Int { ceilLog2(nodes) + 2 }
    }

    public struct Result: Sendable {
        public var settings: Settings
        public var maximumDegree = 0, minimumDegree = 0
        public var meanDegree = 0.0
        public var asymmetric = 0
        public var measured = 0
        /// (message, node) pairs that never got there.
        public var missed = 0
        public var hopMedian = 0, hopP99 = 0, hopWorst = 0
        public var fullSendsPerMessage = 0.0
        public var duplicatesPerNodePerMessage = 0.0
        public var announcementsPerMessage = 0.0
        public var grafts = 0, prunes = 0
        /// An author's first envelope floods the overlay (every link starts
        /// eager for it) and prunes it to that author's tree: its cost apart.
        public var firstMessages = 0
        public var firstSendsPerMessage = 0.0
        public var firstDuplicatesPerNode = 0.0
        /// Wire bytes per message per node: full envelopes and ids.
        public var bytesPerMessagePerNode = 0.0
        public var envelopeBytes = 0
        /// After the kill: seconds until links were back within the bound (symmetric, one overlay),
        /// the most links any survivor held meanwhile, and the worst seconds any message
        /// posted while they healed took to reach every survivor.
        public var killed = 0
        public var linksBackAfter: Double?
        public var degreeWhileHealing = 0
        public var worstDeliveryWhileHealing: Double?
        public var healMissed = 0
        public var seconds = 0.0
    }

    /// Bytes of one short chat line on the wire: a version-2 envelope (body
    /// padded to 256) in a batch of one, sealed (16), chunked (1), in a
    /// WebSocket frame (4).
    static func envelopeWireBytes() -> Int {
        guard let key = try? SigningKey.generate(),
              let e = try? Envelope.sign(by: key, sequence: 1, previous: .zero, dependencies: [], timestamp: 1,
                                         room: RoomID.publicRoom(.general, network: .derived(fromName: "lan")), kind: .text,
                                         body: [UInt8](repeating: 0, count: 256))
        else { return 400 }
        return GossipMessage.envelopes([CarriedEnvelope(hops: 0, envelope: e)]).encoded.count + 16 + 1 + 4
    }

    /// One id on a lazy link: author 32 and a sequence varint (batched once a second per link).
    static let announcementBytes = 35

    public static func run(_ s: Settings) -> Result {
        var r = Result(settings: s)
        var random = SplitMix(seed: s.seed)
        let mesh = s.maximumLinks == 0
        var network = MembershipNetwork(count: s.nodes, maximumLinks: s.maximumLinks, seed: s.seed)
        var push = TreePush(tree: !mesh, seed: s.seed &+ 7)
        r.envelopeBytes = envelopeWireBytes()
        if mesh {
            push.setLinks((0..<s.nodes).map { a in (0..<s.nodes).filter { $0 != a } })
        } else {
            for node in 0..<s.nodes {
                var heard: Set<Int> = []
                while heard.count < min(s.discoveryView, s.nodes - 1) {
                    let other = Int.random(in: 0..<s.nodes, using: &random)
                    if other != node { heard.insert(other) }
                }
                for other in heard.sorted() { network.input(node, .known(other)) }
            }
            for _ in 0..<60 {
                network.tick()
                r.maximumDegree = max(r.maximumDegree, network.links().map(\.count).max() ?? 0)
            }
            push.setLinks(network.links())
        }
        let alive = Array(repeating: true, count: s.nodes)
        // Authors live on nodes: author a posts from node a mod n.
        var hopCounts = Array(repeating: 0, count: 64)
        var sends = 0, duplicates = 0, announcements = 0, firstSends = 0, firstDuplicates = 0
        for i in 0..<s.messages {
            if !mesh, i > 0, i % 1_000 == 0 {
                // A second passes every thousand messages: shuffles, timeouts.
                network.tick()
                push.setLinks(network.links())
            }
            let author = i % s.authors
            let outcome = push.spread(author: author, from: author % s.nodes, alive: alive)
            r.missed += i >= s.warmup ? s.nodes - outcome.reached : 0
            for h in outcome.hops where h > 0 && i >= s.warmup { hopCounts[min(h, 63)] += 1 }
            if i < s.authors && !mesh {
                r.firstMessages += 1
                firstSends += outcome.fullSends
                firstDuplicates += outcome.duplicates
                continue
            }
            guard i >= s.warmup else { continue }
            r.measured += 1
            sends += outcome.fullSends
            duplicates += outcome.duplicates
            announcements += outcome.announcements
            r.grafts += outcome.grafts
            r.prunes += outcome.prunes
        }
        r.firstSendsPerMessage = Double(firstSends) / Double(max(1, r.firstMessages))
        r.firstDuplicatesPerNode = Double(firstDuplicates) / Double(max(1, r.firstMessages)) / Double(s.nodes)
        let links = push.links.map(\.count)
        r.maximumDegree = max(r.maximumDegree, links.max() ?? 0)
        r.minimumDegree = links.min() ?? 0
        r.meanDegree = Double(links.reduce(0, +)) / Double(max(1, s.nodes))
        r.asymmetric = mesh ? 0 : network.asymmetric
        let measured = Double(max(1, r.measured))
        r.fullSendsPerMessage = Double(sends) / measured
        r.duplicatesPerNodePerMessage = Double(duplicates) / measured / Double(s.nodes)
        r.announcementsPerMessage = Double(announcements) / measured
        r.bytesPerMessagePerNode = (r.fullSendsPerMessage * Double(r.envelopeBytes) + r.announcementsPerMessage * Double(announcementBytes)) / Double(s.nodes)
        (r.hopMedian, r.hopP99, r.hopWorst) = percentiles(hopCounts)
        if !mesh, s.killFraction > 0 { heal(&r, network: &network, push: &push, random: &random) }
        return r
    }

    /// 50th, 99th percentile and largest of a histogram.
    static func percentiles(_ counts: [Int]) -> (Int, Int, Int) {
        let total = counts.reduce(0, +)
        guard total > 0 else { return (0, 0, 0) }
        var seen = 0, median = 0, p99 = 0
        for (h, c) in counts.enumerated() where c > 0 {
            if seen < total / 2 && seen + c >= total / 2 { median = h }
            if seen < total * 99 / 100 && seen + c >= total * 99 / 100 { p99 = h }
            seen += c
        }
        return (median, p99, counts.lastIndex { $0 > 0 } ?? 0)
    }
}

extension ScaleRun {
    /// Kills `killFraction` of the nodes at once, then runs a minute of
    /// seconds: the membership heals, `healRate` messages a second are
    /// posted by survivors, and each message not yet everywhere is repaired
    /// each second over the links of that second (ids and grafts, or the
    /// clock exchange of a new link).
    static func heal(_ r: inout Result, network: inout MembershipNetwork, push: inout TreePush, random: inout SplitMix) {
        let s = r.settings
        var dead: Set<Int> = []
        while dead.count < Int(Double(s.nodes) * s.killFraction) { dead.insert(Int.random(in: 0..<s.nodes, using: &random)) }
        r.killed = dead.count
        network.kill(dead)
        let alive = network.alive
        let survivors = network.living
        struct Pending { var author: Int; var posted: Double; var holders: Set<Int>; var done: Double? }
        var pending: [Pending] = []
        let start = network.now
        for second in 0..<60 {
            let now = network.now
            push.setLinks(network.links())
            let degrees = survivors.map { push.links[$0].count }
            r.degreeWhileHealing = max(r.degreeWhileHealing, degrees.max() ?? 0)
            if r.linksBackAfter == nil, degrees.max() ?? 0 <= s.maximumLinks, network.asymmetric == 0, connected(push.links, survivors) {
                r.linksBackAfter = now - start
            }
            // What is not everywhere is repaired from its holders' neighbours.
            for i in pending.indices where pending[i].done == nil {
                let frontier = survivors.filter { !pending[i].holders.contains($0) && push.links[$0].contains { pending[i].holders.contains($0) } }
                guard !frontier.isEmpty else { continue }
                let starts = frontier.map { (node: $0, time: Double.random(in: 0..<1, using: &random), hops: 1) }
                let outcome = push.spread(author: pending[i].author, from: starts, holders: pending[i].holders, alive: alive)
                var latest = 0.0
                for node in survivors where outcome.arrival[node].isFinite {
                    pending[i].holders.insert(node)
                    latest = max(latest, outcome.arrival[node])
                }
                if survivors.allSatisfy({ pending[i].holders.contains($0) }) { pending[i].done = now + latest }
            }
            guard second < 30 else { network.tick(); continue }
            for _ in 0..<s.healRate {
                let source = survivors[Int.random(in: 0..<survivors.count, using: &random)]
                let author = source
                let at = Double.random(in: 0..<1, using: &random)
                let outcome = push.spread(author: author, from: source, alive: alive)
                var holders: Set<Int> = []
                var latest = 0.0
                for node in survivors where outcome.arrival[node].isFinite {
                    holders.insert(node)
                    latest = max(latest, outcome.arrival[node])
                }
                let everywhere = holders.count == survivors.count
                pending.append(Pending(author: author, posted: now + at, holders: holders, done: everywhere ? now + at + latest : nil))
            }
            network.tick()
        }
        r.healMissed = pending.filter { $0.done == nil }.count
        r.worstDeliveryWhileHealing = pending.compactMap { p in p.done.map { $0 - p.posted } }.max()
    }

    static func connected(_ links: [[Int]], _ nodes: [Int]) -> Bool {
        guard let first = nodes.first else { return true }
        var seen: Set<Int> = [first]
        var stack = [first]
        while let a = stack.popLast() { for b in links[a] where seen.insert(b).inserted { stack.append(b) } }
        return nodes.allSatisfy { seen.contains($0) }
    }
}

extension ScaleRun.Result {
    /// The report, a line each.
    public var lines: [String] {
        let s = settings
        let bound = s.maximumLinks == 0 ? "none (full mesh, flood)" : "\(s.maximumLinks)"
        var out = [
            "nodes \(s.nodes), authors \(s.authors), messages \(s.messages), link bound \(bound), seed \(s.seed)",
            "  links per node: max \(maximumDegree), min \(minimumDegree), mean \(format(meanDegree)); one-sided active entries \(asymmetric)",
            "  delivered to all: \(missed == 0 ? "yes" : "NO, \(missed) (message, node) pairs missed")",
            "  hops: median \(hopMedian), p99 \(hopP99), worst \(hopWorst) (ceil(log2 n) + 2 = \(s.hopAim))",
            "  once settled (\(measured) messages, each author's first left out): full envelopes sent per message (all nodes) \(format(fullSendsPerMessage)) (a spanning tree: \(s.nodes - 1))",
            "  once settled: duplicate full deliveries per node per message \(format(duplicatesPerNodePerMessage, 3))",
            "  once settled: ids announced per message (all nodes) \(format(announcementsPerMessage)); grafts \(grafts), prunes \(prunes)",
            "  once settled: wire bytes per message per node \(format(bytesPerMessagePerNode)) (envelope \(envelopeBytes) B, id \(ScaleRun.announcementBytes) B)",
        ]
        if firstMessages > 0 {
            out.append("  an author's first message (\(firstMessages) of them) floods and prunes: \(format(firstSendsPerMessage)) full sends, \(format(firstDuplicatesPerNode, 2)) duplicates per node")
        }
        if killed > 0 {
            out.append("  killed \(killed) at once: links back within the bound after \(linksBackAfter.map { "\(Int($0)) s" } ?? "NOT within 60 s"); most links on a survivor meanwhile \(degreeWhileHealing)")
            out.append("  messages posted while healing (\(settings.healRate)/s for 30 s): worst time to reach every survivor \(worstDeliveryWhileHealing.map { format($0, 2) + " s" } ?? "-"); never delivered: \(healMissed)")
        }
        out.append("  (\(format(seconds, 1)) s to simulate)")
        return out
    }
}

func ceilLog2(_ n: Int) -> Int {
    var bits = 0
    while (1 << bits) < n { bits += 1 }
    return bits
}

func format(_ value: Double, _ decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return "\(rounded)"
}
