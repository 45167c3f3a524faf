import Crypto
import TestSupport
import Testing

@Suite("BLAKE2b, network keys, room and direct encryption")
struct CipherTests {
    @Test("BLAKE2b known answers (RFC 7693 Appendix A, reference KAT, checked with Python's hashlib)")
    func blake2b() throws {
        #expect(Hex.encode(BLAKE2b.hash(Array("abc".utf8), outputLength: 64)) ==
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923")
        let key = (0..<64).map { UInt8($0) }
        #expect(Hex.encode(try BLAKE2b.hash([UInt8](), key: key, outputLength: 64)) ==
            "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568")
        #expect(Hex.encode(try BLAKE2b.hash(Array("peernode".utf8), key: Array(key[0..<32]))) ==
            "53e2396597c55f39be9af8af7dfca26b0b914855fe99d69fd5d09a1c04ae8be4")
        #expect(throws: CryptoError.badKeyLength(what: "BLAKE2b key", expected: 32, actual: 15)) {
            try BLAKE2b.hash([1], key: [UInt8](repeating: 0, count: 15))
        }
    }

    @Test("network keys: derived from a name (documented formula), random, distinct")
    func networkKeys() throws {
        // docs/PROTOCOL.md: BLAKE2b-256("peernode/1 network-key" ‖ 0 ‖ name), checked with hashlib.
        let expected = try NetworkKey(bytes: hex("13e0a064e2419aa6726ab81f2b32c458109a60d87177eeb640616d192bc8b0a8"))
        #expect(NetworkKey.derived(fromName: "lan").isSame(as: expected))
        #expect(!NetworkKey.derived(fromName: "lan2").isSame(as: expected))
        #expect(!NetworkKey.generate().isSame(as: NetworkKey.generate()))
        #expect(throws: CryptoError.badKeyLength(what: "network key", expected: 32, actual: 16)) {
            try NetworkKey(bytes: [UInt8](repeating: 0, count: 16))
        }
    }

    @Test("room keys: the same name gives the same key; another network or name does not")
    func roomKeys() throws {
        let net = NetworkKey.derived(fromName: "a")
        let k1 = net.publicRoomKey(roomName: "#general")
        let sealed = try k1.seal(Array("hi".utf8))
        #expect(try net.publicRoomKey(roomName: "#general").open(sealed) == Array("hi".utf8))
        #expect(throws: CryptoError.decryptionFailed) { try net.publicRoomKey(roomName: "#other").open(sealed) }
        #expect(throws: CryptoError.decryptionFailed) {
            try NetworkKey.derived(fromName: "b").publicRoomKey(roomName: "#general").open(sealed)
        }
    }

    @Test("XChaCha20-Poly1305: round trip, tamper, associated data, short input")
    func symmetric() throws {
        let key = SymmetricKey.generate()
        let plain = Array("the quick brown fox".utf8)
        let sealed = try key.seal(plain, associatedData: [1, 2, 3])
        #expect(sealed.count == plain.count + SymmetricKey.overhead)
        #expect(try key.open(sealed, associatedData: [1, 2, 3]) == plain)
        #expect(throws: CryptoError.decryptionFailed) { try key.open(sealed, associatedData: [1, 2]) }
        for i in [0, 24, sealed.count - 1] {
            var bad = sealed
            bad[i] ^= 1
            #expect(throws: CryptoError.decryptionFailed) { try key.open(bad, associatedData: [1, 2, 3]) }
        }
        #expect(throws: CryptoError.ciphertextTooShort(minimum: 40, actual: 39)) {
            try key.open([UInt8](repeating: 0, count: 39))
        }
        #expect(try key.open(try key.seal([])) == [])
        #expect(throws: CryptoError.badKeyLength(what: "XChaCha20-Poly1305 key", expected: 32, actual: 31)) {
            try SymmetricKey(bytes: [UInt8](repeating: 0, count: 31))
        }
        // Two seals of one plaintext differ: the nonce is random.
        #expect(try key.seal(plain) != key.seal(plain))
    }

    @Test("direct messages: only the two parties can open them, both can")
    func direct() throws {
        let alice = try SigningKey.generate()
        let bob = try SigningKey.generate()
        let carol = try SigningKey.generate()
        let sealed = try DirectKey(own: alice, peer: bob.publicKey).seal(Array("psst".utf8))
        #expect(try DirectKey(own: bob, peer: alice.publicKey).open(sealed) == Array("psst".utf8))
        // The sender reads its own DM back (X25519 is symmetric).
        #expect(try DirectKey(own: alice, peer: bob.publicKey).open(sealed) == Array("psst".utf8))
        // Authenticated to the sender: Carol cannot read it, nor pass hers off as Alice's.
        #expect(throws: CryptoError.decryptionFailed) { try DirectKey(own: carol, peer: alice.publicKey).open(sealed) }
        let forged = try DirectKey(own: carol, peer: bob.publicKey).seal(Array("psst".utf8))
        #expect(throws: CryptoError.decryptionFailed) { try DirectKey(own: bob, peer: alice.publicKey).open(forged) }
        #expect(throws: CryptoError.ciphertextTooShort(minimum: 40, actual: 10)) {
            try DirectKey(own: bob, peer: alice.publicKey).open([UInt8](repeating: 0, count: 10))
        }
    }

    @Test("a public key that is not a curve point is refused for DMs")
    func badPoint() throws {
        let alice = try SigningKey.generate()
        // y = 2 is not the y-coordinate of any point on edwards25519.
        var notAPoint = [UInt8](repeating: 0, count: 32)
        notAPoint[0] = 2
        #expect(throws: CryptoError.badPublicKey) { try DirectKey(own: alice, peer: PublicKey(bytes: notAPoint)) }
    }
}
