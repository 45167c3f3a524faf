import Reactor

/// What an application sends on a connection, from any thread: messages,
/// fragments, pings and the close, queued on the loop under the send-queue
/// limit (`WebSocketLimits.maximumSendQueue`).
extension WebSocketConnection {
    /// Bytes queued and not yet taken by the socket. Loop thread only.
    public var unsentBytes: Int { writeBuffer.count - writeStart }

    /// Calls `body` once, on the loop, when fewer than `bytes` are unsent
    /// (at once if that is already so): a sender with much to say queues a
    /// window, then waits here instead of filling the send queue. Replaces
    /// an earlier notice not yet given; never called once the connection is
    /// closed. Loop thread only.
    public func whenUnsent(below bytes: Int, _ body: @escaping () -> Void) {
        guard case .open = phase else { return }
        if unsentBytes < bytes {
            body()
        } else {
            lowWater = (bytes, body)
        }
    }

    /// Sends a message as one frame. Dropped if the connection is not open.
    public func send(_ message: WebSocketMessage) {
        // On the loop (an echo, a reply) this is a direct call, no closure to allocate.
        if loop.inLoop {
            enqueue { core, out in core.encode(message, to: &out) }
        } else {
            loop.execute { [self] in enqueue { core, out in core.encode(message, to: &out) } }
        }
    }

    /// Sends a message in fragments (RFC 6455 §5.4), one frame per element.
    public func send(fragments: [[UInt8]], text: Bool) {
        onLoop { c in
            c.enqueue { core, out in
                for (i, f) in fragments.enumerated() {
                    core.encodeFragment(f, opcode: text ? .text : .binary, first: i == 0, last: i == fragments.count - 1, to: &out)
                }
            }
        }
    }

    public func ping(_ payload: [UInt8] = []) {
        onLoop { $0.enqueue { core, out in core.encodePing(payload, to: &out) } }
    }

    /// Starts the close handshake (§7.1.2); `onClose` follows when it ends.
    public func close(code: CloseCode = .normal, reason: String = "") {
        onLoop { c in
            guard case .open = c.phase else {
                if case .closed = c.phase { return }
                c.closeSocket(report: nil)
                return
            }
            var out = ConnectionCore.Output()
            c.core.close(code, reason: reason, now: monotonicNow(), into: &out)
            c.apply(out)
        }
    }

    func onLoop(_ body: @escaping @Sendable (WebSocketConnection) -> Void) {
        if loop.inLoop { body(self) } else { loop.execute { [self] in body(self) } }
    }

    func enqueue(_ encode: (inout ConnectionCore, inout [UInt8]) -> Void) {
        guard case .open = phase, core.state == .open else { return }
        encode(&core, &writeBuffer)
        queued()
    }

    /// After bytes were queued: enforce the send-queue limit, plan a flush.
    func queued() {
        if Self.sendQueueOverflows(pending: writeBuffer.count - writeStart, limit: limits.maximumSendQueue),
           case .open = phase, core.state == .open {
            // The peer is not reading: tell it why (if it ever reads again) and
            // stop queueing; the close deadline ends the link either way.
            var out = ConnectionCore.Output()
            core.close(.policyViolation, reason: "send queue over \(limits.maximumSendQueue) bytes: not reading", now: monotonicNow(), into: &out)
            writeBuffer.append(contentsOf: out.outgoing)
        }
        // A close we sent has a deadline the loop must look at.
        if case let .closeSent(deadline) = core.state { loop.tickNeeded(at: deadline) }
        if !flushScheduled {
            flushScheduled = true
            loop.scheduleFlush(self)
        }
    }

    /// The send-queue rule: up to `limit` unwritten bytes are fine, one more
    /// means the peer is not reading.
    static func sendQueueOverflows(pending: Int, limit: Int) -> Bool { pending > limit }
}
