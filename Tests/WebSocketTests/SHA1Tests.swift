import Testing
import TestSupport
@testable import WebSocket

@Suite("SHA-1 (RFC 3174 §7.3) and the accept key (RFC 6455 §1.3)")
struct SHA1Tests {
    @Test("the four RFC 3174 test vectors")
    func vectors() {
        #expect(SHA1.hash(Array("abc".utf8)) == hex("A9993E364706816ABA3E25717850C26C9CD0D89D"))
        #expect(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == hex("84983E441C3BD26EBAAE4AA1F95129E5E54670F1"))
        #expect(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
            == hex("34AA973CD4C4DAA4F61EEB2BDBAD27316534016F"))
        let repeated = Array(String(repeating: "0123456701234567012345670123456701234567012345670123456701234567", count: 10).utf8)
        #expect(SHA1.hash(repeated) == hex("DEA356A2CDDD90C7A7ECEDC5EBB563934F460452"))
    }

    @Test("block-boundary lengths agree with an incremental update")
    func incremental() {
        for n in [0, 55, 56, 63, 64, 65, 119, 120, 128] {
            let data = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var s = SHA1()
            s.update(data.prefix(n / 2))
            s.update(data.dropFirst(n / 2))
            #expect(s.finish() == SHA1.hash(data))
        }
    }

    @Test("RFC 6455 §1.3: dGhlIHNhbXBsZSBub25jZQ== → s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    func accept() {
        #expect(websocketAccept(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
