import Gossip

/// How one envelope spreads over the links, by the rules of the node's tree
/// push (`Replicator+Tree.swift`, docs/PROTOCOL.md §11 "Tree push"), one
/// tree per author: a node that gets it first forwards it in full on the
/// links that are eager for its author (all but the one it came on) and as
/// an id on the others; a full copy that reaches a node which has it already
/// is a duplicate, and makes that link lazy for the author at both ends; a
/// node that gets only ids fetches it from the first announcer after the
/// graft timeout (ids go out at a tick, so an announcement waits for the
/// next one), and that link becomes eager. After one spread the links eager
/// for an author are exactly those its envelope arrived by: its tree. With
/// `tree` off every link stays eager: the flood of earlier builds.
///
/// Time is in seconds. One hop in full costs a random 0.2–1 ms (the link and
/// the node's turn); a repair through ids costs the tick the announcement
/// waits for, the graft timeout, the tick the graft is noticed at, and a
/// round trip.
public struct TreePush {
    public struct Outcome: Sendable {
        /// Full envelopes sent (pushes, duplicates included, and fetches after a graft).
        public var fullSends = 0
        /// Full envelopes that reached a node which had the envelope already.
        public var duplicates = 0
        /// Ids announced on lazy links.
        public var announcements = 0
        public var grafts = 0
        public var prunes = 0
        /// Nodes that got the envelope, and each one's hop count and arrival time.
        public var reached = 0
        public var hops: [Int] = []
        public var arrival: [Double] = []
    }

    /// One author's tree: the links its envelopes last arrived by (each
    /// node's parent), as of the links of `epoch`. Every other link is lazy
    /// for this author, but for links that came up since.
    struct AuthorTree {
        var epoch: Int
        var parent: [Int32]
        /// The children of each node, for a walk: node i's are children[start[i]..<start[i + 1]].
        var start: [Int32]
        var children: [Int32]
        /// Every linked, living node was reached when it was made.
        var complete: Bool
    }

    public let tree: Bool
    /// Each node's links (from `MembershipNetwork.links`).
    public private(set) var links: [[Int]] = []
    /// When each link came up (the epoch of the links it first appeared in).
    private var born: [UInt64: Int] = [:]
    private var epoch = 0
    private var trees: [Int: AuthorTree] = [:]
    private var random: SplitMix

    public init(tree: Bool, seed: UInt64) {
        self.tree = tree
        random = SplitMix(seed: seed)
    }

    static func key(_ a: Int, _ b: Int) -> UInt64 { UInt64(min(a, b)) << 32 | UInt64(max(a, b)) }

    /// The links now up. A new link starts eager for every author.
    public mutating func setLinks(_ next: [[Int]]) {
        guard next != links else { return }
        epoch += 1
        var live: [UInt64: Int] = [:]
        for (a, peers) in next.enumerated() {
            for b in peers where a < b { live[Self.key(a, b)] = born[Self.key(a, b)] ?? epoch }
        }
        born = live
        links = next
    }

    public var linkCount: Int { born.count }

    /// Whether the link a–b is eager for an author with this tree.
    private func eager(_ a: Int, _ b: Int, _ t: AuthorTree?) -> Bool {
        guard tree, let t else { return true }
        return t.parent[a] == Int32(b) || t.parent[b] == Int32(a) || (born[Self.key(a, b)] ?? 0) > t.epoch
    }

    /// Spreads `author`'s envelope, posted at time 0 by `source`.
    public mutating func spread(author: Int, from source: Int, alive: [Bool]) -> Outcome {
        if tree, let t = trees[author], t.complete, t.epoch == epoch { return walk(t, from: source) }
        return spread(author: author, from: [(source, 0, 0)], holders: [], alive: alive)
    }

    /// Spreads from nodes that hold it at the given times and hops (a post,
    /// or a repair round), to the rest; `holders` have it already.
    public mutating func spread(author: Int, from starts: [(node: Int, time: Double, hops: Int)], holders: Set<Int>, alive: [Bool]) -> Outcome {
        var outcome = Outcome()
        let n = links.count
        let old = trees[author]
        outcome.hops = Array(repeating: -1, count: n)
        outcome.arrival = Array(repeating: .infinity, count: n)
        var parent = old?.parent ?? Array(repeating: -1, count: n)
        var heap = ArrivalHeap()
        var held = Array(repeating: false, count: n)
        for node in holders { held[node] = true }
        for start in starts {
            heap.push(Arrival(time: start.time, node: start.node, from: -1, lazy: false, hops: start.hops))
            parent[start.node] = -1
        }
        var pruned: Set<UInt64> = []
        while let a = heap.pop() {
            if held[a.node] {
                // A full copy to a node that has it: a duplicate, and the link goes lazy for this author.
                if a.from >= 0 && !a.lazy {
                    outcome.duplicates += 1
                    if tree { pruned.insert(Self.key(a.from, a.node)) }
                }
                continue
            }
            held[a.node] = true
            outcome.reached += 1
            outcome.hops[a.node] = a.hops
            outcome.arrival[a.node] = a.time
            if a.from >= 0 { parent[a.node] = Int32(a.from) }
            if a.lazy {
                // Fetched after a graft: the link is eager again, and the envelope came in full.
                outcome.grafts += 1
                outcome.fullSends += 1
            }
            // Past the hop limit an envelope is forwarded no further (the clock exchange brings it).
            guard a.hops + 1 < Int(CarriedEnvelope.maximumHops) else { continue }
            for b in links[a.node] where b != a.from && alive[b] {
                if eager(a.node, b, old) {
                    outcome.fullSends += 1
                    heap.push(Arrival(time: a.time + hopDelay(), node: b, from: a.node, lazy: false, hops: a.hops + 1))
                } else {
                    outcome.announcements += 1
                    let repair = Double.random(in: 0..<1, using: &random) + Replicator.graftTimeout + Double.random(in: 0..<1, using: &random) + 2 * hopDelay()
                    heap.push(Arrival(time: a.time + repair, node: b, from: a.node, lazy: true, hops: a.hops + 1))
                }
            }
        }
        outcome.prunes = pruned.count
        if tree {
            let linked = links.indices.filter { alive[$0] && !links[$0].isEmpty }
            trees[author] = Self.made(parent: parent, epoch: epoch, complete: linked.allSatisfy { held[$0] })
        }
        return outcome
    }

    static func made(parent: [Int32], epoch: Int, complete: Bool) -> AuthorTree {
        var start = Array(repeating: Int32(0), count: parent.count + 1)
        for p in parent where p >= 0 { start[Int(p) + 1] += 1 }
        for i in 0..<parent.count { start[i + 1] += start[i] }
        var fill = start
        var children = Array(repeating: Int32(0), count: Int(start[parent.count]))
        for (child, p) in parent.enumerated() where p >= 0 {
            children[Int(fill[Int(p)])] = Int32(child)
            fill[Int(p)] += 1
        }
        return AuthorTree(epoch: epoch, parent: parent, start: start, children: children, complete: complete)
    }

    private mutating func hopDelay() -> Double { Double.random(in: 0.000_4...0.000_8, using: &random) }

    /// The spread down an author's settled tree: every node once, no
    /// duplicate, an id on every other link both ways.
    private mutating func walk(_ t: AuthorTree, from source: Int) -> Outcome {
        var outcome = Outcome()
        outcome.hops = Array(repeating: -1, count: links.count)
        outcome.arrival = Array(repeating: .infinity, count: links.count)
        outcome.hops[source] = 0
        outcome.arrival[source] = 0
        outcome.reached = 1
        var stack = [source]
        while let a = stack.popLast() {
            guard outcome.hops[a] + 1 < Int(CarriedEnvelope.maximumHops) else { continue }
            for i in Int(t.start[a])..<Int(t.start[a + 1]) {
                let b = Int(t.children[i])
                outcome.hops[b] = outcome.hops[a] + 1
                outcome.arrival[b] = outcome.arrival[a] + hopDelay()
                outcome.reached += 1
                outcome.fullSends += 1
                stack.append(b)
            }
        }
        outcome.announcements = 2 * (linkCount - (outcome.reached - 1))
        return outcome
    }
}

struct Arrival {
    let time: Double
    let node: Int
    let from: Int
    let lazy: Bool
    let hops: Int
}

/// A binary min-heap of arrivals by time.
struct ArrivalHeap {
    private var items: [Arrival] = []

    mutating func push(_ a: Arrival) {
        items.append(a)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].time < items[parent].time else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Arrival? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        guard !items.isEmpty else { return top }
        items[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < items.count && items[l].time < items[smallest].time { smallest = l }
            if r < items.count && items[r].time < items[smallest].time { smallest = r }
            guard smallest != i else { break }
            items.swapAt(i, smallest)
            i = smallest
        }
        return top
    }
}
