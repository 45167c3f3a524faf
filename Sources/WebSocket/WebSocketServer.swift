import CEpoll
import Glibc
import Reactor

/// A WebSocket server on one event loop. It also answers plain HTTP GET
/// requests through `httpHandler` (the relay serves `/healthz` and `/metrics`
/// on the same port); a GET it has no answer for gets 404, other methods 405.
public final class WebSocketServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Paths that accept an upgrade; nil accepts any path.
        public var paths: Set<String>?
        /// Subprotocols we speak, in order of preference (§1.9).
        public var subprotocols: [String]
        /// Refuse (400) a client that offers none of `subprotocols`.
        public var requireSubprotocol: Bool
        public var limits: WebSocketLimits
        public var timeouts: WebSocketTimeouts
        /// Pending connections the kernel queues before `accept`.
        public var backlog: Int32
        /// Connections open at once from one IP address; one more is closed
        /// at accept (so one host opening connections and sending nothing
        /// cannot use up the descriptors everyone else needs).
        public var maximumConnectionsPerAddress: Int
        /// Connections from one IP address that have not yet sent a whole
        /// request head ("half-open"): one more closes the oldest of them,
        /// and so does a new connection when the address is at
        /// `maximumConnectionsPerAddress` with some of its own half-open.
        /// So a local process that opens connections and sends nothing
        /// cannot keep out a browser, whose request comes at once. Nil (the
        /// default, the links' server): no such cap, and a connection past
        /// `maximumConnectionsPerAddress` is refused and counted.
        public var maximumHalfOpenPerAddress: Int?
        /// Told (on the loop) of each connection refused by that limit, with the address.
        public var onRefused: (@Sendable (String) -> Void)?
        /// Decides, on the loop, whether an upgrade that the protocol allows
        /// may open: a response refuses it (sent, then the socket closes);
        /// nil lets it open. For checks of who is asking (a token, `Origin`).
        public var admit: (@Sendable (HTTPRequest) -> HTTPResponse?)?

        /// Default for `maximumConnectionsPerAddress`: far above one node's
        /// needs (one link per pair, a few HTTP scrapes), far below the
        /// 1,024 descriptors a process gets by default.
        public static let defaultMaximumConnectionsPerAddress = 64
        /// After accept fails for want of descriptors (EMFILE, ENFILE), the
        /// listener rests this long instead of being woken again at once.
        public static let acceptPause = 0.1

        public init(
            paths: Set<String>? = nil, subprotocols: [String] = [], requireSubprotocol: Bool = false,
            limits: WebSocketLimits = WebSocketLimits(), timeouts: WebSocketTimeouts = WebSocketTimeouts(), backlog: Int32 = 1024,
            maximumConnectionsPerAddress: Int = Configuration.defaultMaximumConnectionsPerAddress,
            maximumHalfOpenPerAddress: Int? = nil
        ) {
            self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
            self.maximumHalfOpenPerAddress = maximumHalfOpenPerAddress
            self.paths = paths
            self.subprotocols = subprotocols
            self.requireSubprotocol = requireSubprotocol
            self.limits = limits
            self.timeouts = timeouts
            self.backlog = backlog
        }
    }

    public let loop: EventLoop
    public let configuration: Configuration
    let callbacks: WebSocketCallbacks
    let httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    private var listener: Listener?

    public init(loop: EventLoop, configuration: Configuration, callbacks: WebSocketCallbacks,
                httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil) {
        self.loop = loop
        self.configuration = configuration
        self.callbacks = callbacks
        self.httpHandler = httpHandler
    }

    /// Binds and listens (from any thread); returns the port (useful with port 0).
    @discardableResult
    public func listen(host: String, port: UInt16) throws(SystemError) -> UInt16 {
        let address = try SocketAddress.resolve(host, port: port)
        let fd = try Syscall.check("socket") { socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        Syscall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        var storage = address.storage
        do {
            _ = try Syscall.check("bind") {
                withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) } }
            }
            _ = try Syscall.check("listen") { Glibc.listen(fd, configuration.backlog) }
            try Syscall.setNonBlocking(fd)
        } catch {
            close(fd)
            throw error
        }
        let bound = SocketAddress.localPort(fd)
        let listener = Listener(fd: fd, loop: loop, configuration: configuration, callbacks: callbacks, httpHandler: httpHandler)
        self.listener = listener
        loop.execute { listener.start() }
        return bound
    }

    /// Stops accepting; open connections stay.
    public func stop() {
        guard let listener else { return }
        loop.execute { listener.shutdown() }
    }

    /// The listening socket, owned by the loop once started.
    final class Listener: LoopHandler, @unchecked Sendable {
        let fd: Int32
        let loop: EventLoop
        let configuration: Configuration
        let callbacks: WebSocketCallbacks
        let httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?
        private var token: UInt64 = 0
        private var closed = false
        /// Open connections by IP address (the text before the port).
        private var perAddress: [String: Int] = [:]
        /// By IP address, the connections still reading their request head, oldest first.
        private var halfOpen: [String: [WebSocketConnection]] = [:]
        private var pausedUntil: Double?

        init(fd: Int32, loop: EventLoop, configuration: Configuration, callbacks: WebSocketCallbacks,
             httpHandler: (@Sendable (HTTPRequest) -> HTTPResponse?)?) {
            self.fd = fd
            self.loop = loop
            self.configuration = configuration
            self.callbacks = callbacks
            self.httpHandler = httpHandler
        }

        func start() {
            do {
                token = try loop.register(fd, events: peernode_EPOLLIN, handler: self)
            } catch {
                // Out of epoll room: nothing can be accepted; the port is given back.
                closed = true
                close(fd)
            }
        }

        public func handle(events: UInt32) {
            while !closed {
                let accepted: Syscall.Result<Int32>
                do {
                    accepted = try Syscall.call("accept4") { peernode_accept4(fd) }
                } catch {
                    // EMFILE and friends: the listener rests a moment (level-triggered
                    // epoll would wake it again at once, spinning a core).
                    loop.modify(fd, token: token, events: 0)
                    let until = monotonicNow() + Configuration.acceptPause
                    pausedUntil = until
                    loop.tickNeeded(at: until)
                    return
                }
                guard case let .done(client) = accepted else { return }
                let remote = SocketAddress.peerName(client)
                let host = Self.host(of: remote)
                let waiting = halfOpen[host]?.count ?? 0
                if let cap = configuration.maximumHalfOpenPerAddress, waiting > 0,
                   waiting >= cap || perAddress[host, default: 0] >= configuration.maximumConnectionsPerAddress {
                    // The oldest that has still said nothing whole makes room (its close releases it).
                    halfOpen[host]?.first?.evict()
                }
                guard perAddress[host, default: 0] < configuration.maximumConnectionsPerAddress else {
                    close(client)
                    configuration.onRefused?(remote)
                    continue
                }
                perAddress[host, default: 0] += 1
                Syscall.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                let connection = WebSocketConnection(
                    accepted: client, remote: remote, loop: loop, configuration: configuration, callbacks: callbacks, httpHandler: httpHandler)
                let id = ObjectIdentifier(connection)
                if configuration.maximumHalfOpenPerAddress != nil {
                    halfOpen[host, default: []].append(connection)
                    connection.onHeadRead = { [weak self] in self?.headRead(id, host) }
                }
                connection.onSocketClosed = { [weak self] in
                    self?.headRead(id, host)
                    self?.release(host)
                }
                connection.register(writable: false)
            }
        }

        public func tick(now: Double) -> Double? {
            if let until = pausedUntil, now >= until, !closed {
                pausedUntil = nil
                loop.modify(fd, token: token, events: peernode_EPOLLIN)
            }
            return pausedUntil
        }

        /// The connection has its request head (or is gone): no longer half-open.
        private func headRead(_ id: ObjectIdentifier, _ host: String) {
            guard var waiting = halfOpen[host] else { return }
            waiting.removeAll { ObjectIdentifier($0) == id }
            halfOpen[host] = waiting.isEmpty ? nil : waiting
        }

        private func release(_ host: String) {
            guard let count = perAddress[host] else { return }
            perAddress[host] = count > 1 ? count - 1 : nil
        }

        /// "10.0.0.5:7733" → "10.0.0.5", "[fe80::1]:7733" → "[fe80::1]".
        static func host(of address: String) -> String {
            guard let colon = address.lastIndex(of: ":") else { return address }
            return String(address[..<colon])
        }

        public func shutdown() {
            guard !closed else { return }
            closed = true
            loop.deregister(fd, token: token)
            close(fd)
        }
    }
}

/// Opens client connections (RFC 6455 §4.1).
public enum WebSocketClient {
    public struct Configuration: Sendable {
        public var subprotocols: [String]
        /// Fail the handshake when the server picks no subprotocol.
        public var requireSubprotocol: Bool
        public var limits: WebSocketLimits
        public var timeouts: WebSocketTimeouts

        public init(subprotocols: [String] = [], requireSubprotocol: Bool = false,
                    limits: WebSocketLimits = WebSocketLimits(), timeouts: WebSocketTimeouts = WebSocketTimeouts()) {
            self.subprotocols = subprotocols
            self.requireSubprotocol = requireSubprotocol
            self.limits = limits
            self.timeouts = timeouts
        }
    }

    /// Starts connecting to `ws://host:port/path`; `onOpen` or
    /// `onHandshakeFailure` tells how it went. Name resolution happens here,
    /// on the calling thread.
    public static func connect(
        host: String, port: UInt16, path: String = "/", configuration: Configuration = Configuration(),
        callbacks: WebSocketCallbacks, loop: EventLoop
    ) throws(SystemError) -> WebSocketConnection {
        let address = try SocketAddress.resolve(host, port: port)
        let fd = try Syscall.check("socket") {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        Syscall.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        var storage = address.storage
        let rc = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) } }
        if rc != 0 && errno != EINPROGRESS {
            let e = errno
            close(fd)
            throw SystemError(call: "connect", errno: e)
        }
        let hostHeader = port == 80 ? host : "\(host):\(port)"
        let connection = WebSocketConnection(
            connecting: fd, loop: loop, host: hostHeader, remote: SocketAddress.describe(address.storage), path: path,
            configuration: configuration, callbacks: callbacks)
        loop.execute { connection.register(writable: true) }
        return connection
    }
}
