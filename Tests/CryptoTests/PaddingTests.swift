import CSodium
import Crypto
import Seeded
import Testing

@Suite("Padding: ISO/IEC 7816-4 as libsodium pads it")
struct PaddingTests {
    /// What libsodium's constant-time unpadding answers for `padded`, over its whole length.
    private func sodiumUnpad(_ padded: [UInt8]) -> [UInt8]? {
        guard !padded.isEmpty else { return nil }
        var length = 0
        let result = padded.withUnsafeBufferPointer { sodium_unpad(&length, $0.baseAddress!, $0.count, $0.count) }
        return result == 0 ? Array(padded[0..<length]) : nil
    }

    @Test("unpad undoes pad at every length up to a bucket, and refuses what is not padding")
    func roundTripAndRefusals() {
        for size in [1, 2, 256, 512] {
            for length in 0..<size {
                let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
                let padded = Padding.pad(data, to: size)
                #expect(padded.flatMap(Padding.unpad) == data)
            }
            #expect(Padding.pad([UInt8](repeating: 1, count: size), to: size) == nil)
        }
        #expect(Padding.unpad([]) == nil)
        #expect(Padding.unpad([0, 0, 0]) == nil)                   // no marker
        #expect(Padding.unpad([1, 0x80, 1]) == nil)                // a byte after the marker
        #expect(Padding.unpad([1, 0x80, 0, 5, 0]) == nil)
        #expect(Padding.unpad([0x81, 0]) == nil)                   // not the marker
        #expect(Padding.unpad([0x80]) == [])
        #expect(Padding.unpad([0x80, 0x80, 0]) == [0x80])          // the last 0x80 is the marker
        #expect(Padding.unpad([0, 0x80]) == [0])
    }

    @Test("unpad answers as libsodium's sodium_unpad on 20,000 seeded buffers, padded and not")
    func sameAsLibsodium() {
        var random = SplitMix(seed: 39)
        for round in 0..<20_000 {
            let size = Int(random.next() % 300) + 1
            var buffer = [UInt8](repeating: 0, count: size)
            // Mostly real padding with noise: a marker somewhere, zeros after it, and sometimes one byte changed.
            let marker = Int(random.next() % UInt64(size))
            for i in 0..<marker { buffer[i] = UInt8(truncatingIfNeeded: random.next()) }
            if round % 5 != 0 { buffer[marker] = 0x80 } else { buffer[marker] = UInt8(truncatingIfNeeded: random.next()) }
            if round % 3 == 0 { buffer[Int(random.next() % UInt64(size))] = UInt8(truncatingIfNeeded: random.next() % 3) }
            #expect(Padding.unpad(buffer) == sodiumUnpad(buffer), "buffer \(buffer)")
        }
    }
}
