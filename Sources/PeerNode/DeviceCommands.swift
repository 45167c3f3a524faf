import ChatText
import Crypto
import Discovery
import Foundation
import Glibc
import Gossip
import NetworkText
import Store

/// `peernode device add` and `peernode device join CODE`: linking a new
/// machine to an account with a one-time code (docs/PROTOCOL.md §15). The
/// account's machine waits with the code; the new machine connects (at
/// `--peer`), both run the exchange, and the new machine leaves with its
/// certificate, the account's rooms and keys, nick, trust marks and blocks.
/// History follows through ordinary sync when it next runs.
enum DeviceCommands {
    /// Where `device add` listens unless `--listen` says otherwise.
    static let defaultListen = "0.0.0.0:7735"
    /// How long a code stays good.
    static let codeLifetime: Double = 600
    /// How long either side waits for the other's next frame.
    static let frameTimeout: Double = 30

    static func add(_ options: Options, environment: [String: String]) throws {
        let node = try Node(options: options, environment: environment)
        guard node.account == node.me else { throw NodeError.notAccountKey(node.account) }
        let offer = try LinkOffer(listen: options.listen, discovery: try discoveryConfiguration(options), network: node.network)
        writeLines(offer.instructions)
        let (device, name) = try offer.serve(identity: node.identity, network: node.network, grant: node.grant(for:name:), problem: printError)
        writeLines(["linked \(PeerText(name)) (\(device.shortFingerprint), id \(device.hex)) to your account"])
    }

    static func join(code typed: String, _ options: Options, environment: [String: String]) throws {
        guard let password = DeviceLink.password(typed) else {
            throw NodeError.badCommand("a code is \(DeviceLink.codeDigits) digits, as `peernode device add` printed it (1234-5678)")
        }
        let name = try Nick(options.deviceName ?? hostName()).value
        let node = try Node(options: options, environment: environment)
        let (host, port, expected) = try adderAddress(options, network: node.network)
        // An identity with devices, or one that is a device already, cannot join another account.
        guard node.account == node.me, try node.store.devices(of: node.me).isEmpty else {
            throw NodeError.alreadyInAccount(node.account)
        }
        let socket = try FramedSocket.connect(host: host, port: port, timeout: frameTimeout)
        var joiner = try DeviceLinkJoiner(code: password, network: node.network, device: node.me)
        try socket.send(joiner.hello.encoded)
        let confirm: [UInt8]
        do {
            confirm = try joiner.confirm(try socket.receive(limit: DeviceLink.answerSize), deviceName: name)
        } catch {
            // Another machine of the network may have announced itself first.
            guard expected != nil else { throw error }
            throw NodeError.badCommand("\(error): if the machine found at \(host):\(port) is not the one showing the code, "
                                       + "give --peer HOST:PORT as `device add` printed it")
        }
        try socket.send(confirm)
        let grant = try joiner.welcome(try socket.receive(limit: DeviceLink.maximumFrame))
        if let expected, grant.certificate.account != expected {
            throw NodeError.badCommand("the machine that answered is not the account that announced itself on the LAN")
        }
        if node.identityIsNew { try node.ownDurability.markKnown() }
        try node.accept(grant)
        let account = grant.certificate.account
        writeLines(["this machine (\(name), \(node.me.shortFingerprint)) is now a device of "
                    + "\(grant.nick.map { "\($0.value)·" } ?? "")\(account.shortFingerprint) (account \(account.hex))",
                    "\(grant.privateRooms.count) private and \(counted(grant.publicRooms.count, "public room")); start it with `peernode` to fetch the history"])
    }

    static func revoke(_ who: String, _ options: Options, environment: [String: String]) throws {
        let node = try Node(options: options, environment: environment)
        let (_, device) = try node.devices.revoke(who)
        writeLines(["revoked \(PeerText(device.name)) (\(device.device.shortFingerprint)): what it signs after its message \(node.devices.revokedAfter[device.device] ?? 0) is refused "
                    + "once the others get this (start peernode to send it)"])
    }

    /// Where `device add` waits: `--peer`, else the first adder of our
    /// network heard on the LAN within `LinkingBeacon.findTimeout` (and the
    /// account it announced).
    static func adderAddress(_ options: Options, network: NetworkKey) throws -> (host: String, port: UInt16, account: PublicKey?) {
        if let peer = options.peers.first {
            let address = peer.hasPrefix("ws://") ? String(peer.dropFirst(5)) : peer
            guard let (host, port) = PeerAddress.split(hostPort: address) else {
                throw NodeError.badAddress(option: "--peer", needs: "HOST:PORT", got: peer)
            }
            return (host, port, nil)
        }
        guard let configuration = try discoveryConfiguration(options) else {
            throw NodeError.badCommand("device join needs --peer HOST:PORT (the address `peernode device add` printed) when discovery is off")
        }
        let beacon = try LinkingBeacon(configuration: configuration, network: network)
        writeLines(["looking for `peernode device add` on this LAN (up to \(Int(LinkingBeacon.findTimeout)) s)…"])
        let clock = { ProcessInfo.processInfo.systemUptime }
        guard let found = beacon.find(until: clock() + LinkingBeacon.findTimeout, clock: clock, now: Node.now) else {
            throw NodeError.badCommand("no `peernode device add` of this network answered on the LAN within \(Int(LinkingBeacon.findTimeout)) s: "
                                       + "give --peer HOST:PORT as it printed")
        }
        writeLines(["found account \(found.account.shortFingerprint) at \(found.host):\(found.port)"])
        return (found.host, found.port, found.account)
    }

    /// This machine's host name as a device name, when it makes one.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "device" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).split(separator: ".").first.map(String.init) ?? ""
        return Nick.checked(String(name.prefix(DeviceCertificate.maximumNameLength)))?.value ?? "device"
    }
}
