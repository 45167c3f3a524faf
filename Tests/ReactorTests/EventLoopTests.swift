import CEpoll
import Glibc
import Reactor
import Synchronization
import TestSupport
import Testing

/// Waits (up to `seconds`) until `done` says so; what it saw otherwise.
private func waitUntil(_ seconds: Double, _ done: () -> Bool) -> Bool {
    let deadline = monotonicNow() + seconds
    while !done() {
        if monotonicNow() > deadline { return false }
        usleep(2_000)
    }
    return true
}

/// A pipe's read end registered with the loop: what it reads is recorded.
private final class PipeReader: LoopHandler, @unchecked Sendable {
    let fd: Int32
    let seen = Mutex<[UInt8]>([])
    init(fd: Int32) { self.fd = fd }
    func handle(events: UInt32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while case let .done(n) = try? Syscall.call("read", { read(fd, &buffer, buffer.count) }), n > 0 {
            seen.withLock { $0 += buffer[0..<n] }
        }
    }
    func tick(now: Double) -> Double? { nil }
    func shutdown() {}
}

/// A handler that asks for its ticks: at `wants` (monotonic seconds), then not again unless told.
private final class DeadlineHandler: LoopHandler, @unchecked Sendable {
    let ticks = Mutex<[Double]>([])
    let wants = Mutex<Double?>(nil)
    func handle(events: UInt32) {}
    func tick(now: Double) -> Double? {
        ticks.withLock { $0.append(now) }
        return wants.withLock { w in
            guard let at = w, now >= at else { return w }
            w = nil
            return nil
        }
    }
    func shutdown() {}
}

/// Whether a timer of the loop's own, due `seconds` from now, ran (waited
/// for at most 5 s more): the loop's clock, not a sleep here, measures the wait.
private func timerFired(_ loop: EventLoop, after seconds: Double) -> Bool {
    let fired = Mutex<Bool>(false)
    loop.execute { loop.after(seconds) { fired.withLock { $0 = true } } }
    return waitUntil(seconds + 5) { fired.withLock { $0 } }
}

/// What the loop counted of its wake-ups, read on its thread.
private func wakeCounts(_ loop: EventLoop) -> (idle: Int, ticks: Int) {
    let counts = Mutex<(idle: Int, ticks: Int)?>(nil)
    loop.execute { counts.withLock { $0 = (loop.idleWakes, loop.tickTurns) } }
    _ = waitUntil(5) { counts.withLock { $0 } != nil }
    return counts.withLock { $0 } ?? (-1, -1)
}

@Suite("The reactor: one epoll thread with timers and descriptors")
struct EventLoopTests {
    @Test("timers run on the loop in the order they are due; a repeating one repeats until cancelled; a cancelled one never runs")
    func timers() throws {
        let loop = try EventLoop()
        loop.start()
        let order = Mutex<[String]>([])
        loop.execute {
            loop.after(0.06) { order.withLock { $0.append("late") } }
            loop.after(0.02) { order.withLock { $0.append("early") } }
            let never = loop.after(0.03) { order.withLock { $0.append("never") } }
            loop.cancel(never)
            var ticks = 0
            var id: TimerID?
            id = loop.every(0.01) {
                #expect(loop.inLoop)
                ticks += 1
                order.withLock { $0.append("tick") }
                if ticks == 3, let id { loop.cancel(id) }
            }
        }
        #expect(waitUntil(5) { order.withLock { $0.contains("late") } })
        usleep(100_000)
        let seen = order.withLock { $0 }
        #expect(seen.filter { $0 == "tick" }.count == 3, "\(seen)")
        #expect(!seen.contains("never"))
        #expect(seen.firstIndex(of: "early")! < seen.firstIndex(of: "late")!)
        loop.shutdown()
        #expect(waitUntil(5) { loop.hasStopped })
    }

    @Test("a registered descriptor is read on the loop as bytes arrive; work from other threads runs in order")
    func descriptors() throws {
        let loop = try EventLoop()
        var ends: [Int32] = [0, 0]
        (ends[0], ends[1]) = try Child.closeOnExecPipe()  // no child another test spawns holds an end
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd); close(writeEnd) }
        try Syscall.setNonBlocking(readEnd)
        let reader = PipeReader(fd: readEnd)
        let registered = Mutex<Bool>(false)
        loop.start()
        loop.execute {
            registered.withLock { $0 = (try? loop.register(readEnd, events: peernode_EPOLLIN, handler: reader)) != nil }
        }
        #expect(waitUntil(5) { registered.withLock { $0 } })
        for byte: UInt8 in [1, 2, 3] {
            var b = byte
            #expect(write(writeEnd, &b, 1) == 1)
        }
        #expect(waitUntil(5) { reader.seen.withLock { $0 } == [1, 2, 3] })
        let order = Mutex<[Int]>([])
        for i in 0..<100 { loop.execute { order.withLock { $0.append(i) } } }
        #expect(waitUntil(5) { order.withLock { $0.count } == 100 })
        #expect(order.withLock { $0 } == Array(0..<100))
        loop.shutdown()
        #expect(waitUntil(5) { loop.hasStopped })
    }

    @Test("an idle loop sleeps until a deadline is due: a handler is ticked once it is registered, then at the time it returns or asks for, not every tickInterval")
    func ticksOnlyWhenDue() throws {
        let loop = try EventLoop()
        var ends: [Int32] = [0, 0]
        (ends[0], ends[1]) = try Child.closeOnExecPipe()  // no child another test spawns holds an end
        defer { close(ends[0]); close(ends[1]) }
        let readEnd = ends[0]
        let handler = DeadlineHandler()
        loop.start()
        defer { loop.shutdown() }
        loop.execute { _ = try? loop.register(readEnd, events: peernode_EPOLLIN, handler: handler) }
        #expect(waitUntil(5) { handler.ticks.withLock { $0.count } == 1 }, "the first tick follows registration")
        let before = wakeCounts(loop)
        // Ten tick intervals with nothing due, timed by a timer of the loop's own: no wake-up but the
        // timer's, no tick (the old loop ticked ten times).
        #expect(timerFired(loop, after: EventLoop.tickInterval * 10))
        let after = wakeCounts(loop)
        #expect(after.idle == before.idle + 1, "an idle loop woke \(after.idle - before.idle - 1) times besides the timer")
        #expect(handler.ticks.withLock { $0.count } == 1)
        // A deadline asked for from the loop (a close sent, a pause begun) is met, not early and not a whole interval late.
        let asked = Mutex<Double>(0)
        loop.execute {
            let at = monotonicNow() + 0.2
            asked.withLock { $0 = at }
            handler.wants.withLock { $0 = at }
            loop.tickNeeded(at: at)
        }
        #expect(waitUntil(5) { asked.withLock { $0 } > 0 && handler.ticks.withLock { $0.count } >= 2 })
        let second = handler.ticks.withLock { $0[1] }
        let at = asked.withLock { $0 }
        #expect(second >= at, "ticked \(at - second) s before the deadline")
        #expect(second < at + 0.15, "ticked \(second - at) s after the deadline")
        // Nothing asked after it: the loop sleeps again.
        let settled = wakeCounts(loop)
        #expect(timerFired(loop, after: EventLoop.tickInterval * 6))
        #expect(wakeCounts(loop).ticks == settled.ticks)
        #expect(handler.ticks.withLock { $0.count } == 2)
    }

    @Test("a deadline a handler returns from its tick is met: ticks come at its times, no closer together than tickInterval")
    func returnedDeadlines() throws {
        let loop = try EventLoop()
        var ends: [Int32] = [0, 0]
        (ends[0], ends[1]) = try Child.closeOnExecPipe()  // no child another test spawns holds an end
        defer { close(ends[0]); close(ends[1]) }
        /// Asks for a tick 10 ms after each (closer than the loop's spacing).
        final class Eager: LoopHandler, @unchecked Sendable {
            let ticks = Mutex<[Double]>([])
            func handle(events: UInt32) {}
            func tick(now: Double) -> Double? {
                let count = ticks.withLock { $0.append(now); return $0.count }
                return count < 5 ? now + 0.01 : nil
            }
            func shutdown() {}
        }
        let readEnd = ends[0]
        let eager = Eager()
        loop.start()
        defer { loop.shutdown() }
        loop.execute { _ = try? loop.register(readEnd, events: peernode_EPOLLIN, handler: eager) }
        #expect(waitUntil(5) { eager.ticks.withLock { $0.count } == 5 })
        let times = eager.ticks.withLock { $0 }
        for (a, b) in zip(times, times.dropFirst()) {
            #expect(b - a >= EventLoop.tickInterval * 0.99, "ticks \(b - a) s apart")
        }
    }

    @Test("work given to afterWaiting runs once the loop has waited: not in the turn that gave it, before the next event's handler or timer, within afterWaitingLimit when nothing comes; settle runs it at once")
    func afterWaiting() throws {
        let loop = try EventLoop()
        var ends: [Int32] = [0, 0]
        (ends[0], ends[1]) = try Child.closeOnExecPipe()  // no child another test spawns holds an end
        defer { close(ends[0]); close(ends[1]) }
        try Syscall.setNonBlocking(ends[0])
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let order = Locked<[String]>([])
        /// Records each byte read, and hands work to `afterWaiting` for a 1.
        final class Reader: LoopHandler, @unchecked Sendable {
            let fd: Int32, loop: EventLoop, order: Locked<[String]>
            init(fd: Int32, loop: EventLoop, order: Locked<[String]>) { (self.fd, self.loop, self.order) = (fd, loop, order) }
            func handle(events: UInt32) {
                var byte: UInt8 = 0
                while read(fd, &byte, 1) == 1 {
                    order.withLock { $0.append("read \(byte)") }
                    // The loop's wait timed out in between (nothing else comes), or the work ran in this turn.
                    let wakes = loop.idleWakes
                    if byte == 1 { loop.afterWaiting { [order, loop] in order.withLock { $0.append(loop.idleWakes > wakes ? "after 1" : "after 1, not waited") } } }
                }
            }
            func tick(now: Double) -> Double? { nil }
            func shutdown() {}
        }
        loop.start()
        defer { loop.shutdown() }
        loop.execute { _ = try? loop.register(readEnd, events: peernode_EPOLLIN, handler: Reader(fd: readEnd, loop: loop, order: order)) }
        // Nothing else comes: the work runs when the wait times out.
        var one: UInt8 = 1
        let wrote = monotonicNow()
        #expect(write(writeEnd, &one, 1) == 1)
        #expect(waitUntil(5) { order.value.contains("after 1") })
        #expect(monotonicNow() - wrote < 1, "waited \(monotonicNow() - wrote) s")
        // A timer due at once finds it done.
        order.withLock { $0.removeAll() }
        loop.execute {
            loop.afterWaiting { order.withLock { $0.append("after execute") } }
            loop.after(0) { order.withLock { $0.append("timer") } }
        }
        #expect(waitUntil(5) { order.value.count == 2 })
        #expect(order.value == ["after execute", "timer"])
        // Two bytes read in one call: the work the first gave waits for the wait that follows.
        order.withLock { $0.removeAll() }
        loop.execute {
            var both: [UInt8] = [1, 2]
            _ = write(writeEnd, &both, 2)
        }
        #expect(waitUntil(5) { order.value.count >= 3 })
        #expect(order.value == ["read 1", "read 2", "after 1"])
        // An event that comes while work waits is handled after it.
        order.withLock { $0.removeAll() }
        loop.execute {
            loop.afterWaiting { order.withLock { $0.append("after 3") } }
            var three: UInt8 = 3
            _ = write(writeEnd, &three, 1)
        }
        #expect(waitUntil(5) { order.value.count >= 2 })
        #expect(order.value == ["after 3", "read 3"], "the event's handler ran before the work")
        // Work from other threads taken in one batch: each item finds done what the one before it left.
        order.withLock { $0.removeAll() }
        loop.execute {
            loop.execute { loop.afterWaiting { order.withLock { $0.append("after first") } } }
            loop.execute { order.withLock { $0.append("second") } }
        }
        #expect(waitUntil(5) { order.value.count == 2 })
        #expect(order.value == ["after first", "second"])
        // settle: at once, in order.
        order.withLock { $0.removeAll() }
        loop.execute {
            loop.afterWaiting { order.withLock { $0.append("a") } }
            loop.afterWaiting { order.withLock { $0.append("b") } }
            order.withLock { $0.append("settling") }
            loop.settle()
            order.withLock { $0.append("settled") }
        }
        #expect(waitUntil(5) { order.value.count == 4 })
        #expect(order.value == ["settling", "a", "b", "settled"])
        // A body that settles (a connection it closes) goes on in the order given: what it gives comes after the rest.
        order.withLock { $0.removeAll() }
        loop.execute {
            loop.afterWaiting {
                order.withLock { $0.append("first") }
                loop.afterWaiting { order.withLock { $0.append("given by first") } }
                loop.settle()
            }
            loop.afterWaiting { order.withLock { $0.append("second") } }
        }
        #expect(waitUntil(5) { order.value.count == 3 })
        #expect(order.value == ["first", "second", "given by first"])
    }

    @Test("a turn that only ran work given to afterWaiting ends as a turn with events does: turnEnded follows it (the node syncs there what it signed)")
    func turnEndedAfterWaitingWork() throws {
        let loop = try EventLoop()
        let order = Locked<[String]>([])
        loop.turnEnded = { _, _ in order.withLock { $0.append("turn ended") } }
        loop.start()
        defer { loop.shutdown() }
        loop.execute { loop.afterWaiting { order.withLock { $0.append("work") } } }
        #expect(waitUntil(5) { order.value.count >= 3 })
        // The execute's turn ends, then the work runs at the wait's end, and that turn ends too.
        #expect(Array(order.value.prefix(3)) == ["turn ended", "work", "turn ended"])
    }

    @Test("system calls: EAGAIN is wouldBlock, another errno a typed error naming the call")
    func syscalls() throws {
        var ends: [Int32] = [0, 0]
        (ends[0], ends[1]) = try Child.closeOnExecPipe()  // no child another test spawns holds an end
        defer { close(ends[0]); close(ends[1]) }
        try Syscall.setNonBlocking(ends[0])
        var buffer = [UInt8](repeating: 0, count: 8)
        guard case .wouldBlock = try Syscall.call("read", { read(ends[0], &buffer, 8) }) else {
            Issue.record("an empty non-blocking pipe should block")
            return
        }
        #expect(throws: SystemError(call: "read", errno: EBADF)) { try Syscall.check("read") { read(-1, &buffer, 8) } }
        #expect("\(SystemError(call: "read", errno: EBADF))".contains("read failed"))
        // A descriptor epoll cannot watch (a regular file) is refused with the errno, not ignored.
        let loop = try EventLoop()
        let file = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        #expect(throws: SystemError(call: "epoll_ctl(ADD)", errno: EPERM)) { try loop.register(file, events: peernode_EPOLLIN, handler: PipeReader(fd: file)) }
    }
}
