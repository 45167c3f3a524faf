import Foundation
import Glibc
import TestSupport
import Testing

@Suite("Nodes over real sockets", .serialized)
struct NetworkTests {
    @Test("A–B–C linked only through B: A's messages reach C in order; B restarts and catches up")
    func chain() async throws {
        let (dirs, a, b, c) = try await chainOfThree()
        // At first contact each side already knows the other's nick (claimed in the handshake).
        #expect(a.events.value.first { $0["type"] == "peer_up" }?["nick"] == "bob")
        #expect(b.events.value.first { $0["type"] == "peer_up" && $0["id"] == a.id }?["nick"] == "alice")
        for i in 1...20 { a.send("m\(i)") }
        await c.wait { $0["text"] == "m20" }
        #expect(c.messages(from: a.id) == (1...20).map { "m\($0)" })

        // A direct message from A to C travels through B, and only C can read it.
        a.send("/msg \(c.id) for carol only")
        let dm = await c.wait { $0["kind"] == "dm" }
        #expect(dm?["text"] == "for carol only")
        #expect(dm?["to"] == c.id && dm?["author"] == a.id)
        #expect(dm?["room"] == nil)
        await a.wait { $0["kind"] == "dm" }
        #expect(!b.events.value.contains { $0["text"] == "for carol only" })
        a.send("/msg nobody-here hi")
        #expect(await a.wait { $0["type"] == "error" } != nil)

        // B dies; A posts; B comes back on the same data directory and catches up, and so does C.
        let bURL = b.url
        await b.kill()
        for i in 21...30 { a.send("m\(i)") }
        let b2 = try NodeProcess(dir: dirs[1].path, ["--peer", a.url, "--listen", String(bURL.dropFirst(5))])
        #expect(await started(b2))
        await b2.wait { $0["text"] == "m30" }
        #expect(b2.messages(from: a.id).suffix(10) == (21...30).map { "m\($0)" })
        await c.wait(timeout: 60) { $0["text"] == "m30" }
        #expect(c.messages(from: a.id) == (1...30).map { "m\($0)" })
        await a.quit(); await b2.quit(); await c.quit()
    }

    @Test("a node that starts after 1,000 messages gets all of them")
    func lateJoiner() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        for i in 1...1000 { a.send("late \(i)") }
        await a.wait(timeout: 60) { $0["text"] == "late 1000" }
        let c = try NodeProcess(dir: dirs[1].path, ["--peer", a.url])
        #expect(await started(c))
        await c.wait(timeout: 60) { $0["text"] == "late 1000" }
        #expect(c.messages(from: a.id) == (1...1000).map { "late \($0)" })
        // Caught up: /sync says so.
        c.send("/sync")
        let sync = await c.wait { $0["type"] == "sync" }
        #expect(sync?["complete"] == "yes" && sync?["missing"] == "0", "\(sync ?? [:])")
        await a.quit(); await c.quit()
    }

    @Test("two nodes that dial each other keep one link between them")
    func mutualDial() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        // Below the kernel's ephemeral range, so no other test's port 0 lands here.
        let portA = Int.random(in: 20_000..<30_000), portB = portA + 1
        let a = try NodeProcess(dir: dirs[0].path, ["--listen", "127.0.0.1:\(portA)", "--peer", "ws://127.0.0.1:\(portB)"])
        let b = try NodeProcess(dir: dirs[1].path, ["--listen", "127.0.0.1:\(portB)", "--peer", "ws://127.0.0.1:\(portA)"])
        #expect(await started(a))
        #expect(await started(b))
        #expect(await linked(a, to: b))
        #expect(await linked(b, to: a))
        b.send("both ways")
        #expect(await a.wait { $0["text"] == "both ways" } != nil)
        // The larger id's dialler comes round again, finds the pair linked and
        // skips the redial: no churn (LinkTableTests/mutualDial runs ten minutes of it).
        #expect(await counterAtLeast(a.id > b.id ? a : b, "redial_skipped_linked", 1))
        for node in [a, b] {
            #expect(node.events.value.filter { $0["type"] == "peer_up" }.count == 1)
            #expect(node.events.value.filter { $0["type"] == "peer_down" }.isEmpty)
        }
        await a.quit(); await b.quit()
    }

    @Test("a blocked identity is cut off, refused when it redials, and its messages are hidden")
    func block() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, [])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--peer", a.url])
        #expect(await started(b))
        #expect(await linked(a, to: b))
        b.send("before the block")
        #expect(await a.wait { $0["text"] == "before the block" } != nil)
        a.send("/block \(b.id)")
        #expect(await a.wait { $0["type"] == "blocked" && $0["id"] == b.id && $0["fp"]?.isEmpty == false } != nil, "a script is answered: \(a.recent(3))")
        #expect(await a.wait { $0["type"] == "peer_down" } != nil)
        b.send("after the block")
        // B redials (backoff from 0.5 s) and is refused each time.
        #expect(await counterAtLeast(a, "blocked", 2))
        #expect(a.events.value.filter { $0["type"] == "peer_up" }.count == 1)
        #expect(!a.events.value.contains { $0["text"] == "after the block" })
        a.send("/unblock \(b.id)")
        #expect(await a.wait { $0["type"] == "unblocked" && $0["id"] == b.id } != nil)
        #expect(await a.wait(timeout: 40) { $0["text"] == "after the block" } != nil)
        await a.quit(); await b.quit()
    }

    @Test("a node with another network key never links and receives nothing")
    func otherNetwork() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, [])
        #expect(await started(a))
        a.send("for my network only")
        let stranger = try NodeProcess(dir: dirs[1].path, ["--network", "elsewhere", "--peer", a.url])
        #expect(await started(stranger))
        // Two attempts refused (the stranger redials after its backoff), and nothing came of them.
        #expect(await counterAtLeast(a, "wrong_network_key", 2))
        #expect(!stranger.events.value.contains { $0["type"] == "peer_up" })
        #expect(stranger.messages(from: a.id).isEmpty)
        #expect(!a.events.value.contains { $0["type"] == "peer_up" })
        // Each refusal is counted by its reason, and /stats shows the count.
        let stats = a.events.value.last { $0["type"] == "stats" }
        #expect(Int(stats?["wrong_network_key"] ?? "0") ?? 0 >= 2, "\(stats ?? [:])")
        #expect(stats?["links"] == "0")
        await a.quit(); await stranger.quit()
    }

    @Test("a reconnect to a known peer sends a clock digest and what changed, not the whole clock")
    func reconnectClock() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, [])
        #expect(await started(a))
        var b = try NodeProcess(dir: dirs[1].path, ["--peer", a.url])
        #expect(await started(b))
        #expect(await linked(a, to: b))
        // Each side has the other's first clock once it has the other's message.
        a.send("from a")
        b.send("from b")
        #expect(await b.wait { $0["text"] == "from a" } != nil)
        #expect(await a.wait { $0["text"] == "from b" } != nil)
        await b.quit()
        #expect(await a.wait { $0["type"] == "peer_down" } != nil)
        a.send("while b was away")
        b = try NodeProcess(dir: dirs[1].path, ["--peer", a.url])
        #expect(await b.wait { $0["text"] == "while b was away" } != nil)
        for node in [a, b] { node.send("/stats") }
        let atA = await a.wait { $0["type"] == "stats" }, atB = await b.wait { $0["type"] == "stats" }
        // A: one full clock at first contact, then a digest; B (restarted): a digest only.
        #expect(atA?["clock_full_sent"] == "1" && atA?["clock_since_sent"] == "1", "\(atA ?? [:])")
        #expect(atB?["clock_full_sent"] == nil && atB?["clock_since_sent"] == "1", "\(atB ?? [:])")
        // Neither had to ask for the whole clock.
        #expect(atA?["full_clock_wanted_received"] == nil && atB?["full_clock_wanted_received"] == nil)
        // B's clock changed in two entries since it last declared it (a's post and its own):
        // type 1 ‖ digest 16 ‖ count 1 ‖ 2 × (author 32 ‖ sequence 1) = 84 bytes.
        #expect(atB?["clock_bytes_sent"] == "84", "\(atB ?? [:])")
        await a.quit(); await b.quit()
    }

    @Test("receipts: the author gets delivered and read events for each of its messages; /set receipts off stops read receipts")
    func receipts() async throws {
        let (dirs, a, b) = try await aliceAndBob()
        // Not a terminal: B sends read receipts only when told to.
        b.send("/set receipts on")
        a.send("first")
        a.send("second")
        let second = try #require(await a.wait { $0["text"] == "second" })
        let first = try #require(a.events.value.first { $0["text"] == "first" })
        for message in [first, second] {
            for state in ["delivered", "read"] {
                // A receipt waits for a quiet moment on the links (at most `backgroundDeferral`, 10 s): 10 s was too
                // tight a budget under the full parallel suite, where it failed once.
                #expect(await a.wait(timeout: 30) { $0["type"] == "receipt" && $0["id"] == message["id"] && $0["state"] == state } != nil,
                        "\(state) for \(message["text"] ?? "")")
            }
        }
        #expect(a.events.value.filter { $0["type"] == "receipt" }.allSatisfy { $0["by"] == b.id })
        // Stored by a peer comes first, as soon as B has stored them (a storage acknowledgement).
        for message in [first, second] {
            #expect(await a.wait(timeout: 5) { $0["type"] == "receipt" && $0["id"] == message["id"] && $0["state"] == "stored" } != nil)
        }
        // B's own messages get no receipts from itself, and receipts never show as messages.
        #expect(!b.events.value.contains { $0["type"] == "receipt" })
        #expect(!a.events.value.contains { $0["type"] == "message" && $0["kind"] != "text" && $0["kind"] != "action" })

        // Direct messages get receipts too (sealed to the author, like the message).
        a.send("/msg \(b.id) psst")
        let dm = try #require(await a.wait { $0["kind"] == "dm" && $0["text"] == "psst" })
        for state in ["delivered", "read"] {
            #expect(await a.wait(timeout: 10) { $0["type"] == "receipt" && $0["id"] == dm["id"] && $0["state"] == state } != nil, "\(state) for the DM")
        }

        b.send("/set receipts off")
        // Answered as a setting: once it is, the setting is in force.
        #expect(await b.wait { $0["type"] == "setting" && $0["key"] == "receipts" && $0["value"] == "off" } != nil, "\(b.recent(3))")
        a.send("third")
        let third = try #require(await a.wait { $0["text"] == "third" })
        #expect(await a.wait(timeout: 10) { $0["type"] == "receipt" && $0["id"] == third["id"] && $0["state"] == "delivered" } != nil)
        // A read receipt would have been posted with the delivered one, so before
        // anything B posts next: once A shows B's next line, none came.
        b.send("after the third")
        #expect(await a.wait { $0["text"] == "after the third" } != nil)
        #expect(!a.events.value.contains { $0["type"] == "receipt" && $0["id"] == third["id"] && $0["state"] == "read" })
        await a.quit(); await b.quit()
        withExtendedLifetime(dirs) {}  // the data directories outlive the nodes
    }

    @Test("a private room: invited members read and write it; a node that relays it cannot read it")
    func privateRoom() async throws {
        let (dirs, a, b, c) = try await chainOfThree()
        a.send("/private #team")
        a.send("/invite \(c.id) #team")
        a.send("the plan")
        let invite = await c.wait { $0["type"] == "invite" }
        #expect(invite?["by"] == a.id && invite?["room"] == "#team")
        // Nothing is joined until C says so; then the room's history shows.
        c.send("/accept #team")
        let message = await c.wait { $0["text"] == "the plan" }
        #expect(message?["room"] == "#team")
        // /accept opens the room: the next line goes there, not to #general where C was (issue 44).
        c.send("agreed")
        #expect(await a.wait { $0["text"] == "agreed" && $0["room"] == "#team" } != nil)
        #expect(!a.events.value.contains { $0["text"] == "agreed" && $0["room"] == "#general" })
        // B carried both messages and the invite, and can read none of them:
        // once B shows what A and C posted after them, it holds them.
        a.send("/join #general")
        a.send("after the plan")
        c.send("/join #general")
        c.send("after agreed")
        #expect(await b.wait { $0["text"] == "after the plan" } != nil)
        #expect(await b.wait { $0["text"] == "after agreed" } != nil)
        #expect(!b.events.value.contains { $0["text"] == "the plan" || $0["text"] == "agreed" || $0["type"] == "invite" })
        a.send("/invite \(c.id) #general")
        #expect(await a.wait { $0["type"] == "error" && ($0["error"] ?? "").contains("not a private room") } != nil)
        await a.quit(); await b.quit(); await c.quit()
        withExtendedLifetime(dirs) {}  // the data directories outlive the nodes
    }
}

