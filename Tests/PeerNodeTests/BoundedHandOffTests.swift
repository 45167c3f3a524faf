import Dispatch
@testable import PeerNode
import TestSupport
import Testing

/// The files worker's hand-over to the opener's thread (`BoundedHandOff`):
/// `limit` handed over at once without waiting, the next one waits until one is done.
@Suite("A bounded hand-over to a serial queue")
struct BoundedHandOffTests {
    @Test("at the limit nothing waits; one past it waits until the queue has done one, then goes on; work runs in the order handed")
    func limit() {
        let queue = DispatchQueue(label: "test.handoff")
        let handOff = BoundedHandOff(queue: queue, limit: NetworkNode.chunksWaitingToOpen)
        #expect(handOff.limit == 64)
        // The queue held up by work of its own (not handed over, so not counted).
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let order = Locked<[Int]>([])
        // At the limit, from another thread (were it to wait, the test says so and does not hang).
        let atLimit = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for i in 0..<handOff.limit {
                handOff.hand { order.withLock { $0.append(i) } }
            }
            atLimit.signal()
        }
        guard atLimit.wait(timeout: .now() + 30) == .success else {
            Issue.record("handing over \(handOff.limit) waited")
            gate.signal()
            return
        }
        // One past the limit, from another thread: it waits.
        let handed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            handOff.hand { order.withLock { $0.append(handOff.limit) } }
            handed.signal()
        }
        #expect(handed.wait(timeout: .now() + 0.3) == .timedOut, "one past the limit was taken without waiting")
        gate.signal()
        #expect(handed.wait(timeout: .now() + 30) == .success, "the one past the limit never went on")
        queue.sync {}
        #expect(order.value == Array(0...handOff.limit))
    }
}
