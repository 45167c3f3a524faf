import CSodium

/// The link handshake: `Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b`, or
/// `Noise_XXpsk0_25519_AESGCM_BLAKE2b` where both ends' CPUs have AES (Noise
/// rev. 34, §7.5 XX with the §9 `psk0` modifier):
///
///     -> psk, e
///     <- e, ee, s, es      payload: identity binding
///     -> s, se             payload: identity binding
///
/// The network key is the PSK, mixed in before anything else, so a device
/// without it fails at message 1 and never sees an identity. The static key is
/// the X25519 form of the node's Ed25519 identity. Messages 2 and 3 carry that
/// Ed25519 public key and its signature (context "handshake") over the
/// handshake hash at the point the payload is written; the reader checks that
/// the key converts to the static key it just decrypted and that the signature
/// verifies. Pure: bytes in, bytes out; no socket, no clock.
public struct NoiseHandshake {
    public enum Role: Sendable { case initiator, responder }

    /// The Noise protocol name for a cipher (its bytes start the handshake hash).
    public static func protocolName(_ cipher: NoiseCipher) -> String { "Noise_XXpsk0_25519_\(cipher.rawValue)_BLAKE2b" }
    /// Names the protocol version; both sides must use the same.
    public static let prologue = Array("peernode/1".utf8)
    /// Identity binding payload: Ed25519 public key then signature, then
    /// optionally the nick the node goes by (length 1 ‖ UTF-8 bytes).
    static let bindingLength = PublicKey.byteCount + Signature.byteCount
    /// Longest nick claim in a binding (as `Nick.maximumLength`).
    public static let maximumNickClaim = 32

    public let role: Role
    private let identity: SigningKey
    private let staticSecret: SecretBytes
    private let staticPublic: [UInt8]
    private var ephemeral: (secret: SecretBytes, publicKey: [UInt8])?
    private var remoteEphemeral: [UInt8]?
    private var remoteStatic: [UInt8]?
    private var state: NoiseSymmetricState
    /// Messages processed so far (0…3).
    public private(set) var step = 0
    /// The peer's Ed25519 identity, once its binding has been checked.
    public private(set) var remoteIdentity: PublicKey?
    /// The nick the peer said it goes by (unchecked text; may be empty).
    public private(set) var remoteNickClaim: [UInt8] = []
    private let ephemeralSeed: [UInt8]?
    private let nickClaim: [UInt8]

    /// `ephemeralSeed` fixes the ephemeral key, for test vectors only.
    /// `nickClaim` (at most `maximumNickClaim` bytes; longer is left out)
    /// travels encrypted in our binding, so a peer can name us at once.
    /// `cipher` must be available here (`NoiseCipher.isAvailable`).
    public init(role: Role, identity: SigningKey, networkKey: NetworkKey, prologue: [UInt8] = NoiseHandshake.prologue,
                cipher: NoiseCipher = .chaChaPoly, ephemeralSeed: [UInt8]? = nil, nickClaim: [UInt8] = []) throws(CryptoError) {
        try Sodium.ensureInitialised()
        guard cipher.isAvailable else { throw .noise(.cipherUnavailable(cipher.rawValue)) }
        self.role = role
        self.identity = identity
        self.nickClaim = nickClaim.count <= Self.maximumNickClaim ? nickClaim : []
        self.ephemeralSeed = ephemeralSeed
        staticSecret = SecretBytes(count: 32) { out in
            identity.secret.withUnsafeBytes { sk in
                _ = crypto_sign_ed25519_sk_to_curve25519(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        staticPublic = try Self.curvePublicKey(identity.publicKey)
        state = NoiseSymmetricState(protocolName: Self.protocolName(cipher), cipher: cipher)
        state.mixHash(prologue)
        // psk0: the PSK is the first token of message 1, for both sides.
        psk = networkKey.secret.withUnsafeBytes { Array($0) }
    }

    private var psk: [UInt8]

    /// The X25519 public key an Ed25519 identity converts to.
    static func curvePublicKey(_ key: PublicKey) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let rc = out.withUnsafeMutableBufferPointer { crypto_sign_ed25519_pk_to_curve25519($0.baseAddress!, key.bytes) }
        guard rc == 0 else { throw .badPublicKey }
        return out
    }

    public var isComplete: Bool { step == 3 }

    /// The handshake hash (channel binding), final once complete.
    public var handshakeHash: [UInt8] { state.h }

    /// Whether it is our turn to write.
    public var isOurTurn: Bool {
        guard step < 3 else { return false }
        return (step % 2 == 0) == (role == .initiator)
    }

    /// The next handshake message from us.
    public mutating func writeMessage() throws(CryptoError) -> [UInt8] {
        guard isOurTurn else { throw .noise(.outOfOrder) }
        var out: [UInt8] = []
        switch step {
        case 0:  // -> psk, e
            state.mixKeyAndHash(psk)
            writeEphemeral(into: &out)
            out += try state.encryptAndHash([])
        case 1:  // <- e, ee, s, es
            writeEphemeral(into: &out)
            state.mixKey(try Noise.dh(secret: try ours(), publicKey: try theirs(remoteEphemeral)))
            out += try state.encryptAndHash(staticPublic)
            state.mixKey(try Noise.dh(secret: staticSecret, publicKey: try theirs(remoteEphemeral)))
            out += try state.encryptAndHash(binding())
        default:  // -> s, se
            out += try state.encryptAndHash(staticPublic)
            state.mixKey(try Noise.dh(secret: staticSecret, publicKey: try theirs(remoteEphemeral)))
            out += try state.encryptAndHash(binding())
        }
        step += 1
        psk = []
        return out
    }

    /// Processes the peer's next handshake message.
    public mutating func readMessage(_ message: [UInt8]) throws(CryptoError) {
        guard step < 3, !isOurTurn else { throw .noise(.outOfOrder) }
        guard message.count <= Noise.maximumMessage else { throw .noise(.messageTooLong(message.count)) }
        var rest = message[...]
        let number = step + 1
        func take(_ n: Int) throws(CryptoError) -> [UInt8] {
            guard rest.count >= n else { throw .noise(.messageTooShort) }
            defer { rest = rest.dropFirst(n) }
            return Array(rest.prefix(n))
        }
        switch step {
        case 0:  // -> psk, e
            state.mixKeyAndHash(psk)
            try readEphemeral(take(Noise.dhLength))
            let payload = try state.decryptAndHash(Array(rest), message: number)
            guard payload.isEmpty else { throw .noise(.badPayload) }
        case 1:  // <- e, ee, s, es
            try readEphemeral(take(Noise.dhLength))
            state.mixKey(try Noise.dh(secret: try ours(), publicKey: try theirs(remoteEphemeral)))
            remoteStatic = try state.decryptAndHash(take(Noise.dhLength + Noise.tagLength), message: number)
            state.mixKey(try Noise.dh(secret: try ours(), publicKey: try theirs(remoteStatic)))
            try readBinding(Array(rest), message: number)
        default:  // -> s, se
            remoteStatic = try state.decryptAndHash(take(Noise.dhLength + Noise.tagLength), message: number)
            state.mixKey(try Noise.dh(secret: try ours(), publicKey: try theirs(remoteStatic)))
            try readBinding(Array(rest), message: number)
        }
        step += 1
        psk = []
    }

    /// The transport ciphers, once the handshake is complete (Noise §5.3 Split).
    public func transport() throws(CryptoError) -> NoiseTransport {
        guard isComplete, let remoteIdentity else { throw .noise(.outOfOrder) }
        let (initiatorToResponder, responderToInitiator) = state.split()
        return role == .initiator
            ? NoiseTransport(sending: initiatorToResponder, receiving: responderToInitiator, remoteIdentity: remoteIdentity, handshakeHash: state.h)
            : NoiseTransport(sending: responderToInitiator, receiving: initiatorToResponder, remoteIdentity: remoteIdentity, handshakeHash: state.h)
    }

    // MARK: tokens

    private mutating func writeEphemeral(into out: inout [UInt8]) {
        let e = Noise.keyPair(seed: ephemeralSeed)
        ephemeral = e
        out += e.publicKey
        state.mixHash(e.publicKey)
        state.mixKey(e.publicKey)  // §9.2: in PSK handshakes `e` also calls MixKey
    }

    private mutating func readEphemeral(_ key: [UInt8]) throws(CryptoError) {
        remoteEphemeral = key
        state.mixHash(key)
        state.mixKey(key)
    }

    private func ours() throws(CryptoError) -> SecretBytes {
        guard let ephemeral else { throw .noise(.outOfOrder) }
        return ephemeral.secret
    }

    private func theirs(_ key: [UInt8]?) throws(CryptoError) -> [UInt8] {
        guard let key else { throw .noise(.outOfOrder) }
        return key
    }

    /// Our Ed25519 identity and its signature over the handshake hash so far.
    private func binding() -> [UInt8] {
        let signed = identity.publicKey.bytes + identity.sign(state.h, context: .handshake)
        return nickClaim.isEmpty ? signed : signed + [UInt8(nickClaim.count)] + nickClaim
    }

    private mutating func readBinding(_ ciphertext: [UInt8], message: Int) throws(CryptoError) {
        let hashBefore = state.h
        let payload = try state.decryptAndHash(ciphertext, message: message)
        // Exactly the binding, or the binding and a nick claim of 1…32 bytes.
        if payload.count > Self.bindingLength {
            let length = Int(payload[Self.bindingLength])
            guard length >= 1, length <= Self.maximumNickClaim, payload.count == Self.bindingLength + 1 + length else {
                throw .noise(.badPayload)
            }
            remoteNickClaim = Array(payload[(Self.bindingLength + 1)...])
        }
        guard payload.count >= Self.bindingLength else { throw .noise(.badPayload) }
        let key: PublicKey
        do { key = try PublicKey(bytes: payload[0..<32]) } catch { throw .noise(.badPayload) }
        guard let rs = remoteStatic, (try? Self.curvePublicKey(key)) == rs else { throw .noise(.identityMismatch) }
        do {
            try key.verify(signature: payload[32..<Self.bindingLength], message: hashBefore, context: .handshake)
        } catch {
            throw .noise(.badIdentitySignature)
        }
        remoteIdentity = key
    }
}

/// The two transport ciphers of a finished handshake. Each message is
/// `ENCRYPT(k, n, "", plaintext)`; at most 65 535 bytes on the wire.
public struct NoiseTransport: Sendable {
    /// Largest plaintext in one transport message.
    public static let maximumPlaintext = Noise.maximumMessage - Noise.tagLength

    var sending: NoiseCipherState
    var receiving: NoiseCipherState
    public let remoteIdentity: PublicKey
    public let handshakeHash: [UInt8]
    /// The cipher both directions use.
    public var cipher: NoiseCipher { sending.cipher }

    public mutating func encrypt(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard plaintext.count <= Self.maximumPlaintext else { throw .noise(.messageTooLong(plaintext.count + Noise.tagLength)) }
        return try sending.encrypt(ad: [], plaintext)
    }

    public mutating func decrypt(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard message.count <= Noise.maximumMessage else { throw .noise(.messageTooLong(message.count)) }
        return try receiving.decrypt(ad: [], message, message: 0)
    }

    /// Noise §11.3: both sides call this at the same agreed point.
    public mutating func rekeySending() { sending.rekey() }
    public mutating func rekeyReceiving() { receiving.rekey() }

    /// Messages sent and received so far under the current keys.
    public var counters: (sent: UInt64, received: UInt64) { (sending.nonce, receiving.nonce) }
}
