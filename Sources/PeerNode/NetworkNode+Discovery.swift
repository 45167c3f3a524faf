import Crypto
import Discovery
import Foundation

/// Discovery feeds the link table (`LinkTable.found`): a peer found on the
/// LAN gets a dialler that expects its identity; one that expires loses it.
extension NetworkNode {
    func startDiscovery(_ configuration: DiscoveryService.Configuration, listening: Bool) {
        do {
            let service = try DiscoveryService(
                configuration: configuration, signer: node.identity, network: node.network,
                linkPort: listening ? listenPort : 0, loop: loop,
                onEvent: { [self] action in discovered(action) })
            // Before the loop starts (`start` calls this first): nothing else touches it yet.
            try service.start()
            discovery = service
        } catch {
            // Discovery is a convenience: without it, --peer links still work.
            printError("LAN discovery is off: \(error)")
        }
    }

    private func discovered(_ action: DiscoveryCore.Action) {
        switch action {
        case let .found(peer, host, port):
            guard !blocked.contains(peer) else { return }
            feed(.found(peer, host: host, port: port, listening: listenPort != 0))
        case let .expired(peer):
            feed(.expired(peer))
        case .send:
            break
        }
    }
}
