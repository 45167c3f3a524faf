import NetworkText
import CEpoll

/// A received WebSocket message.
public enum WebSocketMessage: Equatable, Sendable {
    case text(String)
    case binary([UInt8])
}

/// Limits of one connection. Every one is named here and documented in
/// docs/WEBSOCKET.md; tests use small values to reach them.
public struct WebSocketLimits: Sendable, Equatable {
    /// Largest message (all fragments together), bytes. A declared frame
    /// length that would pass it is refused before its payload is read (1009).
    public var maximumMessageSize: Int
    /// Most fragments in one message (1009 past it).
    public var maximumFragments: Int
    /// Bytes queued for sending but not yet written; a peer that lets more
    /// pile up is not reading and is closed (1008).
    public var maximumSendQueue: Int
    /// Largest HTTP request or response head during the handshake (431 / refused).
    public var maximumHandshakeSize: Int
    /// False for binary-only protocols: a text message is closed with 1003.
    public var acceptsText: Bool

    public static let defaultMaximumMessageSize = 16 << 20
    public static let defaultMaximumFragments = 4096
    public static let defaultMaximumSendQueue = 32 << 20
    public static let defaultMaximumHandshakeSize = 8 << 10

    public init(
        maximumMessageSize: Int = defaultMaximumMessageSize, maximumFragments: Int = defaultMaximumFragments,
        maximumSendQueue: Int = defaultMaximumSendQueue, maximumHandshakeSize: Int = defaultMaximumHandshakeSize,
        acceptsText: Bool = true
    ) {
        self.acceptsText = acceptsText
        self.maximumMessageSize = maximumMessageSize
        self.maximumFragments = maximumFragments
        self.maximumSendQueue = maximumSendQueue
        self.maximumHandshakeSize = maximumHandshakeSize
    }
}

/// Timings of one connection, in seconds.
public struct WebSocketTimeouts: Sendable, Equatable {
    /// Opening handshake must complete within this.
    public var handshake: Double = 10
    /// With nothing received for this long, a ping is sent.
    public var pingInterval: Double = 20
    /// After a ping, something must arrive within this, or the peer is gone.
    public var pongDeadline: Double = 10
    /// After sending a close frame, the peer's close must arrive within this.
    public var closeDeadline: Double = 5
    /// A plain HTTP answer (a file the page serves, an error) of which the
    /// client takes no byte for this long, while some wait unsent, is cut
    /// off (as nginx's `send_timeout`): a download nobody reads holds its
    /// connection, its file and its buffer no longer.
    public var stalledAnswer: Double = 60

    public init(handshake: Double = 10, pingInterval: Double = 20, pongDeadline: Double = 10, closeDeadline: Double = 5,
                stalledAnswer: Double = 60) {
        self.handshake = handshake
        self.pingInterval = pingInterval
        self.pongDeadline = pongDeadline
        self.closeDeadline = closeDeadline
        self.stalledAnswer = stalledAnswer
    }
}

/// Why a connection ended, as reported to the application.
public struct CloseInfo: Equatable, Sendable {
    public let code: CloseCode
    /// The peer's words when it closed (any UTF-8 it chose): `PeerText`, so
    /// printing it can never send its escapes to a screen or a log.
    public let reason: PeerText
    /// True when the peer sent this close; false when we ended the link.
    public let byPeer: Bool

    public init(code: CloseCode, reason: String, byPeer: Bool) {
        self.code = code
        self.reason = PeerText(reason)
        self.byPeer = byPeer
    }
}

/// The WebSocket protocol of one open connection (after the handshake), with
/// no socket and no clock: bytes and time in, messages, bytes to send and a
/// close decision out (STYLE.md §1). The shell in `Connection` does the I/O.
struct ConnectionCore {
    enum Role { case client, server }

    enum State: Equatable {
        case open
        /// We sent a close frame and wait for the peer's (until `deadline`).
        case closeSent(deadline: Double)
        /// Both closes exchanged, or the link failed: the socket should go.
        case closed
    }

    /// What one call produced.
    struct Output {
        var messages: [WebSocketMessage] = []
        /// Frames to write (pong, close).
        var outgoing: [UInt8] = []
        /// Set once, when the connection is over (the shell closes the socket).
        var closed: CloseInfo?
        /// Payloads of the pongs that arrived (a ping's payload comes back).
        var pongs: [[UInt8]] = []
    }

    let role: Role
    let limits: WebSocketLimits
    let timeouts: WebSocketTimeouts
    private let parser: FrameParser
    private(set) var state: State = .open
    /// How the close that we sent is reported once the handshake ends.
    private var ourClose: CloseInfo?

    // Fragment assembly (§5.4).
    private var fragmentOpcode: Opcode?
    private var fragments: [UInt8] = []
    private var fragmentCount = 0
    private var utf8 = UTF8Validator()

    // Liveness.
    private(set) var lastReceived: Double
    private var pingSentAt: Double?

    private var masking = MaskingKeys()

    init(role: Role, limits: WebSocketLimits, timeouts: WebSocketTimeouts, now: Double) {
        self.role = role
        self.limits = limits
        self.timeouts = timeouts
        parser = FrameParser(expectMasked: role == .server)
        lastReceived = now
    }

    // MARK: receiving

    /// Consumes every complete frame at the start of `bytes`; returns how
    /// many bytes were used (the rest waits for more).
    mutating func receive(_ bytes: UnsafeRawBufferPointer, now: Double, into out: inout Output) -> Int {
        var used = 0
        if !bytes.isEmpty { lastReceived = now; pingSentAt = nil }
        while state != .closed {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[used...])
            let parsed: (frame: Frame, consumed: Int)?
            do {
                parsed = try parser.parse(rest, allowance: limits.maximumMessageSize - fragments.count)
            } catch {
                fail(error, now: now, into: &out)
                return bytes.count
            }
            guard let (frame, consumed) = parsed else { break }
            used += consumed
            do {
                try handle(frame, now: now, into: &out)
            } catch {
                fail(error, now: now, into: &out)
                return bytes.count
            }
        }
        return state == .closed ? bytes.count : used
    }

    private mutating func handle(_ frame: Frame, now: Double, into out: inout Output) throws(WebSocketError) {
        switch frame.opcode {
        case .ping:
            // §5.5.2: answer with a pong carrying the same payload, unless closing.
            if state == .open { append(.pong, frame.payload, to: &out.outgoing) }
        case .pong:
            out.pongs.append(frame.payload)
        case .close:
            try receiveClose(frame.payload, now: now, into: &out)
        case .text, .binary:
            // §5.4: a new data frame while a fragmented message is open is an error.
            guard fragmentOpcode == nil else { throw .badFragmentation }
            // §7.4.1: 1003 for a data type the endpoint cannot accept.
            if frame.opcode == .text && !limits.acceptsText { throw .unsupportedData }
            if state != .open { return }
            if frame.fin {
                try deliver(opcode: frame.opcode, payload: frame.payload, into: &out)
            } else {
                fragmentOpcode = frame.opcode
                fragments = frame.payload
                fragmentCount = 1
                utf8 = UTF8Validator()
                if frame.opcode == .text { try validate(frame.payload) }
            }
        case .continuation:
            guard let opcode = fragmentOpcode else { throw .badFragmentation }
            fragmentCount += 1
            guard fragmentCount <= limits.maximumFragments else { throw .tooManyFragments(limit: limits.maximumFragments) }
            if opcode == .text { try validate(frame.payload) }
            fragments.append(contentsOf: frame.payload)
            if frame.fin {
                let whole = fragments
                fragments = []
                fragmentOpcode = nil
                fragmentCount = 0
                if state == .open {
                    if opcode == .text {
                        guard utf8.isComplete else { throw .invalidUTF8 }
                        out.messages.append(.text(String(decoding: whole, as: UTF8.self)))
                    } else {
                        out.messages.append(.binary(whole))
                    }
                }
            }
        }
    }

    private mutating func validate(_ bytes: [UInt8]) throws(WebSocketError) {
        guard bytes.withUnsafeBytes({ utf8.feed($0) }) else { throw .invalidUTF8 }
    }

    private mutating func deliver(opcode: Opcode, payload: [UInt8], into out: inout Output) throws(WebSocketError) {
        if opcode == .text {
            // §8.1: invalid UTF-8 in a text message → 1007.
            guard UTF8Validator.isValid(payload) else { throw .invalidUTF8 }
            out.messages.append(.text(String(decoding: payload, as: UTF8.self)))
        } else {
            out.messages.append(.binary(payload))
        }
    }

    /// §5.5.1, §7.1.5: read the peer's status and reason; answer if we had not closed.
    private mutating func receiveClose(_ payload: [UInt8], now: Double, into out: inout Output) throws(WebSocketError) {
        var code = CloseCode.noStatus
        var reason = ""
        if payload.count == 1 { throw .badClosePayload }
        if payload.count >= 2 {
            code = CloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isSendable else { throw .badClosePayload }
            let reasonBytes = Array(payload[2...])
            guard UTF8Validator.isValid(reasonBytes) else { throw .invalidUTF8 }
            reason = String(decoding: reasonBytes, as: UTF8.self)
        }
        switch state {
        case .open:
            // Echo the status (§5.5.1); with none, reply with an empty close.
            let reply = code == .noStatus ? [] : FrameEncoder.closePayload(code, reason: "")
            append(.close, reply, to: &out.outgoing)
            state = .closed
            out.closed = CloseInfo(code: code, reason: reason, byPeer: true)
        case .closeSent:
            state = .closed
            out.closed = ourClose ?? CloseInfo(code: code, reason: reason, byPeer: true)
        case .closed:
            break
        }
    }

    private mutating func fail(_ error: WebSocketError, now: Double, into out: inout Output) {
        close(error.closeCode, reason: error.description, now: now, into: &out)
        // After a protocol failure nothing more is read (§7.1.7 "Fail the WebSocket Connection").
        state = .closed
        out.closed = ourClose
    }

    // MARK: sending

    /// Starts the close handshake (§7.1.2) with a code that may go on the wire.
    mutating func close(_ code: CloseCode, reason: String, now: Double, into out: inout Output) {
        guard state == .open else { return }
        let sendable = code.isSendable ? code : .normal
        append(.close, FrameEncoder.closePayload(sendable, reason: reason), to: &out.outgoing)
        ourClose = CloseInfo(code: sendable, reason: reason, byPeer: false)
        state = .closeSent(deadline: now + timeouts.closeDeadline)
    }

    /// Appends a whole message as one frame.
    mutating func encode(_ message: WebSocketMessage, to out: inout [UInt8]) {
        switch message {
        case let .text(s):
            var copy = s
            copy.withUTF8 { append(.text, UnsafeRawBufferPointer($0), fin: true, to: &out) }
        case let .binary(b):
            b.withUnsafeBytes { append(.binary, $0, fin: true, to: &out) }
        }
    }

    /// Appends one fragment of a message (`first` picks the opcode, §5.4).
    mutating func encodeFragment(_ payload: [UInt8], opcode: Opcode, first: Bool, last: Bool, to out: inout [UInt8]) {
        payload.withUnsafeBytes { append(first ? opcode : .continuation, $0, fin: last, to: &out) }
    }

    mutating func encodePing(_ payload: [UInt8], to out: inout [UInt8]) {
        append(.ping, payload, to: &out)
    }

    private mutating func append(_ opcode: Opcode, _ payload: [UInt8], to out: inout [UInt8]) {
        payload.withUnsafeBytes { append(opcode, $0, fin: true, to: &out) }
    }

    private mutating func append(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer, fin: Bool, to out: inout [UInt8]) {
        let key = role == .client ? masking.next() : nil
        FrameEncoder.append(opcode: opcode, fin: fin, payload: payload, maskingKey: key, to: &out)
    }

    // MARK: time

    /// Liveness and close deadlines. Returns a ping to send, or closes.
    mutating func tick(now: Double, into out: inout Output) {
        switch state {
        case let .closeSent(deadline) where now >= deadline:
            state = .closed
            out.closed = ourClose
        case .open:
            if let sent = pingSentAt {
                if now - sent >= timeouts.pongDeadline {
                    // The peer stopped answering: no close frame can reach it.
                    state = .closed
                    out.closed = CloseInfo(code: .abnormal, reason: "no answer to ping within \(timeouts.pongDeadline)s", byPeer: false)
                }
            } else if now - lastReceived >= timeouts.pingInterval {
                pingSentAt = now
                append(.ping, [], to: &out.outgoing)
            }
        default:
            break
        }
    }

    /// When `tick` next has something to check: the close deadline, the
    /// pong's, or the next ping's (nil once closed).
    var nextDeadline: Double? {
        switch state {
        case let .closeSent(deadline): return deadline
        case .open: return pingSentAt.map { $0 + timeouts.pongDeadline } ?? lastReceived + timeouts.pingInterval
        default: return nil
        }
    }

    /// The link ended under us (EOF, reset) without a close handshake.
    mutating func connectionLost(into out: inout Output) {
        guard state != .closed else { return }
        state = .closed
        out.closed = ourClose.map { CloseInfo(code: .abnormal, reason: "connection lost after close sent: \($0.reason)", byPeer: false) }
            ?? CloseInfo(code: .abnormal, reason: "connection lost", byPeer: true)
    }
}

/// Masking keys from the kernel's secure generator (§5.3: unpredictable),
/// fetched 256 at a time with one `getrandom` call, so a frame costs no
/// system call of its own.
struct MaskingKeys {
    private var pool: [UInt32] = []

    mutating func next() -> UInt32 {
        if pool.isEmpty {
            pool = [UInt32](repeating: 0, count: 256)
            let filled = pool.withUnsafeMutableBytes { peernode_getrandom($0.baseAddress, $0.count) }
            if filled != pool.count * 4 {
                // getrandom(2) only fails before the pool is seeded at boot or
                // on a broken kernel; fall back to the slower path.
                var rng = SystemRandomNumberGenerator()
                pool = pool.map { _ in UInt32.random(in: .min ... .max, using: &rng) }
            }
        }
        return pool.removeLast()
    }
}
