/// SHA-1 (FIPS 180-4), written here for one purpose only: the
/// `Sec-WebSocket-Accept` value of the opening handshake (RFC 6455 §4.2.2).
/// It protects nothing; every other hash in peernode comes from libsodium.
/// Checked against the RFC 3174 §7.3 test vectors.
public struct SHA1 {
    private var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    private var block: [UInt8] = []
    private var length: UInt64 = 0

    public init() { block.reserveCapacity(64) }

    public static func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var s = SHA1()
        s.update(data)
        return s.finish()
    }

    public mutating func update(_ data: some Sequence<UInt8>) {
        for byte in data {
            block.append(byte)
            length &+= 8
            if block.count == 64 {
                compress()
                block.removeAll(keepingCapacity: true)
            }
        }
    }

    public mutating func finish() -> [UInt8] {
        let bits = length
        block.append(0x80)
        if block.count > 56 {
            while block.count < 64 { block.append(0) }
            compress()
            block.removeAll(keepingCapacity: true)
        }
        while block.count < 56 { block.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { block.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        compress()
        var out: [UInt8] = []
        for word in [h.0, h.1, h.2, h.3, h.4] {
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        return out
    }

    private mutating func compress() {
        var w = [UInt32](repeating: 0, count: 80)
        for i in 0..<16 {
            w[i] = UInt32(block[4 * i]) << 24 | UInt32(block[4 * i + 1]) << 16 | UInt32(block[4 * i + 2]) << 8 | UInt32(block[4 * i + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = x << 1 | x >> 31
        }
        var (a, b, c, d, e) = h
        for i in 0..<80 {
            let f: UInt32, k: UInt32
            switch i {
            case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
            case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
            case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
            default: f = b ^ c ^ d; k = 0xCA62_C1D6
            }
            let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
            e = d
            d = c
            c = b << 30 | b >> 2
            b = a
            a = t
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}
