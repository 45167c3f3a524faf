import NodeCore
import TestSupport
import Testing

/// Many `Membership` cores and the messages between them, with a fake clock:
/// a message to a dead node comes back to its sender as `unreachable`, and a
/// node's death is noticed by everyone linked to it.
private struct Overlay {
    typealias Node = Membership<Int>
    var nodes: [Node] = []
    var alive: [Bool] = []
    var now = 0.0
    private var queue: [(Int, Node.Input)] = []
    let seed: UInt64

    init(seed: UInt64) { self.seed = seed }

    mutating func add() -> Int {
        let id = nodes.count
        nodes.append(Node(me: id, random: SeededRandom(seed: seed &* 1_000_003 &+ UInt64(id))))
        alive.append(true)
        return id
    }

    mutating func input(_ node: Int, _ input: Node.Input) {
        queue.append((node, input))
        run()
    }

    mutating func run() {
        var head = 0
        while head < queue.count {
            let (node, input) = queue[head]
            head += 1
            if head > 5_000_000 {
                Issue.record("the overlay never went quiet")
                break
            }
            guard alive[node] else { continue }
            for effect in nodes[node].handle(input, now: now) {
                guard case let .send(to, message) = effect else { continue }
                queue.append(alive[to] ? (to, .received(message, from: node)) : (node, .unreachable(to)))
            }
        }
        queue.removeAll()
    }

    mutating func tick(_ seconds: Int = 1) {
        for _ in 0..<seconds {
            now += 1
            for node in nodes.indices where alive[node] { queue.append((node, .tick)) }
            run()
        }
    }

    mutating func kill(_ dead: Set<Int>) {
        for node in dead { alive[node] = false }
        for node in nodes.indices where alive[node] {
            for peer in nodes[node].active.sorted() where dead.contains(peer) { queue.append((node, .unreachable(peer))) }
        }
        run()
    }

    var living: [Int] { nodes.indices.filter { alive[$0] } }

    /// Nodes reachable over active links from the first living node.
    var reached: Int {
        guard let start = living.first else { return 0 }
        var seen: Set<Int> = [start]
        var frontier = [start]
        while let node = frontier.popLast() {
            for peer in nodes[node].active where alive[peer] && seen.insert(peer).inserted { frontier.append(peer) }
        }
        return seen.count
    }

    /// Active links one side holds and the other does not, or that name a dead node.
    var brokenLinks: [(Int, Int)] {
        living.flatMap { node in nodes[node].active.filter { !alive[$0] || !nodes[$0].active.contains(node) }.map { (node, $0) } }
    }

    var degrees: [Int] { living.map { nodes[$0].active.count } }
}

@Suite("Membership (HyParView): bounded links on a thousand simulated nodes")
struct MembershipTests {
    /// `count` nodes, each joining through a random earlier one, then a minute of shuffles.
    private func grown(_ count: Int, seed: UInt64) -> Overlay {
        var overlay = Overlay(seed: seed)
        var random = SeededRandom(seed: seed)
        _ = overlay.add()
        for _ in 1..<count {
            let contact = Int.random(in: 0..<overlay.nodes.count, using: &random)
            let node = overlay.add()
            overlay.input(node, .join(contact))
        }
        overlay.tick(60)
        return overlay
    }

    @Test("1,000 nodes join one by one: every node is linked to at most 6, links are symmetric, and all 1,000 are one connected overlay", arguments: [1, 2] as [UInt64])
    func thousandJoin(seed: UInt64) {
        let overlay = grown(1_000, seed: seed)
        let bound = Membership<Int>.Configuration().activeSize
        #expect(overlay.degrees.max() ?? 0 <= bound)
        #expect(overlay.brokenLinks.isEmpty, "\(overlay.brokenLinks.prefix(5))")
        #expect(overlay.reached == 1_000)
        let mean = Double(overlay.degrees.reduce(0, +)) / 1_000
        #expect(mean >= 5.5, "mean active degree \(mean)")
        // Passive views filled by shuffles: each node knows more than it links.
        let passive = overlay.living.map { overlay.nodes[$0].passive.count }
        #expect(Double(passive.reduce(0, +)) / 1_000 >= 30, "mean passive view \(Double(passive.reduce(0, +)) / 1_000)")
    }

    @Test("""
        20 % of 1,000 nodes die at once: the survivors heal from their passive views, stay one overlay, within the bound, \
        none left with fewer than 4 links (one with 2 or 3, whose reserve is all full, asks urgently)
        """, arguments: [3, 6, 7] as [UInt64])
    func fifthDies(seed: UInt64) {
        var overlay = grown(1_000, seed: seed)
        var random = SeededRandom(seed: 99)
        var dead: Set<Int> = []
        while dead.count < 200 { dead.insert(Int.random(in: 0..<1_000, using: &random)) }
        overlay.kill(dead)
        overlay.tick(30)
        #expect(overlay.reached == 800)
        #expect(overlay.brokenLinks.isEmpty, "\(overlay.brokenLinks.prefix(5))")
        let degrees = overlay.degrees
        #expect(degrees.max() ?? 0 <= 6)
        #expect(degrees.min() ?? 0 >= 4 && degrees.filter { $0 >= 5 }.count * 100 >= degrees.count * 98,
                "\(Dictionary(grouping: degrees, by: { $0 }).mapValues(\.count))")
    }

    @Test("1,000 nodes that only know what discovery told them (10 random others each) link up into one overlay within the bound", arguments: [5, 6, 7] as [UInt64])
    func discoveryOnly(seed: UInt64) {
        var overlay = Overlay(seed: seed)
        var random = SeededRandom(seed: seed)
        for _ in 0..<1_000 { _ = overlay.add() }
        for node in 0..<1_000 {
            for _ in 0..<10 {
                let other = Int.random(in: 0..<1_000, using: &random)
                if other != node { overlay.input(node, .known(other)) }
            }
        }
        overlay.tick(60)
        #expect(overlay.reached == 1_000)
        #expect(overlay.brokenLinks.isEmpty, "\(overlay.brokenLinks.prefix(5))")
        #expect(overlay.degrees.max() ?? 0 <= 6)
        #expect(overlay.degrees.min() ?? 0 >= 3, "a node with \(overlay.degrees.min() ?? 0) links")
    }

    @Test("a shuffle naming 1,000 peers: 8 are taken (the limit), the rest counted; the passive view stays at its size")
    func longShuffle() {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        let limit = node.maximumShufflePeers
        #expect(limit == 8)
        _ = node.handle(.received(.shuffle(origin: 5, ttl: 1, peers: Array(1_000..<2_000)), from: 5), now: 0)
        #expect(node.passive.count == limit)
        #expect(node.refusedEntries == 1_000 - limit)
        // At the limit: all taken; one past it: one refused.
        var exact = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        _ = exact.handle(.received(.shuffle(origin: 5, ttl: 1, peers: Array(10..<(10 + limit))), from: 5), now: 0)
        #expect(exact.passive.count == limit && exact.refusedEntries == 0)
        var over = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        _ = over.handle(.received(.shuffle(origin: 5, ttl: 1, peers: Array(10..<(11 + limit))), from: 5), now: 0)
        #expect(over.passive.count == limit && over.refusedEntries == 1)
        // Many shuffles: the passive view never passes its size.
        for round in 0..<100 {
            _ = node.handle(.received(.shuffle(origin: 5, ttl: 1, peers: Array((round * 8)..<(round * 8 + 8))), from: 5), now: 0)
        }
        #expect(node.passive.count == Membership<Int>.Configuration().passiveSize)
    }

    @Test("a walk longer than the configured one is cut to it: a forward-join with ttl 255 goes on with at most activeWalk − 1")
    func walkCapped() {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        for peer in 1...3 { _ = node.handle(.received(.neighbor(urgent: true), from: peer), now: 0) }
        let effects = node.handle(.received(.forwardJoin(77, ttl: 255), from: 1), now: 0)
        let forwarded = effects.compactMap { effect -> UInt8? in
            if case let .send(_, .forwardJoin(77, ttl)) = effect { return ttl } else { return nil }
        }
        #expect(forwarded == [Membership<Int>.Configuration().activeWalk - 1])
    }

    @Test("""
        a forward-join ending here with a full view asks the joiner first: nothing is dropped for peers that never answer \
        (made up by a hostile neighbour, 40 in a row), a neighbour only once a real joiner says yes; with room, it is linked at once
        """)
    func forwardJoinAsksFirst() {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        for peer in 1...6 { _ = node.handle(.received(.neighbor(urgent: false), from: peer), now: 0) }
        #expect(node.handle(.received(.forwardJoin(77, ttl: 0), from: 1), now: 0) == [.send(77, .neighbor(urgent: true))])
        #expect(node.active == Set(1...6) && node.requested[77] != nil)
        // Remembered as urgent, so a second ask (after a tie-break) is urgent too.
        #expect(node.urgentlyRequested == [77])
        _ = node.handle(.unreachable(77), now: 1)
        for fake in 100..<140 {
            _ = node.handle(.received(.forwardJoin(fake, ttl: 0), from: 2), now: 2)
            _ = node.handle(.unreachable(fake), now: 2)
        }
        #expect(node.active == Set(1...6) && node.requested.isEmpty)
        _ = node.handle(.tick, now: 2)
        #expect(node.urgentlyRequested.isEmpty, "forgotten with the requests")
        _ = node.handle(.received(.forwardJoin(88, ttl: 0), from: 1), now: 3)
        let answered = node.handle(.received(.neighborReply(accepted: true), from: 88), now: 3)
        #expect(node.active.contains(88) && node.active.count == 6, "\(node.active)")
        #expect(answered.contains { if case .unlink = $0 { true } else { false } }, "\(answered)")

        var roomy = Membership<Int>(me: 0, random: SeededRandom(seed: 2))
        for peer in 1...3 { _ = roomy.handle(.received(.neighbor(urgent: false), from: peer), now: 0) }
        _ = roomy.handle(.received(.forwardJoin(77, ttl: 0), from: 1), now: 0)
        #expect(roomy.active.contains(77))
    }

    @Test("a neighbour request is refused when full unless urgent; an urgent one evicts a link, which is told and kept as passive")
    func neighbourRequests() {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: 1))
        for peer in 1...6 { _ = node.handle(.received(.neighbor(urgent: false), from: peer), now: 0) }
        #expect(node.active == Set(1...6))
        #expect(node.handle(.received(.neighbor(urgent: false), from: 7), now: 0) == [.send(7, .neighborReply(accepted: false))])
        let effects = node.handle(.received(.neighbor(urgent: true), from: 8), now: 0)
        #expect(node.active.count == 6 && node.active.contains(8))
        let evicted = effects.compactMap { effect -> Int? in if case let .send(p, .disconnect(alive: true)) = effect { return p } else { return nil } }
        #expect(evicted.count == 1 && node.passive.contains(evicted[0]) && !node.active.contains(evicted[0]))
        #expect(effects.contains(.send(8, .neighborReply(accepted: true))))
    }

    @Test("a full active view drops, for a newcomer, a neighbour of the host holding the most places: 50 joins and urgent requests from one address hold one place, whoever else is there; with every host distinct, any neighbour goes", arguments: [1, 2, 3] as [UInt64])
    func evictionByHost(seed: UInt64) {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: seed))
        for peer in 1...6 {
            node.hosts[peer] = "10.0.0.\(peer)"
            _ = node.handle(.received(.neighbor(urgent: false), from: peer), now: 0)
        }
        #expect(node.active == Set(1...6))
        for attacker in 100..<150 {
            node.hosts[attacker] = "10.6.6.6"
            _ = node.handle(.received(attacker % 2 == 0 ? .join : .neighbor(urgent: true), from: attacker), now: 0)
            #expect(node.active.count == 6)
            #expect(node.active.count { $0 >= 100 } == 1, "after attacker \(attacker): \(node.active.sorted())")
        }
        #expect(node.active.contains(149), "the newest identity of that host holds its place")
        // Two addresses: two places at most.
        node.hosts[200] = "10.7.7.7"
        _ = node.handle(.received(.join, from: 200), now: 0)
        node.hosts[201] = "10.7.7.7"
        _ = node.handle(.received(.join, from: 201), now: 0)
        #expect(node.active.count { $0 >= 100 } == 2 && node.active.contains(201) && node.active.contains(149))
    }

    @Test("without hosts (the simulator), an eviction picks among all neighbours as before: over many seeds every neighbour is dropped sometimes")
    func evictionWithoutHosts() {
        var dropped: Set<Int> = []
        for seed in 1...60 as ClosedRange<UInt64> {
            var node = Membership<Int>(me: 0, random: SeededRandom(seed: seed))
            for peer in 1...6 { _ = node.handle(.received(.neighbor(urgent: false), from: peer), now: 0) }
            _ = node.handle(.received(.join, from: 7), now: 0)
            dropped.formUnion(Set(1...6).subtracting(node.active))
        }
        #expect(dropped == Set(1...6))
    }

    @Test("healing asks reserve peers of hosts holding the fewest places first: a reserve of 30 identities at one address and 4 elsewhere gives at most one of the 30 a place", arguments: [1, 2, 3, 4] as [UInt64])
    func fillByHost(seed: UInt64) {
        var node = Membership<Int>(me: 0, random: SeededRandom(seed: seed))
        for peer in 1...2 {
            node.hosts[peer] = "10.0.0.\(peer)"
            _ = node.handle(.received(.neighbor(urgent: false), from: peer), now: 0)
        }
        // A shuffle's worth at a time, as a neighbour would send them.
        let crowd = Array(100..<130), others = Array(3...6)
        for start in stride(from: 0, to: crowd.count, by: 6) {
            let batch = Array(crowd[start..<min(start + 6, crowd.count)])
            for peer in batch { node.hosts[peer] = "10.6.6.6" }
            _ = node.handle(.received(.shuffleReply(peers: batch), from: 1), now: 0)
        }
        for peer in others { node.hosts[peer] = "10.0.0.\(peer)" }
        _ = node.handle(.received(.shuffleReply(peers: others), from: 2), now: 0)
        _ = node.handle(.tick, now: 1)
        let asked = Set(node.requested.keys)
        #expect(asked.count == 4)
        #expect(asked.count { $0 >= 100 } <= 1, "\(asked.sorted())")
    }
}

