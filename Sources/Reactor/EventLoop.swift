import CEpoll
import Glibc
import Synchronization

/// Something registered with the event loop for a descriptor: a listening
/// socket, a connection, the discovery socket, standard input.
public protocol LoopHandler: AnyObject {
    /// Readiness events from epoll.
    func handle(events: UInt32)
    /// Checks the handler's timeouts (handshake, ping, close). Called soon
    /// after the handler is registered, then once the time it returned
    /// (or asked for with `EventLoop.tickNeeded(at:)`) has come; returns
    /// when it next needs a look, nil for not until it asks. The loop never
    /// calls it more often than every `EventLoop.tickInterval`, and may call
    /// it earlier than asked, for another handler's sake.
    func tick(now: Double) -> Double?
    /// The loop is shutting down.
    func shutdown()
}

/// Something with output to push at the end of a loop iteration (`scheduleFlush`).
public protocol Flushable: AnyObject {
    func flush()
    /// Whether `flush` only writes what is queued, calling no code of the
    /// application's (or settling first, `EventLoop.settle`): such a flush
    /// may run while work waits for the loop's next wait (`afterWaiting`).
    var onlyWrites: Bool { get }
}

extension Flushable {
    public var onlyWrites: Bool { false }
}

/// One thread running epoll over non-blocking descriptors: it serves
/// thousands of connections without a thread each, and runs the timers and
/// signal handlers of everything built on it. Work from other threads is
/// handed over through `execute` (a locked queue and an eventfd wake-up);
/// everything registered with the loop is touched only on its thread,
/// which is why the types built on it can be `Sendable` with unchecked state.
public final class EventLoop: @unchecked Sendable {
    /// The shortest time between two looks at handlers' timeouts (handshake,
    /// ping, close): a deadline is met within this much. An idle loop does
    /// not wake at this pace: only when some handler's deadline is due.
    public static let tickInterval = 0.05
    /// The longest a body given to `afterWaiting` waits: long enough for
    /// a process woken by the turn's writes to get on the core (tens of
    /// µs), short enough that the store's work is done well before the
    /// next message of a fast exchange. 1 ms measured no better for the
    /// hop and put each message's disk work nearer the next one (docs/SCALE.md).
    public static let afterWaitingLimit = 0.0002
    /// Bytes read from a socket per `read` call.
    public static let readChunk = 256 << 10
    /// The epoll token of the wake-up eventfd (handlers get 1 and up).
    private static let wakeToken: UInt64 = 0
    /// The epoll token of the signalfd.
    private static let signalToken = UInt64.max

    private let epoll: Int32
    private let wake: Int32
    private let pending = Mutex<[@Sendable () -> Void]>([])
    private let running = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    /// The loop thread's id (0 before it runs); read on every send, so atomic rather than locked.
    private let threadID = Atomic<UInt>(0)

    // Loop-thread state.
    private var handlers: [UInt64: LoopHandler] = [:]
    private var nextToken: UInt64 = 1
    private var flushQueue: [Flushable] = []
    /// Work that waits for the loop's next wait (`afterWaiting`).
    private var afterWait: [() -> Void] = []
    private var lastTick = 0.0
    /// When some handler next needs its `tick` (the earliest asked for).
    private var nextTick = 0.0
    /// Turns that ran the handlers' ticks, and epoll waits that ended with
    /// nothing to do but a tick or a timer (loop thread; an idle node's
    /// wake-ups, tests read them through `execute`).
    public private(set) var tickTurns = 0
    public private(set) var idleWakes = 0
    private var timers = Timers()
    private var signalDescriptor: Int32 = -1
    private var signalHandler: ((Int32) -> Void)?
    /// Shared read buffer: data is parsed straight out of it where possible.
    public let scratch: UnsafeMutableRawBufferPointer
    /// When epoll last returned with events, or with work given to
    /// `afterWaiting` to run (monotonic seconds; loop thread only).
    public private(set) var wokeAt = 0.0
    /// Called on the loop thread at the end of each turn that had events
    /// or ran work given to `afterWaiting`,
    /// once everything scheduled was flushed, with the turn's `wokeAt` and
    /// the time then (the node times a message's whole turn with it). It
    /// runs before what waits for the next wait (`afterWaiting`), so it
    /// must leave alone what that work will do.
    public var turnEnded: ((_ woke: Double, _ flushed: Double) -> Void)?

    public init() throws(SystemError) {
        epoll = try Syscall.check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wake = try Syscall.check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        scratch = .allocate(byteCount: Self.readChunk, alignment: 16)
        _ = try Syscall.check("epoll_ctl(eventfd)") { peernode_epoll_ctl(epoll, EPOLL_CTL_ADD, wake, peernode_EPOLLIN, Self.wakeToken) }
    }

    deinit {
        close(epoll)
        close(wake)
        if signalDescriptor >= 0 { close(signalDescriptor) }
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
            guard let raw else { return nil }
            let loop = Unmanaged<EventLoop>.fromOpaque(raw).takeRetainedValue()
            loop.run()
            return nil
        }, box.toOpaque())
        pthread_detach(thread)
    }

    /// Stops the loop and closes everything registered with it.
    public func shutdown() {
        execute { [self] in running.store(false, ordering: .releasing) }
    }

    /// True once the loop has shut everything down and returned.
    public var hasStopped: Bool { stopped.load(ordering: .acquiring) }

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

    // MARK: loop thread only

    /// Watches `fd` for `events` (EPOLL* flags); `handler` is called on the loop.
    public func register(_ fd: Int32, events: UInt32, handler: LoopHandler) throws(SystemError) -> UInt64 {
        let token = nextToken
        _ = try Syscall.check("epoll_ctl(ADD)") { peernode_epoll_ctl(epoll, EPOLL_CTL_ADD, fd, events, token) }
        nextToken += 1
        handlers[token] = handler
        // Its first tick says when it needs the next.
        nextTick = min(nextTick, monotonicNow())
        return token
    }

    /// A handler's state now needs its `tick` by `time` (monotonic
    /// seconds), earlier than the time its last tick returned: a close
    /// sent, a pause begun. Loop thread only.
    public func tickNeeded(at time: Double) {
        nextTick = min(nextTick, time)
    }

    public func modify(_ fd: Int32, token: UInt64, events: UInt32) {
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_MOD, fd, events, token)
    }

    public func deregister(_ fd: Int32, token: UInt64) {
        _ = peernode_epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0, 0)
        handlers[token] = nil
    }

    /// Asks for `flush()` at the end of this loop iteration, so many
    /// messages queued in one pass go out in one write.
    public func scheduleFlush(_ target: Flushable) {
        flushQueue.append(target)
    }

    /// Writes what `scheduleFlush` queued now instead of at the end of the
    /// turn (loop thread only): the node forwards an envelope to its links
    /// before it stores and shows it.
    public func flushNow() { flushScheduled() }

    /// Runs `body` once the loop has waited for events: after this turn's
    /// writes, when the loop wakes again (at most `afterWaitingLimit`
    /// later), before anything else runs. So the thread sleeps in between,
    /// and a process this turn's writes woke (the reader of a line just
    /// written) can run on this core at once, where it would wait behind
    /// the work or be woken on an idle core. Anything else the loop would run
    /// first (an event, a timer, work from `execute`, a flush that is not
    /// `onlyWrites`) runs it first instead: nothing sees the work undone.
    /// Loop thread only.
    public func afterWaiting(_ body: @escaping () -> Void) {
        afterWait.append(body)
    }

    /// Whether work waits for the loop's next wait (`afterWaiting`).
    public var hasWorkAfterWaiting: Bool { !afterWait.isEmpty }

    /// Runs now what waits for the loop's next wait (`afterWaiting`): for
    /// code about to call into the application from a flush that is
    /// otherwise `onlyWrites`. Loop thread only.
    public func settle() {
        // One at a time from the front: a body that settles (a connection it
        // closes) goes on with the rest in the order they were given.
        while !afterWait.isEmpty {
            let body = afterWait.removeFirst()
            body()
        }
    }

    /// Runs `body` on the loop every `interval` seconds, the first time
    /// `interval` from now, until `cancel`.
    @discardableResult
    public func every(_ interval: Double, _ body: @escaping () -> Void) -> TimerID {
        timers.add(due: monotonicNow() + interval, repeating: interval, body)
    }

    /// Runs `body` on the loop once, `delay` seconds from now.
    @discardableResult
    public func after(_ delay: Double, _ body: @escaping () -> Void) -> TimerID {
        timers.add(due: monotonicNow() + delay, repeating: nil, body)
    }

    public func cancel(_ timer: TimerID) { timers.cancel(timer) }

    /// Delivers `signals` to `handler` on the loop (through a signalfd).
    /// They must already be blocked in every thread (`blockSignals`, first
    /// thing in `main`), or the kernel may hand them to another thread.
    public func onSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(SystemError) {
        let fd = try Syscall.check("signalfd") { signals.withUnsafeBufferPointer { peernode_signalfd($0.baseAddress, Int32($0.count)) } }
        _ = try Syscall.check("epoll_ctl(signalfd)") { peernode_epoll_ctl(epoll, EPOLL_CTL_ADD, fd, peernode_EPOLLIN, Self.signalToken) }
        if signalDescriptor >= 0 { close(signalDescriptor) }
        signalDescriptor = fd
        signalHandler = handler
    }

    /// Blocks `signals` in the calling thread and every thread it starts
    /// afterwards; call it before any thread starts, so `onSignals` sees them.
    public static func blockSignals(_ signals: [Int32]) throws(SystemError) {
        let rc = signals.withUnsafeBufferPointer { peernode_block_signals($0.baseAddress, Int32($0.count)) }
        if rc != 0 { throw SystemError(call: "pthread_sigmask", errno: rc) }
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        lastTick = monotonicNow() - Self.tickInterval
        while running.load(ordering: .acquiring) {
            let n = events.withUnsafeMutableBufferPointer { peernode_epoll_wait_ns(epoll, $0.baseAddress, Int32($0.count), waitTimeout()) }
            if n == 0 { idleWakes += 1 }
            // A turn that runs work given to `afterWaiting` ends as one with events does (`turnEnded`).
            let worked = n > 0 || !afterWait.isEmpty
            if worked { wokeAt = monotonicNow() }
            settle()
            if n > 0 {
                for i in 0..<Int(n) {
                    settle()
                    let token = withUnsafePointer(to: &events[i]) { peernode_epoll_token($0) }
                    let flags = withUnsafePointer(to: &events[i]) { peernode_epoll_events($0) }
                    switch token {
                    case Self.wakeToken:
                        var value: UInt64 = 0
                        _ = read(wake, &value, 8)
                    case Self.signalToken:
                        deliverSignals()
                    default:
                        handlers[token]?.handle(events: flags)
                    }
                }
            }
            runPending()
            flushScheduled()
            let now = monotonicNow()
            if worked, let turnEnded { turnEnded(wokeAt, now) }
            for body in timers.takeDue(now: now) {
                settle()
                body()
            }
            if now >= nextTick, now - lastTick >= Self.tickInterval {
                lastTick = now
                tickTurns += 1
                // What the handlers ask for while they tick (`tickNeeded`) counts too.
                nextTick = .infinity
                for handler in Array(handlers.values) {
                    settle()
                    if let next = handler.tick(now: now) { nextTick = min(nextTick, next) }
                }
            }
            flushScheduled()
        }
        settle()
        for handler in Array(handlers.values) { handler.shutdown() }
        handlers.removeAll()
        runPending()
        flushScheduled()
        stopped.store(true, ordering: .releasing)
    }

    /// Nanoseconds until the next timer or handler tick, or the work that
    /// waits for this wait, is due; -1 for none (the wake-up eventfd ends
    /// the wait for work from other threads).
    private func waitTimeout() -> Int64 {
        let now = monotonicNow()
        var due = max(nextTick, lastTick + Self.tickInterval)
        if let timer = timers.nextDue { due = min(due, timer) }
        if !afterWait.isEmpty { due = min(due, now + Self.afterWaitingLimit) }
        guard due.isFinite else { return -1 }
        let nanoseconds = ((due - now) * 1e9).rounded(.up)
        return Int64(min(max(0, nanoseconds), 1e15))
    }

    private func deliverSignals() {
        while signalDescriptor >= 0 {
            let number = peernode_read_signal(signalDescriptor)
            guard number > 0 else { return }
            signalHandler?(number)
        }
    }

    private func runPending() {
        let work = pending.withLock { queue -> [@Sendable () -> Void] in
            let taken = queue
            queue.removeAll()
            return taken
        }
        for w in work {
            settle()
            w()
        }
    }

    private func flushScheduled() {
        while !flushQueue.isEmpty {
            let list = flushQueue
            flushQueue.removeAll(keepingCapacity: true)
            for c in list {
                if !c.onlyWrites { settle() }
                c.flush()
            }
        }
    }
}
