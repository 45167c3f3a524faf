import CEpoll
import Glibc
import Reactor

/// What the application hears from a connection. Every callback runs on the
/// connection's event-loop thread; keep them short or hand work elsewhere.
public struct WebSocketCallbacks: Sendable {
    public var onOpen: @Sendable (WebSocketConnection) -> Void
    public var onMessage: @Sendable (WebSocketConnection, WebSocketMessage) -> Void
    public var onPong: @Sendable (WebSocketConnection, [UInt8]) -> Void
    /// Once per opened connection, however it ended.
    public var onClose: @Sendable (WebSocketConnection, CloseInfo) -> Void
    /// The connection never opened: refused, timed out, or a bad answer.
    public var onHandshakeFailure: @Sendable (WebSocketConnection, HandshakeError) -> Void

    public init(
        onOpen: @escaping @Sendable (WebSocketConnection) -> Void = { _ in },
        onMessage: @escaping @Sendable (WebSocketConnection, WebSocketMessage) -> Void = { _, _ in },
        onPong: @escaping @Sendable (WebSocketConnection, [UInt8]) -> Void = { _, _ in },
        onClose: @escaping @Sendable (WebSocketConnection, CloseInfo) -> Void = { _, _ in },
        onHandshakeFailure: @escaping @Sendable (WebSocketConnection, HandshakeError) -> Void = { _, _ in }
    ) {
        self.onOpen = onOpen
        self.onMessage = onMessage
        self.onPong = onPong
        self.onClose = onClose
        self.onHandshakeFailure = onHandshakeFailure
    }
}

/// One WebSocket connection, client or server side: the socket shell around
/// `ConnectionCore`. Its state is confined to its event loop's thread; the
/// public methods may be called from any thread and hop to the loop, which
/// is what makes the unchecked `Sendable` sound.
public final class WebSocketConnection: @unchecked Sendable, LoopHandler, Flushable {
    enum Phase {
        case serverHandshake(deadline: Double)
        case clientConnecting(deadline: Double)
        case clientHandshake(deadline: Double)
        /// A plain HTTP answer or a refusal is being written; then the socket closes.
        case closingAfterWrite
        case open
        case closed
    }

    public let loop: EventLoop
    /// "address:port" of the other end.
    public let remoteAddress: String
    /// Set by the server that accepted it: called once, when the socket closes.
    var onSocketClosed: (() -> Void)?
    /// Set by the server that accepted it: called once, when the request
    /// head has been read whole (or refused), so it is no longer half-open.
    var onHeadRead: (() -> Void)?
    /// The request path (server side) or the path asked for (client side).
    public private(set) var path: String
    /// The subprotocol both sides agreed on, if any.
    public private(set) var subprotocol: String?

    let fd: Int32
    private var token: UInt64 = 0
    var phase: Phase
    var core: ConnectionCore
    private let role: ConnectionCore.Role
    let limits: WebSocketLimits
    private let timeouts: WebSocketTimeouts
    /// Whether the client takes a plain HTTP answer (`stalledAnswer`).
    private var answerStall = AnswerStall(now: 0)
    private let callbacks: WebSocketCallbacks
    private let server: WebSocketServer.Configuration?
    private let httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    private var clientHandshake: ClientHandshake?
    private let hostHeader: String

    private var readBuffer: [UInt8] = []
    var writeBuffer: [UInt8] = []
    var writeStart = 0
    var flushScheduled = false
    private var watchingWrites = false
    /// A one-shot notice for a sender that paces itself (`whenUnsent(below:_:)`).
    var lowWater: (bytes: Int, body: () -> Void)?
    /// A plain HTTP answer's body that comes in parts: bytes queued of it so
    /// far, and whether a part was asked for and has not come yet.
    var bodyStream: (stream: HTTPBodyStream, queued: Int, asking: Bool)?

    /// Server side: an accepted socket from `remote` ("address:port").
    init(accepted fd: Int32, remote: String, loop: EventLoop, configuration: WebSocketServer.Configuration, callbacks: WebSocketCallbacks,
         httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?) {
        self.fd = fd
        self.loop = loop
        role = .server
        limits = configuration.limits
        timeouts = configuration.timeouts
        self.callbacks = callbacks
        server = configuration
        self.httpHandler = httpHandler
        remoteAddress = remote
        path = ""
        hostHeader = ""
        phase = .serverHandshake(deadline: monotonicNow() + configuration.timeouts.handshake)
        core = ConnectionCore(role: .server, limits: configuration.limits, timeouts: configuration.timeouts, now: monotonicNow())
    }

    /// Client side: a socket whose non-blocking connect is under way.
    init(connecting fd: Int32, loop: EventLoop, host: String, remote: String, path: String,
         configuration: WebSocketClient.Configuration, callbacks: WebSocketCallbacks) {
        self.fd = fd
        self.loop = loop
        role = .client
        limits = configuration.limits
        timeouts = configuration.timeouts
        self.callbacks = callbacks
        server = nil
        httpHandler = nil
        remoteAddress = remote
        self.path = path
        hostHeader = host
        clientHandshake = ClientHandshake(subprotocols: configuration.subprotocols, requireSubprotocol: configuration.requireSubprotocol)
        phase = .clientConnecting(deadline: monotonicNow() + configuration.timeouts.handshake)
        core = ConnectionCore(role: .client, limits: configuration.limits, timeouts: configuration.timeouts, now: monotonicNow())
    }

    /// On the loop: start watching the socket.
    func register(writable: Bool) {
        watchingWrites = writable
        do {
            token = try loop.register(fd, events: interest, handler: self)
        } catch {
            // Out of epoll room (or memory): this connection cannot be served.
            if role == .server { closeSocket(report: nil) } else { failHandshake(.connectionClosed) }
        }
    }

    private var interest: UInt32 {
        peernode_EPOLLIN | peernode_EPOLLRDHUP | (watchingWrites ? peernode_EPOLLOUT : 0)
    }

    // MARK: events (loop thread; `LoopHandler`, called by the loop only)

    public func handle(events: UInt32) {
        if case .clientConnecting = phase, events & (peernode_EPOLLOUT | peernode_EPOLLERR | peernode_EPOLLHUP) != 0 {
            connected()
            return
        }
        if events & peernode_EPOLLOUT != 0 { flush() }
        if events & (peernode_EPOLLIN | peernode_EPOLLHUP | peernode_EPOLLERR | peernode_EPOLLRDHUP) != 0 { readAvailable() }
    }

    private func connected() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0, let handshake = clientHandshake else {
            failHandshake(.connectionClosed)
            return
        }
        phase = .clientHandshake(deadline: monotonicNow() + timeouts.handshake)
        watchingWrites = false
        loop.modify(fd, token: token, events: interest)
        writeBuffer.append(contentsOf: handshake.request(host: hostHeader, path: path))
        flush()
    }

    private func readAvailable() {
        // A few reads per wake-up keep one busy peer from starving the rest.
        for _ in 0..<4 {
            if case .closed = phase { return }
            let result: Syscall.Result<Int>
            do {
                result = try Syscall.call("read") { read(fd, loop.scratch.baseAddress, loop.scratch.count) }
            } catch {
                lost()
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                lost()
                return
            case let .done(n):
                received(UnsafeRawBufferPointer(rebasing: loop.scratch[0..<n]))
                if n < loop.scratch.count { return }
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        if readBuffer.isEmpty {
            // Parse straight out of the loop's buffer; keep only the unfinished tail.
            let used = process(bytes)
            if used < bytes.count, !isClosed { readBuffer.append(contentsOf: bytes[used...]) }
        } else {
            // Taken out while parsing: callbacks may close the connection meanwhile.
            var data = readBuffer
            readBuffer = []
            data.append(contentsOf: bytes)
            let used = data.withUnsafeBytes { process($0) }
            if !isClosed && used < data.count {
                data.removeFirst(used)
                readBuffer = data
            }
        }
    }

    private var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Handles what the bytes hold in the current phase; returns bytes used.
    private func process(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch phase {
        case .serverHandshake:
            let used = serverHandshake(bytes)
            if case .serverHandshake = phase {} else {
                onHeadRead?()
                onHeadRead = nil
            }
            return used
        case .clientHandshake:
            return clientResponse(bytes)
        case .open:
            var out = ConnectionCore.Output()
            let used = core.receive(bytes, now: monotonicNow(), into: &out)
            // What arrived moves the keepalive's deadline (a pong's answer: the next ping a
            // ping interval on), possibly before the tick the loop last heard of.
            if let due = core.nextDeadline { loop.tickNeeded(at: due) }
            apply(out)
            return used
        case .clientConnecting, .closingAfterWrite, .closed:
            return bytes.count
        }
    }

    private func serverHandshake(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let configuration = server else { return bytes.count }
        let parsed: (HTTPHead, Int)?
        do {
            parsed = try HTTPHead.parse(bytes, limit: limits.maximumHandshakeSize)
        } catch {
            let status = error == .tooLarge(limit: limits.maximumHandshakeSize) ? 431 : 400
            respondAndClose(HTTPResponse(status: status, text: "\(error)\n").encoded())
            return bytes.count
        }
        guard let (head, used) = parsed else { return 0 }
        switch ServerHandshake.decide(head, configuration: configuration) {
        case let .accept(response, path, subprotocol):
            self.path = path
            self.subprotocol = subprotocol
            writeBuffer.append(contentsOf: response)
            open()
            // Frames may already follow the request.
            return used + (used < bytes.count ? process(UnsafeRawBufferPointer(rebasing: bytes[used...])) : 0)
        case let .http(request):
            let response = httpHandler?(request) ?? HTTPResponse(status: 404, text: "not found\n")
            if let stream = response.stream, stream.length > 0 { bodyStream = (stream, 0, false) }
            respondAndClose(response.encoded())
            return bytes.count
        case let .reject(response, _):
            respondAndClose(response)
            return bytes.count
        }
    }

    private func clientResponse(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let handshake = clientHandshake else { return bytes.count }
        do {
            guard let (head, used) = try HTTPHead.parse(bytes, limit: limits.maximumHandshakeSize) else { return 0 }
            subprotocol = try handshake.validate(head)
            open()
            return used + (used < bytes.count ? process(UnsafeRawBufferPointer(rebasing: bytes[used...])) : 0)
        } catch {
            failHandshake(error)
            return bytes.count
        }
    }

    private func open() {
        core = ConnectionCore(role: role, limits: limits, timeouts: timeouts, now: monotonicNow())
        phase = .open
        // Its first keepalive is due a ping interval from now: the loop's next tick was
        // set by the handshake's deadline, which may be later (a ping interval shorter
        // than the handshake timeout went unsent until some other handler ticked).
        if let due = core.nextDeadline { loop.tickNeeded(at: due) }
        callbacks.onOpen(self)
        queued()
    }

    private func respondAndClose(_ response: [UInt8]) {
        phase = .closingAfterWrite
        answerStall = AnswerStall(now: monotonicNow())
        loop.tickNeeded(at: monotonicNow() + EventLoop.tickInterval)
        writeBuffer.append(contentsOf: response)
        flush()
    }

    private func failHandshake(_ error: HandshakeError) {
        closeSocket(report: nil)
        callbacks.onHandshakeFailure(self, error)
    }

    /// Acts on what the core produced.
    func apply(_ out: ConnectionCore.Output) {
        if !out.outgoing.isEmpty {
            writeBuffer.append(contentsOf: out.outgoing)
        }
        for m in out.messages { callbacks.onMessage(self, m) }
        for payload in out.pongs { callbacks.onPong(self, payload) }
        if let info = out.closed {
            flush()
            closeSocket(report: info)
        } else if !out.outgoing.isEmpty {
            queued()
        }
    }

    /// The peer went away without a close handshake (or the socket failed).
    private func lost() {
        // Every way out goes through `closeSocket`, which settles the loop's waiting work first.
        switch phase {
        case .open:
            var out = ConnectionCore.Output()
            core.connectionLost(into: &out)
            closeSocket(report: out.closed ?? CloseInfo(code: .abnormal, reason: "connection lost", byPeer: true))
        case .serverHandshake, .closingAfterWrite:
            closeSocket(report: nil)
        case .clientConnecting, .clientHandshake:
            failHandshake(.connectionClosed)
        case .closed:
            break
        }
    }

    /// A flush writes; where it calls into the application (a lost
    /// connection, a low-water notice, a body's next part, the socket
    /// closed) it settles the loop's waiting work first (`EventLoop.settle`).
    public var onlyWrites: Bool { true }

    /// Writes what is queued; watches for writability when the socket is full.
    public func flush() {
        flushScheduled = false
        if case .closed = phase { return }
        while writeStart < writeBuffer.count {
            let result: Syscall.Result<Int>
            do {
                result = try Syscall.call("write") {
                    writeBuffer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + writeStart, $0.count - writeStart, Int32(MSG_NOSIGNAL)) }
                }
            } catch {
                lost()
                return
            }
            switch result {
            case let .done(n):
                writeStart += n
                if n > 0, case .closingAfterWrite = phase { answerStall.wrote(now: monotonicNow()) }
            case .wouldBlock:
                if writeStart > (1 << 20) && writeStart > writeBuffer.count / 2 {
                    writeBuffer.removeFirst(writeStart)
                    writeStart = 0
                }
                if !watchingWrites {
                    watchingWrites = true
                    loop.modify(fd, token: token, events: interest)
                }
                noticeLowWater()
                askForPart()
                return
            }
        }
        if writeBuffer.capacity > (4 << 20) { writeBuffer = [] } else { writeBuffer.removeAll(keepingCapacity: true) }
        writeStart = 0
        if watchingWrites {
            watchingWrites = false
            loop.modify(fd, token: token, events: interest)
        }
        noticeLowWater()
        if bodyStream != nil { return askForPart() }
        if case .closingAfterWrite = phase { closeSocket(report: nil) }
    }

    private func noticeLowWater() {
        guard let notice = lowWater, case .open = phase, unsentBytes < notice.bytes else { return }
        lowWater = nil
        loop.settle()
        notice.body()
    }

    /// Closes a server connection that has not sent its request head whole
    /// (the listener makes room for a newer one); nothing is reported.
    func evict() {
        guard case .serverHandshake = phase else { return }
        closeSocket(report: nil)
    }

    func closeSocket(report info: CloseInfo?) {
        if case .closed = phase { return }
        // What follows calls into the application (`onSocketClosed`, `onClose`).
        loop.settle()
        lowWater = nil
        bodyStream = nil
        let wasOpen: Bool
        if case .open = phase { wasOpen = true } else { wasOpen = false }
        phase = .closed
        loop.deregister(fd, token: token)
        Glibc.close(fd)
        onHeadRead = nil
        onSocketClosed?()
        onSocketClosed = nil
        readBuffer = []
        writeBuffer = []
        if wasOpen, let info { callbacks.onClose(self, info) }
    }

    public func tick(now: Double) -> Double? {
        switch phase {
        case let .serverHandshake(deadline), let .clientConnecting(deadline), let .clientHandshake(deadline):
            if now >= deadline {
                if role == .server { closeSocket(report: nil) } else { failHandshake(.timeout) }
            }
        case .open:
            var out = ConnectionCore.Output()
            core.tick(now: now, into: &out)
            if !out.outgoing.isEmpty || out.closed != nil { apply(out) }
        case .closingAfterWrite:
            // The client took nothing of the answer for `stalledAnswer` while some waits: cut off.
            var queued: Int32 = 0
            if ioctl(fd, UInt(TIOCOUTQ), &queued) != 0 { queued = 0 }
            guard answerStall.stalled(queued: Int(queued), unsent: unsentBytes, now: now, limit: timeouts.stalledAnswer) else { return nextTick }
            // Reset, not closed in order: a FIN would wait behind the unread bytes, and the kernel would hold
            // them for minutes more; the answer is cut short either way (its Content-Length says so).
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
            closeSocket(report: nil)
        case .closed:
            break
        }
        return nextTick
    }

    /// When this connection's next deadline falls (`tick`'s answer).
    private var nextTick: Double? {
        switch phase {
        case let .serverHandshake(deadline), let .clientConnecting(deadline), let .clientHandshake(deadline): return deadline
        case .open: return core.nextDeadline
        // Whether the client takes the answer is looked at each tick.
        case .closingAfterWrite: return monotonicNow() + EventLoop.tickInterval
        case .closed: return nil
        }
    }

    /// The loop is stopping: the connection closes (1001 when open).
    public func shutdown() {
        if case .open = phase {
            closeSocket(report: CloseInfo(code: .goingAway, reason: "event loop shut down", byPeer: false))
        } else {
            closeSocket(report: nil)
        }
    }
}
