import Crypto

/// Linking a new device to an account with a short one-time code
/// (docs/PROTOCOL.md §15): four frames over one TCP connection, a CPace
/// exchange keyed by the code, then what the new device needs, sealed with
/// a key only the two ends hold. The pure part: messages and the checks on
/// them; `DeviceLinkConnection` (PeerNode) moves the bytes.
///
///     joiner → adder  hello    "PNDL" 0x01 ‖ sid 16 ‖ Ya 32 ‖ device key 32
///     adder → joiner  answer   Yb 32 ‖ account 32 ‖ Tb 64
///     joiner → adder  confirm  Ta 64 ‖ sealed(device name)
///     adder → joiner  welcome  sealed(grant)
public enum DeviceLink {
    public static let magic = Array("PNDL".utf8)
    public static let version: UInt8 = 1
    /// Decimal digits in a code: 10^8 codes; an adder takes
    /// `maximumAttempts` guesses, so a stranger links with odds of 3 in 10^8.
    public static let codeDigits = 8
    /// Wrong codes an adder takes before it stops (the code is then spent).
    public static let maximumAttempts = 3
    /// Largest frame either side accepts (a grant with many rooms).
    public static let maximumFrame = 1 << 20
    public static let helloSize = 5 + CPace.sidLength + CPace.shareLength + PublicKey.byteCount
    public static let answerSize = CPace.shareLength + PublicKey.byteCount + CPace.tagLength

    /// A new random code, as shown: "1234-5678".
    public static func newCode() -> String {
        var digits = ""
        while digits.count < codeDigits {
            // Rejection sampling: bytes of 250 and more would favour 0–5.
            for byte in secureRandomBytes(codeDigits) where byte < 250 && digits.count < codeDigits {
                digits.append(Character(String(byte % 10)))
            }
        }
        return String(digits.prefix(4)) + "-" + String(digits.dropFirst(4))
    }

    /// The code as CPace's password: its eight digits, whatever was typed
    /// between them (spaces, dashes); nil if it is not eight digits.
    public static func password(_ typed: String) -> [UInt8]? {
        let digits = typed.unicodeScalars.filter { $0 != "-" && $0 != " " }
        guard digits.count == codeDigits, digits.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return Array(String(String.UnicodeScalarView(digits)).utf8)
    }

    /// CPace's channel identifier: derive("peernode/1 device-link", ""),
    /// so only members of the same network arrive at the same generator.
    public static func channel(_ network: NetworkKey) -> [UInt8] { network.derive(label: "peernode/1 device-link", []) }

    public struct Hello: Equatable {
        public let sid: [UInt8]
        public let share: [UInt8]
        public let device: PublicKey

        public var encoded: [UInt8] { magic + [version] + sid + share + device.bytes }

        public static func decode(_ bytes: [UInt8]) throws(DeviceLinkError) -> Hello {
            guard bytes.count == helloSize else { throw .badFrame("hello of \(bytes.count) bytes, not \(helloSize)") }
            guard Array(bytes[0..<4]) == magic else { throw .badFrame("not a device link") }
            guard bytes[4] == version else { throw .badFrame("device link version \(bytes[4])") }
            let s = 5, y = s + CPace.sidLength, d = y + CPace.shareLength
            guard let device = try? PublicKey(bytes: bytes[d...]) else { throw .badFrame("device key") }
            return Hello(sid: Array(bytes[s..<y]), share: Array(bytes[y..<d]), device: device)
        }
    }

    public struct Answer: Equatable {
        public let share: [UInt8]
        public let account: PublicKey
        public let tag: [UInt8]

        public var encoded: [UInt8] { share + account.bytes + tag }

        public static func decode(_ bytes: [UInt8]) throws(DeviceLinkError) -> Answer {
            guard bytes.count == answerSize else { throw .badFrame("answer of \(bytes.count) bytes, not \(answerSize)") }
            let a = CPace.shareLength, t = a + PublicKey.byteCount
            guard let account = try? PublicKey(bytes: bytes[a..<t]) else { throw .badFrame("account key") }
            return Answer(share: Array(bytes[0..<a]), account: account, tag: Array(bytes[t...]))
        }
    }

    /// Keys for what each side seals after the exchange.
    static let joinerPurpose = "peernode/1 device-link joiner"
    static let adderPurpose = "peernode/1 device-link adder"
}

public enum DeviceLinkError: Error, Equatable, CustomStringConvertible {
    /// The other side's tag did not verify: the codes differ (or someone
    /// without the code answered).
    case wrongCode
    case badFrame(String)
    case badGrant(String)
    /// An adder that took `maximumAttempts` wrong codes.
    case tooManyAttempts
    case crypto(String)

    public var description: String {
        switch self {
        case .wrongCode: return "the code did not match (or the machine at that address is not the one that showed it)"
        case let .badFrame(what): return "bad device-link frame: \(what)"
        case let .badGrant(what): return "bad device grant: \(what)"
        case .tooManyAttempts: return "\(DeviceLink.maximumAttempts) wrong codes: this code is spent, run `peernode device add` again"
        case let .crypto(what): return "device link: \(what)"
        }
    }
}

/// The new device's side of an exchange.
public struct DeviceLinkJoiner {
    let party: CPace.Party
    public let device: PublicKey
    public let hello: DeviceLink.Hello
    private var result: CPace.Result?
    private var answer: DeviceLink.Answer?

    /// `sid` and `scalar` are for test vectors only.
    public init(code: [UInt8], network: NetworkKey, device: PublicKey, sid: [UInt8]? = nil, scalar: [UInt8]? = nil) throws(DeviceLinkError) {
        let sid = sid ?? secureRandomBytes(CPace.sidLength)
        do { party = try CPace.Party(code: code, channel: DeviceLink.channel(network), sid: sid, scalar: scalar) } catch { throw .crypto("\(error)") }
        self.device = device
        hello = DeviceLink.Hello(sid: sid, share: party.share, device: device)
    }

    /// Checks the adder's tag and returns the confirm frame (our tag, then
    /// the device's name sealed). `.wrongCode` when the tag is not the one
    /// the same code gives.
    public mutating func confirm(_ answerFrame: [UInt8], deviceName: String, nonce: [UInt8]? = nil) throws(DeviceLinkError) -> [UInt8] {
        let answer = try DeviceLink.Answer.decode(answerFrame)
        let r: CPace.Result
        do {
            r = try CPace.finish(party, peerShare: answer.share, initiator: true,
                                 initiatorData: device.bytes, responderData: answer.account.bytes)
        } catch { throw .wrongCode }
        guard constantTimeEqual(r.responderTag, answer.tag) else { throw .wrongCode }
        result = r
        self.answer = answer
        do {
            return r.initiatorTag + (try r.key(for: DeviceLink.joinerPurpose).seal(Array(deviceName.utf8), nonce: nonce))
        } catch { throw .crypto("\(error)") }
    }

    /// Opens the welcome frame: the grant, whose certificate must name this
    /// device and the account that answered.
    public func welcome(_ frame: [UInt8]) throws(DeviceLinkError) -> DeviceGrant {
        guard let result, let answer else { throw .badFrame("welcome before the answer") }
        let plain: [UInt8]
        do { plain = try result.key(for: DeviceLink.adderPurpose).open(frame) } catch { throw .badGrant("does not open") }
        let grant = try DeviceGrant.decode(plain)
        guard grant.certificate.device == device, grant.certificate.account == answer.account else {
            throw .badGrant("the certificate is for another device or account")
        }
        return grant
    }
}

/// The account's side of an exchange: one per connection; the caller counts
/// wrong codes across connections (`DeviceLink.maximumAttempts`).
public struct DeviceLinkAdder {
    let code: [UInt8]
    let network: NetworkKey
    let account: PublicKey
    private var result: CPace.Result?
    public private(set) var hello: DeviceLink.Hello?

    public init(code: [UInt8], network: NetworkKey, account: PublicKey) {
        self.code = code
        self.network = network
        self.account = account
    }

    /// The answer frame to a hello. `scalar` is for test vectors only.
    public mutating func answer(_ helloFrame: [UInt8], scalar: [UInt8]? = nil) throws(DeviceLinkError) -> [UInt8] {
        let hello = try DeviceLink.Hello.decode(helloFrame)
        do {
            let party = try CPace.Party(code: code, channel: DeviceLink.channel(network), sid: hello.sid, scalar: scalar)
            let r = try CPace.finish(party, peerShare: hello.share, initiator: false,
                                     initiatorData: hello.device.bytes, responderData: account.bytes)
            result = r
            self.hello = hello
            return DeviceLink.Answer(share: party.share, account: account, tag: r.responderTag).encoded
        } catch { throw .badFrame("share: \(error)") }
    }

    /// Checks the joiner's tag (`.wrongCode`: one attempt spent) and returns
    /// the device's name.
    public func confirmed(_ frame: [UInt8]) throws(DeviceLinkError) -> String {
        guard let result, frame.count >= CPace.tagLength else { throw .wrongCode }
        guard constantTimeEqual(Array(frame.prefix(CPace.tagLength)), result.initiatorTag) else { throw .wrongCode }
        let name: [UInt8]
        do { name = try result.key(for: DeviceLink.joinerPurpose).open(Array(frame.dropFirst(CPace.tagLength))) } catch {
            throw .badFrame("device name does not open")
        }
        guard let text = String(validating: name, as: UTF8.self), (try? Nick(text)) != nil else { throw .badFrame("device name") }
        return text
    }

    /// The welcome frame: `grant` sealed for the joiner.
    public func welcome(_ grant: DeviceGrant, nonce: [UInt8]? = nil) throws(DeviceLinkError) -> [UInt8] {
        guard let result else { throw .badFrame("welcome before the hello") }
        do { return try result.key(for: DeviceLink.adderPurpose).seal(grant.encoded, nonce: nonce) } catch { throw .crypto("\(error)") }
    }
}
