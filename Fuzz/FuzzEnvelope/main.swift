import Gossip

// libFuzzer entry: envelope, carried-envelope and gossip-message decoding,
// and chunk reassembly. Must never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let e = try? Envelope.decode(bytes, verification: .trustedStorage), e.encoded != bytes { return 1 }
    _ = try? Envelope.decode(bytes)
    _ = try? CarriedEnvelope.decode(bytes)
    if let m = try? GossipMessage.decode(bytes), (try? GossipMessage.decode(m.encoded)) != m { return 1 }
    var joiner = GossipChunker()
    _ = try? joiner.add(bytes)
    return 0
}
