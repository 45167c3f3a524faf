import Crypto

/// Why a link ended. Each is counted by the node and has a close code.
public enum LinkFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Handshake message 1 did not decrypt: the peer has another network key.
    case wrongNetworkKey
    /// The peer's identity binding was wrong (mismatch or bad signature).
    case badIdentity(String)
    /// The handshake did not finish within the timeout.
    case handshakeTimeout
    /// A handshake message was cut short, too long, out of turn or malformed.
    case malformedHandshake(String)
    /// A transport message did not decrypt (tampered, replayed or reordered).
    case transportDecryptFailed
    /// The peer's identity is blocked here.
    case blocked(PublicKey)
    /// Discovery (or `--peer`) said to expect one identity; another answered.
    case unexpectedIdentity(expected: PublicKey, got: PublicKey)
    /// This node itself answered (a node dialling its own address).
    case selfConnection
    case nonceExhausted

    public var description: String {
        switch self {
        case .wrongNetworkKey: return "wrong network key"
        case let .badIdentity(why): return "bad identity: \(why)"
        case .handshakeTimeout: return "handshake timed out"
        case let .malformedHandshake(why): return "malformed handshake: \(why)"
        case .transportDecryptFailed: return "transport message does not decrypt"
        case let .blocked(id): return "blocked identity \(id.shortFingerprint)"
        case let .unexpectedIdentity(expected, got): return "expected \(expected.shortFingerprint), got \(got.shortFingerprint)"
        case .selfConnection: return "connected to itself"
        case .nonceExhausted: return "nonce space exhausted"
        }
    }

    /// A short stable name for counters and logs.
    public var counterName: String {
        switch self {
        case .wrongNetworkKey: return "wrong_network_key"
        case .badIdentity: return "bad_identity"
        case .handshakeTimeout: return "handshake_timeout"
        case .malformedHandshake: return "malformed_handshake"
        case .transportDecryptFailed: return "transport_decrypt_failed"
        case .blocked: return "blocked"
        case .unexpectedIdentity: return "unexpected_identity"
        case .selfConnection: return "self_connection"
        case .nonceExhausted: return "nonce_exhausted"
        }
    }
}

/// One link's security layer, pure: the Noise XXpsk0 handshake, then every
/// message a Noise transport message. The shell feeds it the binary WebSocket
/// messages that arrive and the time; it answers with what to send, the
/// plaintexts to hand up, and when to close (STYLE.md §1).
public struct LinkSession {
    public enum Action: Equatable {
        case send([UInt8])
        case established(PublicKey)
        case deliver([UInt8])
        case close(LinkFailure)
    }

    /// Seconds a handshake may take.
    public static let defaultHandshakeTimeout = 10.0
    /// Transport messages per direction between rekeys (Noise §11.3); both
    /// sides count alike, so they rekey at the same message.
    public static let rekeyInterval: UInt64 = 1 << 20
    /// Largest plaintext one transport message carries.
    public static let maximumPlaintext = NoiseTransport.maximumPlaintext

    private var handshake: NoiseHandshake
    private var transport: NoiseTransport?
    private let me: PublicKey
    private let expected: PublicKey?
    private let isBlocked: @Sendable (PublicKey) -> Bool
    private let deadline: Double
    public private(set) var failed: LinkFailure?

    public init(
        initiator: Bool, identity: SigningKey, networkKey: NetworkKey, now: Double,
        handshakeTimeout: Double = LinkSession.defaultHandshakeTimeout, expectedRemote: PublicKey? = nil,
        isBlocked: @escaping @Sendable (PublicKey) -> Bool = { _ in false }, nick: String? = nil,
        version: LinkProtocol = .newest, cipher: NoiseCipher = .chaChaPoly
    ) throws(CryptoError) {
        handshake = try NoiseHandshake(role: initiator ? .initiator : .responder, identity: identity, networkKey: networkKey,
                                       prologue: version.prologue, cipher: cipher, nickClaim: Array((nick ?? "").utf8))
        me = identity.publicKey
        expected = expectedRemote
        self.isBlocked = isBlocked
        deadline = now + handshakeTimeout
    }

    public var isEstablished: Bool { transport != nil && failed == nil }
    public var remoteIdentity: PublicKey? { transport?.remoteIdentity }
    /// The cipher the link runs, once established.
    public var cipher: NoiseCipher? { transport?.cipher }
    /// The nick the peer claimed in its handshake, if it was valid text.
    public var remoteNick: String? {
        guard !handshake.remoteNickClaim.isEmpty, let text = String(validating: handshake.remoteNickClaim, as: UTF8.self) else { return nil }
        return (try? Nick(text))?.value
    }

    /// `body` on this session, in place (through a table's subscript: no copy).
    public mutating func apply(_ body: (inout LinkSession) -> [Action]) -> [Action] { body(&self) }

    /// The dialler's first message.
    public mutating func start() -> [Action] {
        guard handshake.isOurTurn, handshake.step == 0 else { return [] }
        return step { h throws(CryptoError) in [.send(try h.writeMessage())] }
    }

    /// A binary message from the peer.
    public mutating func receive(_ message: [UInt8]) -> [Action] {
        guard failed == nil else { return [] }
        if var t = transport {
            do {
                let plain = try t.decrypt(message)
                if t.counters.received % Self.rekeyInterval == 0 { t.rekeyReceiving() }
                transport = t
                return [.deliver(plain)]
            } catch {
                return fail(error == .noise(.nonceExhausted) ? .nonceExhausted : .transportDecryptFailed)
            }
        }
        return step { h throws(CryptoError) in
            try h.readMessage(message)
            return h.isOurTurn ? [.send(try h.writeMessage())] : []
        }
    }

    /// Encrypts a plaintext for the peer (at most `maximumPlaintext` bytes).
    public mutating func send(_ plaintext: [UInt8]) -> [Action] {
        guard failed == nil, var t = transport else { return [] }
        do {
            let sealed = try t.encrypt(plaintext)
            if t.counters.sent % Self.rekeyInterval == 0 { t.rekeySending() }
            transport = t
            return [.send(sealed)]
        } catch {
            return fail(error == .noise(.nonceExhausted) ? .nonceExhausted : .malformedHandshake("\(error)"))
        }
    }

    /// Time passes: a handshake past its deadline ends the link.
    public mutating func tick(now: Double) -> [Action] {
        guard failed == nil, transport == nil, now >= deadline else { return [] }
        return fail(.handshakeTimeout)
    }

    private mutating func step(_ body: (inout NoiseHandshake) throws(CryptoError) -> [Action]) -> [Action] {
        var actions: [Action]
        do {
            actions = try body(&handshake)
        } catch {
            return fail(Self.failure(for: error))
        }
        if handshake.isComplete {
            do {
                let t = try handshake.transport()
                let remote = t.remoteIdentity
                if remote == me { return actions + fail(.selfConnection) }
                if isBlocked(remote) { return actions + fail(.blocked(remote)) }
                if let expected, expected != remote { return actions + fail(.unexpectedIdentity(expected: expected, got: remote)) }
                transport = t
                actions.append(.established(remote))
            } catch {
                return fail(Self.failure(for: error))
            }
        }
        return actions
    }

    private mutating func fail(_ failure: LinkFailure) -> [Action] {
        failed = failure
        transport = nil
        return [.close(failure)]
    }

    static func failure(for error: CryptoError) -> LinkFailure {
        switch error {
        case .noise(.decryptFailed(message: 1)): return .wrongNetworkKey
        case .noise(.identityMismatch): return .badIdentity("identity does not match the static key")
        case .noise(.badIdentitySignature): return .badIdentity("signature over the handshake hash does not verify")
        case .noise(.nonceExhausted): return .nonceExhausted
        default: return .malformedHandshake(error.description)
        }
    }
}
