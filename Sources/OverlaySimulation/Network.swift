import NodeCore
// The seeded generator every run here takes (and its users with it).
@_exported import Seeded

/// Many `Membership` cores, set as the node sets them (`Overlay`), and the
/// links between them: a link is up while either end keeps the other in its
/// active view (the node closes a link only when neither wants it). A
/// message to a dead node comes back to its sender as `unreachable`, and a
/// death is noticed by every node linked to it (a killed process's sockets
/// close at once).
public struct MembershipNetwork {
    public typealias Node = Membership<Int>
    public private(set) var nodes: [Node] = []
    public private(set) var alive: [Bool] = []
    public private(set) var now = 0.0
    private var queue: [(Int, Node.Input)] = []

    /// `count` nodes with the node's settings for `maximumLinks` (0: every
    /// node linked to every other, the full mesh of earlier builds).
    public init(count: Int, maximumLinks: Int, seed: UInt64) {
        var overlay = Overlay.Configuration()
        overlay.maximumLinks = maximumLinks
        let settings: Node.Configuration = Overlay.membershipSettings(overlay)
        for id in 0..<count {
            nodes.append(Node(me: id, configuration: settings, random: SplitMix(seed: seed &* 1_000_003 &+ UInt64(id))))
            alive.append(true)
        }
    }

    public mutating func input(_ node: Int, _ input: Node.Input) {
        queue.append((node, input))
        run()
    }

    private mutating func run() {
        var head = 0
        while head < queue.count {
            let (node, input) = queue[head]
            head += 1
            guard alive[node] else { continue }
            for effect in nodes[node].handle(input, now: now) {
                guard case let .send(to, message) = effect else { continue }
                queue.append(alive[to] ? (to, .received(message, from: node)) : (node, .unreachable(to)))
            }
        }
        queue.removeAll(keepingCapacity: true)
    }

    public mutating func tick() {
        now += 1
        for node in nodes.indices where alive[node] { queue.append((node, .tick)) }
        run()
    }

    public mutating func kill(_ dead: Set<Int>) {
        for node in dead { alive[node] = false }
        for node in nodes.indices where alive[node] {
            for peer in nodes[node].active.sorted() where dead.contains(peer) { queue.append((node, .unreachable(peer))) }
        }
        run()
    }

    public var living: [Int] { nodes.indices.filter { alive[$0] } }

    /// Each living node's links (either end wants it), sorted.
    public func links() -> [[Int]] {
        var out = Array(repeating: Set<Int>(), count: nodes.count)
        for a in nodes.indices where alive[a] {
            for b in nodes[a].active where alive[b] {
                out[a].insert(b)
                out[b].insert(a)
            }
        }
        return out.map { $0.sorted() }
    }

    /// Active links one end holds and the other does not.
    public var asymmetric: Int {
        living.reduce(0) { sum, a in sum + nodes[a].active.filter { !nodes[$0].active.contains(a) }.count }
    }
}
