import Crypto
import Discovery
import Dispatch
import Foundation
import Gossip
import Reactor

/// `/device add` in a running node (docs/PROTOCOL.md §15, "Linking a
/// device"): the same exchange as `peernode device add`, served on a thread
/// of its own so links and the terminal go on; only the grant, which reads
/// and changes the node's state, is made on the event loop. One exchange at
/// a time. Confined to the node's loop but for the exchange's thread.
final class DeviceAddService: @unchecked Sendable {
    private let loop: EventLoop
    /// The exchange waiting for a device, if any (touched on the loop only).
    private var offer: LinkOffer?

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Starts an exchange: the code and port to type on the device. What
    /// becomes of it is told through `emit` on the loop.
    func start(node: Node, discovery: DiscoveryService.Configuration?, emit: @escaping @Sendable ([NodeEvent]) -> Void) throws -> [NodeEvent] {
        guard node.account == node.me else { throw NodeError.notAccountKey(node.account) }
        if let waiting = offer { throw NodeError.badCommand("code \(waiting.code) is still waiting for a device: one at a time") }
        let started: LinkOffer
        do {
            started = try LinkOffer(listen: nil, discovery: discovery, network: node.network)
        } catch {
            // The usual port is taken (another node on this host): any port will do, the beacon and the code say which.
            started = try LinkOffer(listen: "0.0.0.0:0", discovery: discovery, network: node.network)
        }
        offer = started
        let identity = node.identity, network = node.network
        nonisolated(unsafe) let node = node
        Thread.detachNewThread { [self] in
            let outcome = Result {
                try started.serve(identity: identity, network: network, grant: { device, name in
                    try self.onLoop { try node.grant(for: device, name: name) }
                }, problem: { message in self.loop.execute { emit([.failed(message)]) } })
            }
            loop.execute {
                self.offer = nil
                switch outcome {
                case let .success((device, name)): emit([.deviceLinked(name: name, device: device)])
                case let .failure(error): emit([.failed("/device add: \(error)")])
                }
            }
        }
        return [.deviceCode(code: started.code, port: started.listener.port, instructions: started.instructions)]
    }

    /// Runs `work` on the event loop and waits for its result: from another thread only.
    private func onLoop<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
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
