import Crypto
import Dispatch
import Foundation
import Gossip

/// `/device add` in a running node (docs/PROTOCOL.md §15, "Linking a
/// device"): the same exchange as `peernode device add`, served on a thread
/// of its own so links and the terminal go on; only the grant, which reads
/// and changes the node's state, is made on the event loop.
extension NetworkNode {
    func startDeviceAdd() throws -> [NodeEvent] {
        guard node.account == node.me else { throw NodeError.notAccountKey(node.account) }
        if let waiting = deviceOffer { throw NodeError.badCommand("code \(waiting.code) is still waiting for a device: one at a time") }
        let offer: LinkOffer
        do {
            offer = try LinkOffer(listen: nil, discovery: discoveryConfiguration, network: node.network)
        } catch {
            // The usual port is taken (another node on this host): any port will do, the beacon and the code say which.
            offer = try LinkOffer(listen: "0.0.0.0:0", discovery: discoveryConfiguration, network: node.network)
        }
        deviceOffer = offer
        let identity = node.identity, network = node.network
        Thread.detachNewThread { [self] in
            let outcome = Result {
                try offer.serve(identity: identity, network: network, grant: { device, name in
                    try self.onLoop { try self.node.grant(for: device, name: name) }
                }, problem: { message in self.loop.execute { self.emit(.failed(message)) } })
            }
            loop.execute {
                self.deviceOffer = nil
                switch outcome {
                case let .success((device, name)): self.emit(.deviceLinked(name: name, device: device))
                case let .failure(error): self.emit(.failed("/device add: \(error)"))
                }
            }
        }
        return [.deviceCode(code: offer.code, port: offer.listener.port, instructions: offer.instructions)]
    }

    /// Runs `work` on the event loop and waits for its result: from another thread only.
    func onLoop<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        loop.execute {
            box.value = Result { try work() }
            done.signal()
        }
        done.wait()
        guard let value = box.value else { throw NodeError.badCommand("the node stopped") }
        return try value.get()
    }
}

/// A result handed from the event loop to the thread waiting for it (the semaphore orders the two).
private final class ResultBox<T>: @unchecked Sendable {
    var value: Result<T, Error>?
}
