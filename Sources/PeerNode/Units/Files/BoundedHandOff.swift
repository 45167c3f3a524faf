import Dispatch

/// Work handed to a serial queue with at most `limit` items handed over
/// and not yet done: past it, whoever hands the next one over waits until
/// one is done. The files worker hands each checked chunk to the opener's
/// thread this way (`NetworkNode.openChunk`): it goes on checking the next
/// while the last is opened, and a receiver whose opening is slower than
/// its links holds `limit` chunks waiting, no more, since a waiting worker
/// sends no outcome back and so the fetch asks for nothing new.
final class BoundedHandOff: Sendable {
    let queue: DispatchQueue
    let limit: Int
    private let slots: DispatchSemaphore

    init(queue: DispatchQueue, limit: Int) {
        self.queue = queue
        self.limit = max(1, limit)
        slots = DispatchSemaphore(value: max(1, limit))
    }

    /// Runs `work` on the queue after what is there; waits first while `limit` are handed over and not done.
    func hand(_ work: @escaping @Sendable () -> Void) {
        slots.wait()
        queue.async { [slots] in
            work()
            slots.signal()
        }
    }
}
