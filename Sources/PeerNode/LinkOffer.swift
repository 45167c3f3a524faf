import Crypto
import Discovery
import Foundation
import Gossip

/// One code offered to a new device: the listener, the code, and the LAN
/// beacon (`peernode device add`, or `/device add` in a running node).
final class LinkOffer: @unchecked Sendable {
    let listener: FramedListener
    let code: String
    let password: [UInt8]
    let beacon: LinkingBeacon?
    let shownHost: String
    let deadline = Date().addingTimeInterval(DeviceCommands.codeLifetime)

    /// Listens at `listen` (`DeviceCommands.defaultListen` when nil) and,
    /// with `discovery`, announces itself on the LAN.
    init(listen: String?, discovery: DiscoveryService.Configuration?, network: NetworkKey) throws {
        let wanted = listen ?? DeviceCommands.defaultListen
        guard let (host, port) = PeerAddress.split(hostPort: wanted) else {
            throw NodeError.badAddress(option: "--listen", needs: "HOST:PORT", got: wanted)
        }
        listener = try FramedListener(host: host, port: port)
        code = DeviceLink.newCode()
        guard let password = DeviceLink.password(code) else { throw NodeError.badCommand("bad code") }
        self.password = password
        shownHost = host == "0.0.0.0" ? "THIS-MACHINE" : host
        // On the LAN the new machine finds us by multicast; --peer works everywhere.
        var beacon: LinkingBeacon?
        if let configuration = discovery {
            do { beacon = try LinkingBeacon(configuration: configuration, network: network) } catch {
                printError("not announcing on the LAN (\(error)): the new machine needs --peer")
            }
        }
        self.beacon = beacon
    }

    /// What the person is told to type on the new machine.
    var instructions: [String] {
        ["code: \(code) (good for \(Int(DeviceCommands.codeLifetime / 60)) minutes and \(DeviceLink.maximumAttempts) tries)",
         "listening on \(shownHost == "THIS-MACHINE" ? "0.0.0.0" : shownHost):\(listener.port)",
         beacon == nil ? "on the new machine:" : "on the new machine: peernode device join \(code) (on this LAN), or from anywhere:",
         "  peernode device join \(code) --peer \(shownHost):\(listener.port)"]
    }

    /// Waits for the new device and links it: the device and its name.
    /// Throws when the code expires or after `DeviceLink.maximumAttempts`
    /// wrong tries. Blocking: the command's whole work, or a thread's.
    func serve(identity: SigningKey, network: NetworkKey, grant: (PublicKey, String) throws -> DeviceGrant,
               problem: (String) -> Void) throws -> (device: PublicKey, name: String) {
        var wrong = 0
        while wrong < DeviceLink.maximumAttempts {
            guard let (socket, from) = next(identity: identity) else {
                throw NodeError.badCommand("the code expired: nobody joined within \(Int(DeviceCommands.codeLifetime / 60)) minutes")
            }
            var adder = DeviceLinkAdder(code: password, network: network, account: identity.publicKey)
            do {
                try socket.send(try adder.answer(try socket.receive(limit: DeviceLink.helloSize)))
            } catch {
                // Nothing was computed from the code yet: no guess was made.
                problem("a failed link attempt from \(from): \(error)")
                continue
            }
            do {
                // Our answer lets whoever sent the hello test one guess of the
                // code: from here on, anything but the right tag spends a try
                // (a joiner that closes after reading it too).
                let name = try adder.confirmed(try socket.receive(limit: DeviceLink.maximumFrame))
                guard let device = adder.hello?.device else { continue }
                try socket.send(try adder.welcome(try grant(device, name)))
                return (device, name)
            } catch {
                wrong += 1
                problem("a wrong code from \(from) (\(wrong) of \(DeviceLink.maximumAttempts)): \(error)")
            }
        }
        throw DeviceLinkError.tooManyAttempts
    }

    /// The next connection, announcing on the LAN each `LinkingBeacon.interval` while none comes.
    private func next(identity: SigningKey) -> (FramedSocket, String)? {
        var nextBeacon = Date.distantPast
        while deadline.timeIntervalSinceNow > 0 {
            if let beacon, Date() >= nextBeacon {
                beacon.announce(by: identity, port: listener.port, now: Node.now())
                nextBeacon = Date().addingTimeInterval(LinkingBeacon.interval)
            }
            let wait = beacon == nil ? deadline.timeIntervalSinceNow : min(LinkingBeacon.interval, deadline.timeIntervalSinceNow)
            if let accepted = listener.accept(within: wait, timeout: DeviceCommands.frameTimeout) { return accepted }
        }
        return nil
    }
}
