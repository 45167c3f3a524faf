import Crypto
import Foundation
import Glibc
import ChatText
import Gossip
@testable import PeerNode
import Store
import TestSupport
import Testing
import WebSocket

/// Issue 13: each finding of the outside review, played as the attacker over
/// a real link (the `HostilePeer` of the forged-envelope tests).
@Suite("Hostile members", .serialized)
struct HostileMemberTests {
    static let network = HostilePeer.lan

    @Test("finding 1: a full clock naming two made-up authors at 2^63 is refused where it is decoded (the link closes with 1008); /sync, /peers and /stats still answer")
    func hugeClock() async throws {
        let (dir, node, port) = try await target()
        let made = try (0..<2).map { _ in try SigningKey.generate().publicKey }.sorted()
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: Self.network,
                                   messages: [.clock(entries: made.map { Dependency(author: $0, sequence: 1 << 63) }, full: true)])
        try await peer.attack(port: port, timeout: 20)
        #expect(peer.lock.withLock { peer.closed?.code } == .policyViolation)
        node.send("/sync")
        #expect(await node.wait { $0["type"] == "sync" }?["complete"] == "yes")
        node.send("/peers")
        #expect(await node.wait { $0["type"] == "peers" } != nil)
        node.send("/stats")
        let stats = await node.wait { $0["type"] == "stats" }
        #expect(stats?["bad_gossip_message"] == "1", "\(stats ?? [:])")
        #expect(await node.quit() == 0)
        withExtendedLifetime(dir) {}
    }

    @Test("finding 1: a clock saved for a peer by an earlier version, naming authors at 2^63 and 2^64-1, is summed without a trap at start (/sync, /peers at the terminal and in --json)")
    func poisonedSavedClock() async throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: try DataDirectory(path: dir.path))
            let made = try (0..<3).map { _ in try SigningKey.generate().publicKey }
            let declared = VectorClock([made[0]: 1 << 63, made[1]: 1 << 63, made[2]: .max])
            try store.savePeerClocks(PeerClocks(sent: VectorClock(), declared: declared), of: try SigningKey.generate().publicKey, at: 1)
        }
        let text = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/sync\n/peers\n")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("missing \(UInt64.max) messages"), "\(text.stdout)")
        let node = try NodeProcess(dir: dir.path, [])
        #expect(await started(node))
        node.send("/sync")
        #expect(await node.wait { $0["type"] == "sync" }?["missing"] == "\(UInt64.max)")
        #expect(await node.quit() == 0)
    }
}

extension HostileMemberTests {
    @Test("finding 6: a peer's WebSocket close reason reaches the terminal only sanitized (no title change, no screen clear, no fake message line)")
    func closeReason() async throws {
        let dir = TemporaryDirectory()
        let port = try freeLoopbackPort()
        let node = try TextNodeProcess(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:\(port)"])
        #expect(await node.waitFor("/help lists commands"))
        let evil = "bye\u{1B}]0;pwned\u{07}\u{1B}[2J\n[12:00] #general <alice·k3fq> send me your key"
        let peer = try HostilePeer(identity: try SigningKey.generate(), network: Self.network, messages: [], closeReason: evil)
        try await peer.attack(port: port, timeout: 20)
        #expect(await node.waitFor("closed: bye"))
        let out = await node.finish()
        #expect(!out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(out.debugDescription)")
        #expect(out.contains("closed: bye^[]0;pwned^G^[[2J^J[12:00] #general <alice·k3fq> send me your key"), "\(out)")
        // The line with the peer's words is one line: no second line starts with the fake message.
        #expect(!out.split(separator: "\n").contains { $0.hasPrefix("[12:00]") })
    }
}

/// A loopback port nobody listens on now (bound, read and released).
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return UInt16(bigEndian: address.sin_port)
}

/// A node as a person runs it without --json: its printed lines collected
/// (stdout is a pipe, so no prompt and no colours), stdin open until `finish`.
final class TextNodeProcess: @unchecked Sendable {
    let child: Child

    init(_ arguments: [String]) throws {
        child = try Child(PeerNodeProcess.binary, arguments, stdin: .pipe, stdout: .pipe, stderr: .stdout)
    }

    var output: String { child.output }

    func send(_ line: String) { child.send(line + "\n") }

    func waitFor(_ text: String, timeout: Double = 20) async -> Bool {
        await eventuallyValue(timeout) { self.output.contains(text) ? true : nil } ?? false
    }

    /// Ends the node (stdin closed) and returns all it printed.
    func finish() async -> String {
        child.closeInput()
        await child.exited()
        return output
    }
}

/// Finding 2: invites wait for the user, and can never replace a public or direct room.
@Suite("Hostile invites", .serialized)
struct HostileInviteTests {
    static let network = HostileMemberTests.network

    /// An invite from `attacker` to `victim`, as its first envelope, ready to push.
    /// `version` 2 seals it as this build does; 1 as earlier builds did.
    static func invite(from attacker: SigningKey, to victim: PublicKey, room: RoomID, name: String, key: [UInt8] = SymmetricKey.generate().exportedBytes,
                       version: UInt8 = Envelope.newestVersion) throws -> GossipMessage {
        let plain = Invite(room: room, key: key, name: try RoomName(name)).encoded
        let direct = try DirectKey(own: attacker, peer: victim)
        let e: Envelope
        if version == 1 {
            e = try Envelope.sign(by: attacker, sequence: 1, previous: .zero, dependencies: [], timestamp: Node.now(),
                                  room: RoomID.directVersion1(attacker.publicKey, victim, network: network), kind: .invite, body: try direct.seal(plain))
        } else {
            let dm = RoomID.direct(direct, network: network)
            let body = try SealedBody.seal(kind: .invite, content: plain, key: direct.conversationKey, author: attacker.publicKey, room: dm)
            e = try Envelope.sign(by: attacker, sequence: 1, previous: .zero, dependencies: [], timestamp: Node.now(), room: dm, body: body)
        }
        return .envelopes([CarriedEnvelope(hops: 0, envelope: e)])
    }

    /// Alice is attacked with `message`; then she posts in #general and Bob must read it.
    func attackAlice(_ make: (SigningKey, PublicKey) throws -> GossipMessage, check: (NodeProcess) async throws -> Void) async throws {
        let (dirs, a, b) = try await aliceAndBob()
        let port = try #require(a.url.split(separator: ":").last.flatMap { UInt16($0) })
        let attacker = try SigningKey.generate()
        let peer = try HostilePeer(identity: attacker, network: Self.network, messages: [try make(attacker, try PublicKey(hex: a.id))])
        let attack = Task { try await peer.attack(port: port, timeout: 3) }
        try await check(a)
        // An /accept in `check` opened the room it accepted: back to the public #general.
        a.send("/switch #general")
        a.send("still in the public #general")
        #expect(await b.wait { $0["type"] == "message" && $0["text"] == "still in the public #general" } != nil,
                "Alice's #general must keep the public key: Bob reads her post")
        b.send("bob in #general")
        #expect(await a.wait { $0["type"] == "message" && $0["text"] == "bob in #general" } != nil)
        await a.quit(); await b.quit()
        _ = try? await attack.value
        withExtendedLifetime(dirs) {}
    }

    @Test("an invite whose room id is the public #general id, named #general, is refused and counted; #general keeps its key")
    func publicRoomTakeover() async throws {
        try await attackAlice({ attacker, victim in
            try Self.invite(from: attacker, to: victim, room: RoomID.publicRoom(.general, network: Self.network), name: "#general")
        }, check: { a in
            let refused = await a.wait { $0["type"] == "invite_refused" }
            #expect(refused?["reason"]?.contains("public room") == true, "\(refused ?? [:])")
            #expect(!a.events.value.contains { $0["type"] == "invite" })
        })
    }

    @Test("an invite whose room id is the pair's direct-conversation id (either envelope version's) is refused", arguments: [UInt8(1), 2])
    func directRoomTakeover(version: UInt8) async throws {
        try await attackAlice({ attacker, victim in
            let dm = version == 1 ? RoomID.directVersion1(attacker.publicKey, victim, network: Self.network)
                : RoomID.direct(try DirectKey(own: attacker, peer: victim), network: Self.network)
            return try Self.invite(from: attacker, to: victim, room: dm, name: "#chat", version: version)
        }, check: { a in
            let refused = await a.wait { $0["type"] == "invite_refused" }
            #expect(refused?["reason"]?.contains("direct conversation") == true, "\(refused ?? [:])")
        })
    }

    @Test("an invite to a random room named #general waits for /accept; accepted, it becomes #general-2 and #general stays public")
    func nameTakeover() async throws {
        try await attackAlice({ attacker, victim in
            try Self.invite(from: attacker, to: victim, room: RoomID.random(), name: "#general")
        }, check: { a in
            let invite = await a.wait { $0["type"] == "invite" }
            #expect(invite?["room"] == "#general" && invite?["state"] == "pending", "\(invite ?? [:])")
            // Nothing changed yet; /accept names it apart from the public room.
            a.send("/accept #general")
            let accepted = await a.wait { $0["type"] == "invite_accepted" }
            #expect(accepted?["room"] == "#general-2", "\(accepted ?? [:])")
            a.send("/accept")
            #expect(await a.wait { $0["type"] == "error" && $0["error"]?.contains("no invite is waiting") == true } != nil)
        })
    }

    @Test("an invite changes nothing until answered: /invites lists it, /decline drops it, and it is kept across a restart")
    func waitsForTheUser() async throws {
        let (dir, node, port) = try await target()
        let attacker = try SigningKey.generate()
        let room = RoomID.random()
        let peer = try HostilePeer(identity: attacker, network: Self.network,
                                   messages: [try Self.invite(from: attacker, to: try PublicKey(hex: node.id), room: room, name: "#team")])
        let attack = Task { try await peer.attack(port: port, timeout: 4) }
        #expect(await node.wait { $0["type"] == "invite" && $0["room"] == "#team" } != nil)
        await node.quit()
        _ = try? await attack.value
        // After a restart the invite is still waiting, and nothing was joined.
        let again = try NodeProcess(dir: dir.path, [])
        #expect(await started(again))
        again.send("/invites")
        #expect(await again.wait { $0["type"] == "invite" && $0["room"] == "#team" && $0["by"] == attacker.publicKey.hex } != nil)
        // A script is told how many to expect first, and an empty answer is an answer (its head alone).
        let types = again.events.value.map { $0["type"] ?? "" }
        #expect(types.firstIndex(of: "invites").map { types.lastIndex(of: "invite") == $0 + 1 } == true, "/invites' head, then its row: \(types)")
        #expect(again.events.value.first { $0["type"] == "invites" }?["count"] == "1")
        again.send("/decline #team")
        #expect(await again.wait { $0["type"] == "invite_declined" && $0["room"] == "#team" } != nil)
        again.send("/invites")
        #expect(await again.wait { $0["type"] == "invites" && $0["count"] == "0" } != nil, "\(again.recent(3))")
        again.send("/accept #team")
        #expect(await again.wait { $0["type"] == "error" && $0["error"]?.contains("no invite to #team") == true } != nil)
        await again.quit()
        let text = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/rooms\n")
        #expect(!text.stdout.contains("#team"), "\(text.stdout)")
    }
}

extension HostileInviteTests {
    @Test("a database an earlier version let an invite take over (#general under the attacker's key, a private room named #general) is repaired at start, with a warning")
    func repairsEarlierTakeover() async throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: try DataDirectory(path: dir.path))
            try store.addPrivateRoom(RoomID.publicRoom(.general, network: Self.network), name: "#general", key: SymmetricKey.generate().exportedBytes)
            try store.addPrivateRoom(RoomID.random(), name: "#general", key: SymmetricKey.generate().exportedBytes)
        }
        let text = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/rooms\n")
        #expect(text.stdout.contains("-- ⚠ dropped the key an invite gave #general: it names a public room's id"), "\(text.stdout)")
        #expect(text.stdout.contains("-- ⚠ the private room named #general is now #general-2"), "\(text.stdout)")
        let store = try Store(directory: try DataDirectory(path: dir.path))
        #expect(try store.privateRooms().map(\.name) == ["#general-2"])
    }

    @Test("parsing /accept, /decline and /invites; /private refuses the name of a public room")
    func commands() async throws {
        #expect(ChatInput.parse("/accept") == .answerInvite(room: "", accept: true))
        #expect(ChatInput.parse("/accept #team") == .answerInvite(room: "#team", accept: true))
        #expect(ChatInput.parse("/decline #team") == .answerInvite(room: "#team", accept: false))
        #expect(ChatInput.parse("/invites") == .invites)
        if case .error = ChatInput.parse("/accept #a #b") {} else { Issue.record("two rooms must be an error") }
        // Held until the process is done (a folder released at its last use is removed before the node makes it again, and stays).
        let dir = TemporaryDirectory()
        let text = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/private #general\n")
        #expect(text.stdout.contains("error: #general is a public room you are in"), "\(text.stdout)")
        withExtendedLifetime(dir) {}
    }
}

extension HostileMemberTests {
    /// `texts` as one author's chain in #general (kind and timestamp each), pushed in one batch.
    static func chain(by author: SigningKey, _ items: [(Kind, String, UInt64)]) throws -> GossipMessage {
        let room = RoomID.publicRoom(.general, network: network)
        let key = network.publicRoomKey(roomName: RoomName.general.value)
        var previous = MessageID.zero
        var out: [CarriedEnvelope] = []
        for (i, (kind, text, timestamp)) in items.enumerated() {
            let body = try BodyCipher.seal(Array(text.utf8), key: key, author: author.publicKey, room: room, kind: kind)
            let e = try Envelope.sign(by: author, sequence: UInt64(i + 1), previous: previous, dependencies: [], timestamp: timestamp,
                                      room: room, kind: kind, body: body)
            previous = e.id
            out.append(CarriedEnvelope(hops: 0, envelope: e))
        }
        return .envelopes(out)
    }

    @Test("finding 9: a nick message is held to /nick's rules (no ·, no spaces): 'alice·k3fq (verified, trust me)' is not shown as a nick, in the handshake or in a message, and is counted")
    func fakeFingerprintNick() async throws {
        let (dir, node, port) = try await target()
        let attacker = try SigningKey.generate()
        let fake = "alice·k3fq (verified, trust me)"
        let peer = try HostilePeer(identity: attacker, network: Self.network,
                                   messages: [try Self.chain(by: attacker, [(.nick, fake, Node.now()), (.text, "hello", Node.now())])], nick: "alice·k3fq")
        let attack = Task { try await peer.attack(port: port, timeout: 3) }
        let up = await node.wait { $0["type"] == "peer_up" }
        #expect(up?["nick"] == "", "\(up ?? [:])")
        let message = await node.wait { $0["type"] == "message" && $0["text"] == "hello" }
        #expect(message?["nick"] == "", "\(message ?? [:])")
        node.send("/stats")
        #expect(await node.wait { $0["type"] == "stats" }?["bad_nick"] == "1")
        await node.quit()
        _ = try? await attack.value
        #expect(throws: EnvelopeError.self) { try Nick("alice·k3fq") }
        #expect(throws: EnvelopeError.self) { try Nick("alice∙k3fq") }
        #expect(try Nick("alice").value == "alice")
        withExtendedLifetime(dir) {}
    }

    @Test("finding 10: a timestamp of 2^63-1 does not pin a message as the newest line of the room: it is ordered as at most now + Store.maximumFutureSkew")
    func farFutureTimestamp() async throws {
        let (dir, node, port) = try await target()
        let attacker = try SigningKey.generate()
        let peer = try HostilePeer(identity: attacker, network: Self.network,
                                   messages: [try Self.chain(by: attacker, [(.text, "pinned for ever", UInt64(Int64.max))])])
        let attack = Task { try await peer.attack(port: port, timeout: 3) }
        #expect(await node.wait { $0["type"] == "message" && $0["text"] == "pinned for ever" } != nil)
        for i in 1...5 { node.send("later \(i)") }
        #expect(await node.wait { $0["type"] == "message" && $0["text"] == "later 5" } != nil)
        await node.quit()
        _ = try? await attack.value
        // In the room's order, the far-future line comes before what was posted after it (before,
        // every later line shared its causal time, 2^63-1, and was ordered by id: at random).
        let history = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/history 6\n")
        let lines = history.stdout.split(separator: "\n").filter { $0.contains("pinned for ever") || $0.contains("> later ") }
        #expect(lines.suffix(6).map { $0.contains("pinned") ? "pinned" : String($0.suffix(7)) } == ["pinned"] + (1...5).map { "later \($0)" },
                "\(history.stdout)")
    }
}

extension HostileMemberTests {
    @Test("finding 4: three clock messages of 4,096 made-up authors each: past Replicator.maximumUnknownAuthors they are refused and counted, the saved clock stays at the cap, and the node answers at once")
    func manyMadeUpAuthors() async throws {
        let (dir, node, port) = try await target()
        let attacker = try SigningKey.generate()
        let size = GossipMessage.maximumClockEntries
        let messages = try (0..<3).map { i -> GossipMessage in
            let entries = try (0..<size).map { _ in Dependency(author: try SigningKey.generate().publicKey, sequence: 1_000) }.sorted { $0.author < $1.author }
            return .clock(entries: entries, full: i == 0)
        }
        let peer = try HostilePeer(identity: attacker, network: Self.network, messages: messages)
        let attack = Task { try await peer.attack(port: port, timeout: 3) }
        #expect(await counterReaches(node, "clock_entries_ignored", "\(3 * size - Replicator.maximumUnknownAuthors)"))
        node.send("/sync")
        #expect(await node.wait(timeout: 5) { $0["type"] == "sync" }?["authors"] == "\(Replicator.maximumUnknownAuthors)")
        await node.quit()
        _ = try? await attack.value
        let store = try Store(directory: try DataDirectory(path: dir.path))
        #expect(try store.peerClocks(of: attacker.publicKey)?.declared?.entries.count == Replicator.maximumUnknownAuthors)
    }
}

extension HostileMemberTests {
    @Test("finding 13: a fork is shown (a fork event, the author's label, /sync at the terminal and in --json), and at most Store.maximumForksPerAuthor are kept per author")
    func forksShown() async throws {
        let (dir, node, port) = try await target()
        let attacker = try SigningKey.generate()
        let room = RoomID.publicRoom(.general, network: Self.network)
        let key = Self.network.publicRoomKey(roomName: RoomName.general.value)
        func envelope(_ sequence: UInt64, previous: MessageID, text: String) throws -> Envelope {
            try Envelope.sign(by: attacker, sequence: sequence, previous: previous, dependencies: [], timestamp: Node.now(), room: room, kind: .text,
                              body: try BodyCipher.seal(Array(text.utf8), key: key, author: attacker.publicKey, room: room, kind: .text))
        }
        let first = try envelope(1, previous: .zero, text: "one")
        // Twenty second messages, none linking to the first: each is a fork (a broken chain).
        let forks = try (0..<20).map { i in try envelope(2, previous: try MessageID(bytes: [UInt8](repeating: UInt8(i + 1), count: 32)), text: "fork \(i)") }
        let messages = [GossipMessage.envelopes([CarriedEnvelope(hops: 0, envelope: first)])]
            + forks.map { GossipMessage.envelopes([CarriedEnvelope(hops: 0, envelope: $0)]) }
        let peer = try HostilePeer(identity: attacker, network: Self.network, messages: messages)
        let attack = Task { try await peer.attack(port: port, timeout: 3) }
        let fork = await node.wait { $0["type"] == "fork" }
        #expect(fork?["author"] == attacker.publicKey.hex && fork?["seq"] == "2", "\(fork ?? [:])")
        node.send("/sync")
        #expect(await node.wait { $0["type"] == "sync" }?["forks"] == "1")
        // Every fork was looked at, or dropped as the same sequence already
        // on its way to the store (forks that come in one loop turn are
        // stored together: the first is checked, the rest are duplicates of
        // one in flight). The store keeps at most maximumForksPerAuthor
        // (StoreInsertTests/forkLimit checks the limit itself).
        func looked(_ stats: [String: String]) -> Int { Int(stats["fork"] ?? "0") ?? 0 }
        func dropped(_ stats: [String: String]) -> Int { Int(stats["envelopes_duplicate"] ?? "0") ?? 0 }
        var counted: (forks: Int, duplicates: Int)?
        let deadline = Deadline(20)
        while counted == nil, !deadline.passed {
            node.send("/stats")
            if let stats = await node.wait(timeout: 1, { $0["type"] == "stats" && looked($0) + dropped($0) == forks.count }) {
                counted = (looked(stats), dropped(stats))
            }
        }
        #expect(counted != nil, "every fork looked at or dropped as a duplicate")
        #expect(node.events.value.filter { $0["type"] == "fork" }.count == 1, "one event per author")
        await node.quit()
        _ = try? await attack.value
        do {
            let store = try Store(directory: try DataDirectory(path: dir.path))
            #expect(try store.forks().count == min(counted?.forks ?? 0, Int(Store.maximumForksPerAuthor)))
        }
        let text = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/sync\n/history 3\n")
        #expect(text.stdout.contains("1 author signed two different messages at one number"), "\(text.stdout)")
        #expect(text.stdout.contains("\(attacker.publicKey.shortFingerprint)(forked)> one"), "\(text.stdout)")
    }
}
