import CSodium

/// CPace, the balanced password-authenticated key exchange of
/// draft-irtf-cfrg-cpace (ristretto255 with SHA-512, initiator–responder
/// transcript, explicit key confirmation), on libsodium's primitives.
///
/// Both sides know a short code. Each sends one group element made from the
/// code; each ends with the same intermediate session key (ISK) only if the
/// codes were equal. Someone who records the exchange learns nothing that
/// lets them test a guess of the code; someone who takes part gets one guess
/// per exchange. docs/PROTOCOL.md §15 gives every byte.
public enum CPace {
    /// Domain separation of the suite (the draft's `G.DSI`).
    static let dsi = Array("CPaceRistretto255".utf8)
    /// SHA-512's input block: the generator string pads the code to fill it.
    static let hashBlock = 128
    public static let sidLength = 16
    public static let shareLength = Int(crypto_core_ristretto255_BYTES)
    public static let scalarLength = Int(crypto_core_ristretto255_SCALARBYTES)
    public static let iskLength = 64
    public static let tagLength = 64

    /// A length-prefixed string (`prepend_len`): the length as LEB128, then the bytes.
    static func prependLength(_ bytes: [UInt8]) -> [UInt8] {
        var length = bytes.count, out: [UInt8] = []
        repeat {
            let low = UInt8(length & 0x7f)
            length >>= 7
            out.append(length > 0 ? low | 0x80 : low)
        } while length > 0
        return out + bytes
    }

    /// `lv_cat`: each part length-prefixed, in order.
    static func lvCat(_ parts: [[UInt8]]) -> [UInt8] { parts.flatMap(prependLength) }

    static func sha512(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha512_BYTES))
        _ = crypto_hash_sha512(&out, bytes, UInt64(bytes.count))
        return out
    }

    /// The generator string: `lv_cat(DSI, PRS, zero padding, CI, sid)`, the
    /// padding so that DSI and the code fill SHA-512's first block.
    static func generatorString(code: [UInt8], channel: [UInt8], sid: [UInt8]) -> [UInt8] {
        let padding = max(0, hashBlock - 1 - prependLength(code).count - prependLength(dsi).count)
        return lvCat([dsi, code, [UInt8](repeating: 0, count: padding), channel, sid])
    }

    /// The session's generator: SHA-512 of the generator string mapped into
    /// ristretto255 (`crypto_core_ristretto255_from_hash`).
    public static func generator(code: [UInt8], channel: [UInt8], sid: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialised()
        let hash = sha512(generatorString(code: code, channel: channel, sid: sid))
        var point = [UInt8](repeating: 0, count: shareLength)
        guard crypto_core_ristretto255_from_hash(&point, hash) == 0 else { throw .badPublicKey }
        return point
    }

    /// One side of an exchange before the other's share arrives.
    public struct Party {
        let scalar: SecretBytes
        public let share: [UInt8]
        let sid: [UInt8]

        /// A random scalar times the generator made from `code`. `scalar` is
        /// for test vectors only.
        public init(code: [UInt8], channel: [UInt8], sid: [UInt8], scalar fixed: [UInt8]? = nil) throws(CryptoError) {
            try Sodium.checkLength("CPace session id", sid, CPace.sidLength)
            let g = try CPace.generator(code: code, channel: channel, sid: sid)
            let y: SecretBytes
            if let fixed {
                try Sodium.checkLength("CPace scalar", fixed, CPace.scalarLength)
                y = SecretBytes(copying: fixed)
            } else {
                y = SecretBytes(count: CPace.scalarLength) { crypto_core_ristretto255_scalar_random($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
            }
            var point = [UInt8](repeating: 0, count: CPace.shareLength)
            let rc = y.withUnsafeBytes { crypto_scalarmult_ristretto255(&point, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), g) }
            guard rc == 0 else { throw .badPublicKey }
            scalar = y
            share = point
            self.sid = sid
        }

        /// The shared point with `peerShare`, refused when it is not a valid
        /// encoding or the product is the identity (`scalar_mult_vfy`).
        func shared(with peerShare: [UInt8]) throws(CryptoError) -> SecretBytes {
            guard peerShare.count == CPace.shareLength, crypto_core_ristretto255_is_valid_point(peerShare) == 1 else {
                throw .badPublicKey
            }
            var failed = false
            let k = SecretBytes(count: CPace.shareLength) { out in
                let rc = scalar.withUnsafeBytes {
                    crypto_scalarmult_ristretto255(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   $0.baseAddress!.assumingMemoryBound(to: UInt8.self), peerShare)
                }
                failed = rc != 0
            }
            guard !failed else { throw .badPublicKey }
            return k
        }
    }

    /// What both sides hold once the shares are exchanged: the ISK and the
    /// two confirmation tags.
    public struct Result {
        public let isk: SecretBytes
        /// The initiator's tag (`Ta`) and the responder's (`Tb`).
        public let initiatorTag: [UInt8]
        public let responderTag: [UInt8]

        /// A 32-byte key for `purpose`, derived from the ISK (BLAKE2b keyed
        /// with it): what the exchange protects after confirmation.
        public func key(for purpose: String) throws(CryptoError) -> SymmetricKey {
            let secret = isk.withUnsafeBytes { Array($0) }
            return try SymmetricKey(bytes: try BLAKE2b.hash(Array(purpose.utf8) + [0], key: secret, outputLength: 32))
        }
    }

    /// ISK = SHA-512(lv_cat(DSI‖"_ISK", sid, K) ‖ lv_cat(Ya, ADa) ‖ lv_cat(Yb, ADb));
    /// mac_key = SHA-512("CPaceMac" ‖ sid ‖ ISK); each tag is HMAC-SHA-512
    /// under mac_key of its sender's `lv_cat(Y, AD)`.
    public static func finish(_ party: Party, peerShare: [UInt8], initiator: Bool,
                              initiatorData: [UInt8], responderData: [UInt8]) throws(CryptoError) -> Result {
        let k = try party.shared(with: peerShare)
        let ya = initiator ? party.share : peerShare
        let yb = initiator ? peerShare : party.share
        let ownA = lvCat([ya, initiatorData]), ownB = lvCat([yb, responderData])
        let prefix = k.withUnsafeBytes { lvCat([dsi + Array("_ISK".utf8), party.sid, Array($0)]) }
        let isk = sha512(prefix + ownA + ownB)
        let macKey = sha512(Array("CPaceMac".utf8) + party.sid + isk)
        return Result(isk: SecretBytes(copying: isk), initiatorTag: hmac(macKey, ownA), responderTag: hmac(macKey, ownB))
    }

    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var state = crypto_auth_hmacsha512_state()
        var out = [UInt8](repeating: 0, count: tagLength)
        _ = crypto_auth_hmacsha512_init(&state, key, key.count)
        _ = crypto_auth_hmacsha512_update(&state, message, UInt64(message.count))
        _ = crypto_auth_hmacsha512_final(&state, &out)
        return out
    }
}

extension CPace.Result {
    /// The ISK in hex, for test vectors.
    public var iskHex: String { isk.withUnsafeBytes { Hex.encode($0) } }
}

extension CPace {
    /// The responder's tag had the shared point been `k`: what an
    /// eavesdropper can compute when it stands a public point in for the
    /// secret one (the offline-guessing test uses it to show that none fits).
    public static func tagUnderPoint(_ k: [UInt8], sid: [UInt8], ya: [UInt8], adA: [UInt8], yb: [UInt8], adB: [UInt8]) -> [UInt8] {
        let isk = sha512(lvCat([dsi + Array("_ISK".utf8), sid, k]) + lvCat([ya, adA]) + lvCat([yb, adB]))
        return hmac(sha512(Array("CPaceMac".utf8) + sid + isk), lvCat([yb, adB]))
    }
}
