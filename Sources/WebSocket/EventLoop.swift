import CEpoll
import Glibc
import Synchronization

/// Something registered with the event loop: a listening socket or a connection.
protocol LoopHandler: AnyObject {
    /// Readiness events from epoll.
    func handle(events: UInt32)
    /// Called about every `EventLoop.tickInterval` seconds for timeouts.
    func tick(now: Double)
    /// The loop is shutting down.
    func shutdown()
}

/// One thread running epoll over non-blocking sockets: it serves thousands of
/// connections without a thread each. Work from other threads is handed over
/// through `execute` (a locked queue and an eventfd wake-up); everything
/// registered with the loop is touched only on its thread, which is why the
/// types built on it can be `Sendable` with unchecked state.
public final class EventLoop: @unchecked Sendable {
    /// How often timeouts (handshake, ping, close) are checked.
    public static let tickInterval = 0.05
    /// Bytes read from a socket per `read` call.
    static let readChunk = 256 << 10

    private let epoll: Int32
    private let wake: Int32
    private let pending = Mutex<[@Sendable () -> Void]>([])
    private let running = Atomic<Bool>(false)
    /// The loop thread's id (0 before it runs); read on every send, so atomic rather than locked.
    private let threadID = Atomic<UInt>(0)

    // Loop-thread state.
    private var handlers: [UInt64: LoopHandler] = [:]
    private var nextToken: UInt64 = 1
    private var flushQueue: [WebSocketConnection] = []
    private var lastTick = 0.0
    /// Shared read buffer: data is parsed straight out of it where possible.
    var scratch: UnsafeMutableRawBufferPointer

    public init() throws(SystemError) {
        epoll = try Syscall.check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wake = try Syscall.check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        scratch = .allocate(byteCount: Self.readChunk, alignment: 16)
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_ADD, wake, peernode_EPOLLIN, 0)
    }

    deinit {
        close(epoll)
        close(wake)
        scratch.deallocate()
    }

    /// Starts the loop on a new thread.
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        pthread_create(&thread, &attributes, { raw in
            let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
            loop.run()
            return nil
        }, box.toOpaque())
        pthread_detach(thread)
    }

    /// Stops the loop and closes everything registered with it.
    public func shutdown() {
        execute { [self] in running.store(false, ordering: .releasing) }
    }

    /// True on the loop's own thread.
    public var inLoop: Bool {
        let id = threadID.load(ordering: .relaxed)
        return id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0
    }

    /// Runs `work` on the loop thread (soon, in order).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(work) }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    // MARK: loop thread

    func register(_ fd: Int32, events: UInt32, handler: LoopHandler) -> UInt64 {
        let token = nextToken
        nextToken += 1
        handlers[token] = handler
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_ADD, fd, events, token)
        return token
    }

    func modify(_ fd: Int32, token: UInt64, events: UInt32) {
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_MOD, fd, events, token)
    }

    func deregister(_ fd: Int32, token: UInt64) {
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0, 0)
        handlers[token] = nil
    }

    /// Asks for `connection.flush()` at the end of this loop iteration, so
    /// many messages queued in one pass go out in one write.
    func scheduleFlush(_ connection: WebSocketConnection) {
        flushQueue.append(connection)
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        lastTick = monotonicNow()
        while running.load(ordering: .acquiring) {
            let timeout = Int32(Self.tickInterval * 1000)
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), timeout) }
            if n > 0 {
                for i in 0..<Int(n) {
                    let token = withUnsafePointer(to: &events[i]) { peernode_epoll_token($0) }
                    let flags = withUnsafePointer(to: &events[i]) { peernode_epoll_events($0) }
                    if token == 0 {
                        var value: UInt64 = 0
                        _ = read(wake, &value, 8)
                        continue
                    }
                    handlers[token]?.handle(events: flags)
                }
            }
            runPending()
            flushScheduled()
            let now = monotonicNow()
            if now - lastTick >= Self.tickInterval {
                lastTick = now
                for handler in Array(handlers.values) { handler.tick(now: now) }
                flushScheduled()
            }
        }
        for handler in Array(handlers.values) { handler.shutdown() }
        handlers.removeAll()
        runPending()
    }

    private func runPending() {
        let work = pending.withLock { queue -> [@Sendable () -> Void] in
            let taken = queue
            queue.removeAll()
            return taken
        }
        for w in work { w() }
    }

    private func flushScheduled() {
        while !flushQueue.isEmpty {
            let list = flushQueue
            flushQueue.removeAll(keepingCapacity: true)
            for c in list { c.flush() }
        }
    }
}
