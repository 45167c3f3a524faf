import Crypto

/// A new conversation key of an account, made when one of its devices is
/// revoked (docs/PROTOCOL.md §15, "A new conversation key after a
/// revocation"): an envelope of kind `rekey` in the accounts room, signed
/// by the account key. Peers take the public key (and seal to it from then
/// on); each device of the account that is not revoked opens its copy of
/// the secret, sealed to its own identity key converted to X25519.
///
///     "PNCK" ‖ epoch 4 ‖ public key 32 ‖ count 1 ‖ count × (device 32 ‖ sealed secret 80)
public struct ConversationKeyAnnouncement: Equatable, Sendable {
    public static let magic = Array("PNCK".utf8)
    /// Devices one announcement reaches (as many as a removal names).
    public static let maximumDevices = 64
    /// `crypto_box_seal` of a 32-byte secret: 32 + 48.
    public static let sealedSize = 80
    static let headSize = 4 + 4 + 32 + 1
    static let entrySize = 32 + sealedSize

    public struct Sealed: Equatable, Sendable {
        public let device: PublicKey
        public let sealed: [UInt8]
        public init(device: PublicKey, sealed: [UInt8]) {
            self.device = device
            self.sealed = sealed
        }
    }

    public let epoch: UInt32
    public let publicKey: [UInt8]
    public let devices: [Sealed]

    public init(epoch: UInt32, publicKey: [UInt8], devices: [Sealed]) {
        self.epoch = epoch
        self.publicKey = publicKey
        self.devices = devices
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.headSize + devices.count * Self.entrySize)
        w.raw(Self.magic)
        w.u32(epoch)
        w.raw(publicKey)
        w.u8(UInt8(clamping: devices.count))
        for d in devices {
            w.raw(d.device.bytes)
            w.raw(d.sealed)
        }
        return w.bytes
    }

    /// Nil for anything that is not exactly this layout.
    public static func decode(_ bytes: [UInt8]) -> ConversationKeyAnnouncement? {
        var r = ByteReader(bytes)
        guard let magic = try? r.take(4, "magic"), Array(magic) == Self.magic,
              let epoch = try? r.u32("epoch"), epoch >= 1,
              let publicKey = try? r.take(32, "public key"),
              let count = try? r.u8("count"), Int(count) <= maximumDevices,
              r.remaining == Int(count) * entrySize else { return nil }
        var devices: [Sealed] = []
        for _ in 0..<count {
            guard let device = (try? r.take(32, "device")).flatMap({ try? PublicKey(bytes: $0) }),
                  let sealed = try? r.take(sealedSize, "sealed secret") else { return nil }
            devices.append(Sealed(device: device, sealed: Array(sealed)))
        }
        return ConversationKeyAnnouncement(epoch: epoch, publicKey: Array(publicKey), devices: devices)
    }
}
