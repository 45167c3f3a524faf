import Gossip

// libFuzzer entry: envelope and carried-envelope decoding. Must never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let e = try? Envelope.decode(bytes, verification: .trustedStorage), e.encoded != bytes { return 1 }
    _ = try? Envelope.decode(bytes)
    _ = try? CarriedEnvelope.decode(bytes)
    return 0
}
