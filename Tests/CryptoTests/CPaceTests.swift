import Crypto
import TestSupport
import Testing

@Suite("CPace (draft-irtf-cfrg-cpace, ristretto255 and SHA-512)")
struct CPaceTests {
    // The draft's test vectors for ristretto255 with SHA-512 (Appendix B, "Test vector for CPace using group ristretto255").
    static let prs = Array("Password".utf8)
    static let ci = hex("0b415f696e69746961746f720b425f726573706f6e646572")
    static let sid = hex("7e4b4791d6a8ef019b936c79fb7f2c57")
    static let ya = hex("da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d08")
    static let yb = hex("d2316b454718c35362d83d69df6320f38578ed5984651435e2949762d900b80d")

    @Test("the draft's vectors: generator, both shares and the initiator–responder ISK")
    func draftVectors() throws {
        #expect(Hex.encode(try CPace.generator(code: Self.prs, channel: Self.ci, sid: Self.sid)) ==
            "222b6b195fe84b1652badb6f6a3ae3d24341e7306967f0b8115b40d5698c7e56")
        let a = try CPace.Party(code: Self.prs, channel: Self.ci, sid: Self.sid, scalar: Self.ya)
        let b = try CPace.Party(code: Self.prs, channel: Self.ci, sid: Self.sid, scalar: Self.yb)
        #expect(Hex.encode(a.share) == "d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b9157")
        #expect(Hex.encode(b.share) == "3ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f7258")
        let ra = try CPace.finish(a, peerShare: b.share, initiator: true, initiatorData: Array("ADa".utf8), responderData: Array("ADb".utf8))
        let rb = try CPace.finish(b, peerShare: a.share, initiator: false, initiatorData: Array("ADa".utf8), responderData: Array("ADb".utf8))
        let isk = "b69effbf61b51d56401c0f65601abe428de8206feaaf0e32198896dcae7b35cd2b38950a39dfd5d4a79164614c2984f7daa460b588c1e80c3fa2068af7900447"
        #expect(ra.iskHex == isk)
        #expect(rb.iskHex == isk)
        #expect(ra.initiatorTag == rb.initiatorTag && ra.responderTag == rb.responderTag)
        #expect(ra.initiatorTag != ra.responderTag)
    }

    @Test("a wrong code, channel or session gives other keys and tags; bad shares are refused")
    func mismatches() throws {
        let sid = secureRandomBytes(CPace.sidLength)
        func run(_ codeA: String, _ codeB: String, channelB: [UInt8] = [1], sidB: [UInt8]? = nil) throws -> (CPace.Result, CPace.Result) {
            let a = try CPace.Party(code: Array(codeA.utf8), channel: [1], sid: sid)
            let b = try CPace.Party(code: Array(codeB.utf8), channel: channelB, sid: sidB ?? sid)
            return (try CPace.finish(a, peerShare: b.share, initiator: true, initiatorData: [], responderData: []),
                    try CPace.finish(b, peerShare: a.share, initiator: false, initiatorData: [], responderData: []))
        }
        let (good1, good2) = try run("12345678", "12345678")
        #expect(good1.iskHex == good2.iskHex && good1.responderTag == good2.responderTag)
        for (x, y) in [try run("12345678", "12345679"), try run("12345678", "12345678", channelB: [2]),
                       try run("12345678", "12345678", sidB: secureRandomBytes(CPace.sidLength))] {
            #expect(x.iskHex != y.iskHex)
            #expect(x.responderTag != y.responderTag && x.initiatorTag != y.initiatorTag)
        }
        let a = try CPace.Party(code: [1], channel: [], sid: sid)
        // The identity, a non-canonical encoding and a short share.
        for bad in [[UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xff, count: 32), [UInt8](repeating: 1, count: 31)] {
            #expect(throws: CryptoError.self) { try CPace.finish(a, peerShare: bad, initiator: true, initiatorData: [], responderData: []) }
        }
        #expect(throws: CryptoError.self) { try CPace.Party(code: [1], channel: [], sid: [1, 2]) }
    }
}
