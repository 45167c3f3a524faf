import Crypto

/// An account's word that a device key is one of its devices: signed by the
/// account key (context "peernode/1 device-certificate"), carried in the
/// device's own claim envelope (kind `device`, in the accounts room) so every
/// node can check it without the account's history. docs/PROTOCOL.md §15.
///
///     account 32 ‖ device 32 ‖ issued (ms since the epoch) 8 ‖ epoch 4 ‖ conversation key 32
///     ‖ name length 1 ‖ name ‖ signature 64
///
/// The epoch and conversation key announce the account's current
/// conversation key (X25519), which the device holds too: direct messages
/// to the account are sealed to it, so each device opens them on its own.
public struct DeviceCertificate: Equatable, Sendable {
    /// Bytes of a device's name (the machine's, as its user calls it).
    public static let maximumNameLength = 32
    public static let minimumSize = 32 + 32 + 8 + 4 + 32 + 1 + 64
    public static let maximumSize = minimumSize + maximumNameLength

    public let account: PublicKey
    public let device: PublicKey
    public let issued: UInt64
    /// The account's conversation key this certificate announces (epoch ≥ 1).
    public let epoch: UInt32
    public let conversationKey: [UInt8]
    /// Network text: shown only sanitized. Holds `Nick`'s rules.
    public let name: String
    public let signature: [UInt8]

    /// Signed by `account` for `device`.
    public static func issue(by account: SigningKey, for device: PublicKey, name: String, at issued: UInt64,
                             epoch: UInt32, conversationKey: [UInt8]) throws(EnvelopeError) -> DeviceCertificate {
        _ = try Nick(name)
        guard device != account.publicKey else { throw .badValue(field: "device", 0) }
        guard epoch >= 1 else { throw .badValue(field: "epoch", 0) }
        guard conversationKey.count == 32 else { throw .badLength(field: "conversation key", expected: 32, actual: conversationKey.count) }
        let signed = signedBytes(account: account.publicKey, device: device, issued: issued, epoch: epoch, conversationKey: conversationKey, name: name)
        return DeviceCertificate(account: account.publicKey, device: device, issued: issued, epoch: epoch, conversationKey: conversationKey,
                                 name: name, signature: account.sign(signed, context: .deviceCertificate))
    }

    static func signedBytes(account: PublicKey, device: PublicKey, issued: UInt64, epoch: UInt32, conversationKey: [UInt8], name: String) -> [UInt8] {
        var w = ByteWriter(capacity: maximumSize)
        w.raw(account.bytes)
        w.raw(device.bytes)
        w.u64(issued)
        w.u32(epoch)
        w.raw(conversationKey)
        w.u8(UInt8(name.utf8.count))
        w.raw(name.utf8)
        return w.bytes
    }

    public var encoded: [UInt8] {
        Self.signedBytes(account: account, device: device, issued: issued, epoch: epoch, conversationKey: conversationKey, name: name) + signature
    }

    /// Decodes and checks the signature: what this returns was signed by `account`.
    public static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> DeviceCertificate {
        guard bytes.count <= maximumSize else { throw .tooLarge(size: bytes.count, limit: maximumSize) }
        var r = ByteReader(bytes)
        let account = try key(r.take(32, "account"))
        let device = try key(r.take(32, "device"))
        let issued = try r.u64("issued")
        let epoch = try r.u32("epoch")
        let conversationKey = Array(try r.take(32, "conversation key"))
        let length = Int(try r.u8("name length"))
        let nameBytes = try r.take(length, "name")
        let signature = Array(try r.take(Signature.byteCount, "signature"))
        guard r.remaining == 0 else { throw .trailingBytes(count: r.remaining) }
        guard let name = String(validating: nameBytes, as: UTF8.self), (try? Nick(name)) != nil else {
            throw .badNick(String(decoding: nameBytes, as: UTF8.self))
        }
        guard account != device else { throw .badValue(field: "device", 0) }
        guard epoch >= 1 else { throw .badValue(field: "epoch", 0) }
        let certificate = DeviceCertificate(account: account, device: device, issued: issued, epoch: epoch, conversationKey: conversationKey,
                                            name: name, signature: signature)
        do {
            try account.verify(signature: signature,
                               message: signedBytes(account: account, device: device, issued: issued, epoch: epoch, conversationKey: conversationKey, name: name),
                               context: .deviceCertificate)
        } catch { throw .badSignature }
        return certificate
    }

    private static func key(_ bytes: ArraySlice<UInt8>) throws(EnvelopeError) -> PublicKey {
        do { return try PublicKey(bytes: bytes) } catch { throw .badLength(field: "key", expected: 32, actual: bytes.count) }
    }
}

/// The content of a revocation (kind `revoke`, in the accounts room):
/// `device` 32 ‖ `last` 8, the last of the device's sequences still
/// accepted. docs/PROTOCOL.md §15, "Revoking a device".
public struct DeviceRevocation: Equatable, Sendable {
    /// The form of before (device ‖ last), still read and still sent beside
    /// the longer one, for nodes that read only it.
    public static let size = 40
    /// device ‖ last ‖ the id of the device's envelope at `last` (the last
    /// one accepted), so a fork at or below the limit is refused too.
    public static let sizeNamingLast = 72
    public let device: PublicKey
    public let last: UInt64
    /// The id of the device's envelope at `last`; nil in the 40-byte form.
    public let lastID: MessageID?

    public init(device: PublicKey, last: UInt64, lastID: MessageID? = nil) {
        self.device = device
        self.last = last
        self.lastID = lastID
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.sizeNamingLast)
        w.raw(device.bytes)
        w.u64(last)
        if let lastID { w.raw(lastID.bytes) }
        return w.bytes
    }

    /// Nil for anything but exactly 40 or 72 bytes, a `last` past
    /// `Envelope.maximumSequence` (like every sequence from the network),
    /// and, in the longer form, a named envelope when `last` is 0, which names none.
    public static func decode(_ bytes: [UInt8]) -> DeviceRevocation? {
        guard bytes.count == size || bytes.count == sizeNamingLast, let device = try? PublicKey(bytes: bytes[0..<32]) else { return nil }
        let last = bytes[32..<40].reduce(0) { $0 << 8 | UInt64($1) }
        guard last <= Envelope.maximumSequence else { return nil }
        guard bytes.count == sizeNamingLast else { return DeviceRevocation(device: device, last: last) }
        guard last > 0, let id = try? MessageID(bytes: bytes[40..<72]) else { return nil }
        return DeviceRevocation(device: device, last: last, lastID: id)
    }
}

extension RoomID {
    /// The one room of the network that holds account envelopes (device
    /// claims): derive("peernode/1 accounts-room", ""). Every node reads it.
    public static func accounts(network: NetworkKey) -> RoomID {
        RoomID(unchecked: network.derive(label: "peernode/1 accounts-room", []))
    }
}

extension NetworkKey {
    /// The accounts room's key: derive("peernode/1 accounts-key", ""). Known
    /// to every member of the network: what the room holds is public to it.
    public var accountsRoomKey: SymmetricKey {
        // A 32-byte derivation is always a valid key.
        (try? SymmetricKey(bytes: derive(label: "peernode/1 accounts-key", []))) ?? SymmetricKey.generate()
    }
}
