import Crypto
import NetworkText
import NodeCore
@testable import PeerNode
import Testing

/// A change another device of ours made, as the terminal and `--json` say
/// it: by that device (its name and key), never by the account, which every
/// device shares.
@Suite("A followed change names the device that made it")
struct FollowedLineTests {
    @Test("the terminal line names the device and its short fingerprint, its name sanitized; --json's device is the device's key")
    func namesTheDevice() throws {
        let device = try SigningKey.generate().publicKey
        let event = NodeEvent.followed(change: "joined", about: "#lunch", device: device, name: "laptop\u{1b}[2J")
        #expect(TerminalPresenter.lines(event) == ["-- following your device laptop^[[2J (\(device.shortFingerprint)): joined #lunch"])
        let json = JSONPresenter.lines(event)
        #expect(json.count == 1 && json[0].contains("\"device\":\"\(device.hex)\""), "\(json)")
        let unnamed = NodeEvent.followed(change: "trusted", about: "x", device: device, name: nil)
        #expect(TerminalPresenter.lines(unnamed) == ["-- following your device (\(device.shortFingerprint)): trusted x"])
    }
}

@Suite("A device's nick line")
struct DeviceNickLineTests {
    @Test("a new device signing its account's nick unchanged gets no line; a change, a first nick, or the account's own line does")
    func deviceNick() throws {
        let (account, device) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        let alice = PeerText("alice")
        #expect(!NetworkNode.showsNick(by: device, account: account, before: alice, after: alice))
        #expect(NetworkNode.showsNick(by: device, account: account, before: alice, after: PeerText("ally")))
        #expect(NetworkNode.showsNick(by: device, account: account, before: nil, after: alice))
        #expect(NetworkNode.showsNick(by: account, account: account, before: alice, after: alice))
    }
}

@Suite("A link to someone's device")
struct DeviceLinkUpTests {
    @Test("peer_up's id is the linked node (as peer_down's), with its account beside it; the terminal names the device")
    func linkUp() throws {
        let (account, device) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        let alice = Person(key: account, nick: PeerText("alice"), trusted: false, lookAlike: false, forked: false)
        let up = NodeEvent.peerUp(alice, address: "10.0.0.7:7733", node: device, device: "laptop")
        let json = JSONPresenter.lines(up).joined()
        #expect(json.contains("\"id\":\"\(device.hex)\"") && json.contains("\"account\":\"\(account.hex)\""), "\(json)")
        #expect(TerminalPresenter.lines(up) == ["-- linked to alice·\(account.shortFingerprint) (device laptop \(device.shortFingerprint)) at 10.0.0.7:7733"])
        let itself = NodeEvent.peerUp(alice, address: "10.0.0.7:7733", node: account, device: nil)
        #expect(!JSONPresenter.lines(itself).joined().contains("account"))
        #expect(TerminalPresenter.lines(itself) == ["-- linked to alice·\(account.shortFingerprint) at 10.0.0.7:7733"])
    }
}

@Suite("A peer of an older version")
struct OlderPeerLineTests {
    @Test("the terminal says what is held back from it, its nick sanitized; --json gives older_peer with its link version and the newest")
    func olderPeer() throws {
        let key = try SigningKey.generate().publicKey
        let bob = Person(key: key, nick: PeerText("bob\u{1b}[2J"), trusted: false, lookAlike: false, forked: false)
        let event = NodeEvent.olderPeer(bob, node: key, linkVersion: 9)
        #expect(TerminalPresenter.lines(event)
                == ["-- bob^[[2J·\(key.shortFingerprint) runs an older peernode (link version 9): what you write now will not reach it until it is upgraded"])
        let json = JSONPresenter.lines(event).joined()
        #expect(json.contains("\"type\":\"older_peer\"") && json.contains("\"link_version\":9") && json.contains("\"newest\":10")
                && json.contains("\"id\":\"\(key.hex)\"") && !json.contains("\u{1b}"), "\(json)")
    }
}

/// Which links a person is told of (`LinkLines`).
@Suite("Link lines at the terminal")
struct LinkLinesTests {
    static func bob(_ key: PublicKey) -> Person { Person(key: key, nick: PeerText("bob"), trusted: false, lookAlike: false, forked: false) }

    static func up(_ key: PublicKey) -> NodeEvent {
        .peerUp(Person(key: key, nick: PeerText("bob"), trusted: false, lookAlike: false, forked: false), address: "10.0.0.7:7733", node: key, device: nil)
    }

    @Test("a neighbour's link is told of at once; one being asked is told of once it settles; one refused as not a neighbour is never told of; one closed for another reason is told of with its reason")
    func lines() throws {
        let (a, b, c, d) = (try SigningKey.generate().publicKey, try SigningKey.generate().publicKey,
                            try SigningKey.generate().publicKey, try SigningKey.generate().publicKey)
        var lines = LinkLines()
        #expect(lines.up([Self.up(a)], remote: a, settled: true).count == 1)
        #expect(lines.up([Self.up(b)], remote: b, settled: false).isEmpty)
        #expect(lines.up([Self.up(c)], remote: c, settled: false).isEmpty)
        #expect(lines.up([Self.up(d)], remote: d, settled: false).isEmpty)
        #expect(lines.unsettled == [b, c, d].sorted())
        // b becomes a neighbour: its line now, and its close later is told of.
        #expect(lines.settled(b).count == 1 && lines.settled(b).isEmpty)
        let notNeighbour = PeerText(LinkCore.notNeighbourReason)
        #expect(lines.down(.peerDown(b, reason: notNeighbour, person: Self.bob(b)), remote: b, reason: notNeighbour).count == 1)
        // c was asked and refused: nothing, either way.
        #expect(lines.down(.peerDown(c, reason: notNeighbour, person: Self.bob(c)), remote: c, reason: notNeighbour).isEmpty)
        // d closed with a reason of its own before it settled: both lines, the reason shown (through the one sanitizing path).
        let bye = PeerText("bye\u{1B}[2J")
        let told = lines.down(.peerDown(d, reason: bye, person: Self.bob(d)), remote: d, reason: bye)
        #expect(told.count == 2 && told.flatMap(TerminalPresenter.lines).last?.contains("-- link to bob·\(d.shortFingerprint) closed: bye") == true, "\(told.flatMap(TerminalPresenter.lines))")
        #expect(lines.unsettled.isEmpty)
        // A close with an empty reason says none (not "closed:" and nothing).
        #expect(TerminalPresenter.lines(.peerDown(d, reason: PeerText(""), person: Self.bob(d))) == ["-- link to bob·\(d.shortFingerprint) closed"])
        // What is said with a link line (an older peer) waits with it and comes after it.
        let older = NodeEvent.olderPeer(Self.bob(a), node: a, linkVersion: 9)
        #expect(lines.up([Self.up(a), older], remote: a, settled: false).isEmpty)
        let both = lines.settled(a).flatMap(TerminalPresenter.lines)
        #expect(both.count == 2 && both[0].hasPrefix("-- linked to bob") && both[1].contains("runs an older peernode"), "\(both)")
    }
}
