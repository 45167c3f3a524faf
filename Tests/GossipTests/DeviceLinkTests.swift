import Crypto
import Foundation
import Gossip
import TestSupport
import Testing

/// The account's conversation key in the tests and golden vectors: secret 0x88….
enum DeviceLinkKeys {
    static let box = try! BoxKeyPair(secretBytes: [UInt8](repeating: 0x88, count: 32))  // test input
}

/// Linking a device (docs/PROTOCOL.md §15): the exchange, what an
/// eavesdropper and a wrong code get, the golden transcript, the limits.
@Suite("Device link exchange and certificates")
struct DeviceLinkTests {
    static let network = NetworkKey.derived(fromName: "golden")
    static let account = try! SigningKey(seed: [UInt8](repeating: 0x11, count: 32))
    static let device = try! SigningKey(seed: [UInt8](repeating: 0x33, count: 32))
    static let bob = try! SigningKey(seed: [UInt8](repeating: 0x22, count: 32))

    /// A whole exchange between a joiner typing `typed` and an adder showing `shown`.
    struct Transcript {
        var hello: [UInt8] = [], answer: [UInt8] = [], confirm: [UInt8] = [], welcome: [UInt8] = []
    }

    static func grant(name: String = "laptop", issued: UInt64 = 1_700_000_000_000) throws -> DeviceGrant {
        DeviceGrant(certificate: try DeviceCertificate.issue(by: account, for: device.publicKey, name: name, at: issued, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey),
                    conversationSecret: DeviceLinkKeys.box.exportedSecret, nick: try Nick("alice"),
                    privateRooms: [.init(id: try RoomID(bytes: [UInt8](repeating: 0x44, count: 32)), key: [UInt8](repeating: 0x55, count: 32), name: try RoomName("#plans"))],
                    publicRooms: [try RoomName("#general")], trusted: [bob.publicKey], blocked: [],
                    roomKeys: [.init(room: try RoomID(bytes: [UInt8](repeating: 0x44, count: 32)), event: try MessageID(bytes: [UInt8](repeating: 0x66, count: 32)),
                                     epoch: 3, key: [UInt8](repeating: 0x77, count: 32))],
                    olderSecrets: [(epoch: 1, secret: [UInt8](repeating: 0x99, count: 32))])
    }

    static func run(typed: String, shown: String, sid: [UInt8]? = nil, ya: [UInt8]? = nil, yb: [UInt8]? = nil,
                    nonces: ([UInt8], [UInt8])? = nil) throws -> (Transcript, DeviceGrant?) {
        var t = Transcript()
        var joiner = try DeviceLinkJoiner(code: DeviceLink.password(typed) ?? [], network: network, device: device.publicKey, sid: sid, scalar: ya)
        var adder = DeviceLinkAdder(code: DeviceLink.password(shown) ?? [], network: network, account: account.publicKey)
        t.hello = joiner.hello.encoded
        t.answer = try adder.answer(t.hello, scalar: yb)
        t.confirm = try joiner.confirm(t.answer, deviceName: "laptop", nonce: nonces?.0)
        #expect(try adder.confirmed(t.confirm) == "laptop")
        t.welcome = try adder.welcome(try grant(), nonce: nonces?.1)
        return (t, try joiner.welcome(t.welcome))
    }

    @Test("the right code links: the joiner gets the grant, with a certificate for itself signed by the account")
    func rightCode() throws {
        let (_, grant) = try Self.run(typed: "1234 5678", shown: "1234-5678")
        #expect(grant == (try Self.grant()))
        #expect(grant?.certificate.account == Self.account.publicKey && grant?.certificate.device == Self.device.publicKey)
    }

    @Test("a wrong code: the joiner refuses the answer; an adder that gets a wrong tag refuses it")
    func wrongCode() throws {
        #expect(throws: DeviceLinkError.wrongCode) { try Self.run(typed: "1234-5679", shown: "1234-5678") }
        // A joiner that does not check (hostile) and sends its tag anyway: the adder finds it wrong.
        var adder = DeviceLinkAdder(code: DeviceLink.password("1234-5678") ?? [], network: Self.network, account: Self.account.publicKey)
        let hostile = try DeviceLinkJoiner(code: DeviceLink.password("0000-0000") ?? [], network: Self.network, device: Self.device.publicKey)
        _ = try adder.answer(hostile.hello.encoded)
        #expect(throws: DeviceLinkError.wrongCode) { try adder.confirmed([UInt8](repeating: 7, count: CPace.tagLength + 40)) }
        // Another network: the same code does not match.
        var joiner = try DeviceLinkJoiner(code: DeviceLink.password("1234-5678") ?? [], network: NetworkKey.derived(fromName: "other"), device: Self.device.publicKey)
        var adder2 = DeviceLinkAdder(code: DeviceLink.password("1234-5678") ?? [], network: Self.network, account: Self.account.publicKey)
        let answer = try adder2.answer(joiner.hello.encoded)
        #expect(throws: DeviceLinkError.wrongCode) { try joiner.confirm(answer, deviceName: "laptop") }
        #expect(DeviceLink.password("1234-567") == nil && DeviceLink.password("1234-567a") == nil && DeviceLink.password("123456789") == nil)
    }

    /// Everything an eavesdropper can compute from the transcript and a
    /// guessed code, without either side's secret scalar: the generator, and
    /// the keys that would follow if the shared point were one of the public
    /// points. Returns the guesses under which the adder's tag verifies.
    static func offlineGuesses(_ t: Transcript, dictionary: [String], leakedJoinerScalar: [UInt8]? = nil) throws -> [String] {
        let hello = try DeviceLink.Hello.decode(t.hello), answer = try DeviceLink.Answer.decode(t.answer)
        var matches: [String] = []
        for guess in dictionary {
            let code = DeviceLink.password(guess) ?? []
            let g = try CPace.generator(code: code, channel: DeviceLink.channel(network), sid: hello.sid)
            if let ya = leakedJoinerScalar {
                // With the joiner's scalar the share gives the code away: Ya = ya·g(code).
                let party = try CPace.Party(code: code, channel: DeviceLink.channel(network), sid: hello.sid, scalar: ya)
                if party.share == hello.share { matches.append(guess) }
                continue
            }
            // Without it: try the public points as the shared secret's stand-ins.
            for stand in [g, hello.share, answer.share] {
                let tag = CPace.tagUnderPoint(stand, sid: hello.sid, ya: hello.share, adA: hello.device.bytes, yb: answer.share, adB: answer.account.bytes)
                if tag == answer.tag { matches.append(guess) }
            }
        }
        return matches
    }

    @Test("a recorded exchange gives an offline guesser nothing: no code of a 10,000-word dictionary (the right one in it) fits, while a leaked scalar would single it out")
    func eavesdropper() throws {
        let (t, _) = try Self.run(typed: "4821-9073", shown: "4821-9073", ya: Self.scalar(7))
        var dictionary = (0..<9_999).map { String(format: "%04d-%04d", $0 * 7 % 10_000, $0 * 13 % 10_000) }.filter { $0 != "4821-9073" }
        dictionary.insert("4821-9073", at: 5_000)
        #expect(try Self.offlineGuesses(t, dictionary: dictionary).isEmpty)
        // The check can succeed: with the scalar the same loop finds the code, and only it.
        #expect(try Self.offlineGuesses(t, dictionary: dictionary, leakedJoinerScalar: Self.scalar(7)) == ["4821-9073"])
        // And the grant (private room keys) does not open under keys from public values.
        for point in [t.hello, t.answer] {
            let key = try SymmetricKey(bytes: BLAKE2b.hash(point, outputLength: 32))
            #expect(throws: CryptoError.decryptionFailed) { try key.open(t.welcome) }
        }
    }

    static func scalar(_ n: UInt8) -> [UInt8] { [n] + [UInt8](repeating: 0, count: 31) }

    @Test("certificates: forged, for the account itself, names at 32 bytes and one past, trailing bytes")
    func certificates() throws {
        let good = try DeviceCertificate.issue(by: Self.account, for: Self.device.publicKey, name: String(repeating: "n", count: 32), at: 5, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey)
        #expect(try DeviceCertificate.decode(good.encoded) == good)
        #expect(good.encoded.count == DeviceCertificate.maximumSize)
        #expect(throws: EnvelopeError.self) {
            try DeviceCertificate.issue(by: Self.account, for: Self.device.publicKey, name: String(repeating: "n", count: 33), at: 5, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey)
        }
        var forged = good.encoded
        forged[40] ^= 1  // another device key under the account's signature
        #expect(throws: EnvelopeError.badSignature) { try DeviceCertificate.decode(forged) }
        // Signed by bob, claiming to be alice's.
        let bobs = try DeviceCertificate.issue(by: Self.bob, for: Self.device.publicKey, name: "x", at: 5, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey).encoded
        #expect(throws: EnvelopeError.badSignature) { try DeviceCertificate.decode(Self.account.publicKey.bytes + Array(bobs.dropFirst(32))) }
        #expect(throws: EnvelopeError.self) { try DeviceCertificate.issue(by: Self.account, for: Self.account.publicKey, name: "self", at: 5, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey) }
        #expect(throws: EnvelopeError.self) { try DeviceCertificate.decode(good.encoded + [0]) }
        #expect(throws: EnvelopeError.self) { try DeviceCertificate.decode(Array(good.encoded.dropLast())) }
    }

    @Test("grants: 4,096 entries in a list are read, 4,097 refused; every truncation refused")
    func grants() throws {
        let certificate = try DeviceCertificate.issue(by: Self.account, for: Self.device.publicKey, name: "laptop", at: 5, epoch: 1, conversationKey: DeviceLinkKeys.box.publicKey)
        let keys = (0..<DeviceGrant.maximumEntries).map { _ in (try? SigningKey.generate().publicKey) ?? Self.bob.publicKey }
        let full = DeviceGrant(certificate: certificate, conversationSecret: DeviceLinkKeys.box.exportedSecret, nick: nil, privateRooms: [], publicRooms: [], trusted: keys, blocked: [])
        #expect(try DeviceGrant.decode(full.encoded).trusted.count == DeviceGrant.maximumEntries)
        // One more, written by hand (the encoder stops at the limit).
        var over = full.encoded
        let countAt = 1 + certificate.encoded.count + 32 + 1 + 2 + 2
        over[countAt] = UInt8((DeviceGrant.maximumEntries + 1) >> 8)
        over[countAt + 1] = UInt8((DeviceGrant.maximumEntries + 1) & 0xff)
        over.insert(contentsOf: Self.bob.publicKey.bytes, at: countAt + 2)
        #expect(throws: DeviceLinkError.self) { try DeviceGrant.decode(over) }
        let small = try Self.grant().encoded
        for cut in 0..<small.count { #expect(throws: DeviceLinkError.self) { try DeviceGrant.decode(Array(small.prefix(cut))) } }
    }

    struct Golden: Codable {
        let network_name: String, code: String, sid: String, ya: String, yb: String, nonce_confirm: String, nonce_welcome: String
        let issued: UInt64
        let hello: String, answer: String, confirm: String, welcome: String, certificate: String, isk: String
    }

    @Test("the golden transcript (checked from PROTOCOL.md by check-golden.py): this build makes the same four frames")
    func golden() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden-device-link.json")
        let sid = hex("0102030405060708090a0b0c0d0e0f10"), ya = Self.scalar(0x2a), yb = Self.scalar(0x45)
        let nonces = ([UInt8](repeating: 0x66, count: 24), [UInt8](repeating: 0x77, count: 24))
        let (t, grant) = try Self.run(typed: "1234-5678", shown: "1234-5678", sid: sid, ya: ya, yb: yb, nonces: nonces)
        let isk = try CPace.finish(try CPace.Party(code: Array("12345678".utf8), channel: DeviceLink.channel(Self.network), sid: sid, scalar: ya),
                                   peerShare: try DeviceLink.Answer.decode(t.answer).share, initiator: true,
                                   initiatorData: Self.device.publicKey.bytes, responderData: Self.account.publicKey.bytes).iskHex
        let made = Golden(network_name: "golden", code: "1234-5678", sid: Hex.encode(sid), ya: Hex.encode(ya), yb: Hex.encode(yb),
                          nonce_confirm: Hex.encode(nonces.0), nonce_welcome: Hex.encode(nonces.1), issued: 1_700_000_000_000,
                          hello: Hex.encode(t.hello), answer: Hex.encode(t.answer), confirm: Hex.encode(t.confirm), welcome: Hex.encode(t.welcome),
                          certificate: Hex.encode(grant?.certificate.encoded ?? []), isk: isk)
        if ProcessInfo.processInfo.environment["PEERNODE_WRITE_GOLDEN"] == "1" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(made).write(to: url)
        }
        let file = try JSONDecoder().decode(Golden.self, from: Data(contentsOf: url))
        #expect(file.hello == made.hello && file.answer == made.answer && file.confirm == made.confirm)
        #expect(file.welcome == made.welcome && file.certificate == made.certificate && file.isk == made.isk)
    }
}
