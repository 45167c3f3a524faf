/// Incremental UTF-8 validation (RFC 3629 §4), fed a text message fragment by
/// fragment, so an invalid sequence is found as soon as its bytes arrive
/// (RFC 6455 §8.1: fail fast → close 1007), even across fragment boundaries.
struct UTF8Validator {
    /// Continuation bytes still expected for the current character.
    private var needed = 0
    /// Allowed range for the next continuation byte (narrowed after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// False as soon as the bytes so far cannot be the start of valid UTF-8.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for byte in bytes {
            if needed == 0 {
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: needed = 1
                case 0xE0: needed = 2; lower = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: needed = 2
                case 0xED: needed = 2; upper = 0x9F
                case 0xF0: needed = 3; lower = 0x90
                case 0xF1...0xF3: needed = 3
                case 0xF4: needed = 3; upper = 0x8F
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else { return false }
                lower = 0x80
                upper = 0xBF
                needed -= 1
            }
        }
        return true
    }

    /// True when the message ended on a character boundary.
    var isComplete: Bool { needed == 0 }

    static func isValid(_ bytes: [UInt8]) -> Bool {
        var v = UTF8Validator()
        return bytes.withUnsafeBytes { v.feed($0) } && v.isComplete
    }
}
