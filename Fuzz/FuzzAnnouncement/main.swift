import Crypto
import Discovery
import FuzzSupport

// libFuzzer entry: discovery datagrams. The input is tried as a datagram as
// it came off the wire, and (since a fuzzer cannot forge the tag) also as a
// body sealed under the network's key, so the parser behind the tag check is
// reached too; and fed to the discovery core. Must never crash.
let network = NetworkKey.derived(fromName: "fuzz")
let key = Announcement.key(for: network)
nonisolated(unsafe) var core = (try? SigningKey(seed: [UInt8](repeating: 7, count: 32))).map {
    DiscoveryCore(signer: $0, network: network, port: 7733, random: SystemRandomNumberGenerator())
}
nonisolated(unsafe) var clock: UInt64 = 1_800_000_000_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAnnouncement(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    invariant(key != nil && core != nil, "the fuzz target's keys could not be made")
    guard let key else { return 0 }
    _ = Announcement.open(bytes, key: key)
    if let sealed = try? key.seal(bytes, associatedData: Announcement.magic + [Announcement.version]) {
        _ = Announcement.open(Announcement.magic + [Announcement.version] + sealed, key: key)
    }
    clock += 37
    _ = core?.received(bytes, from: "10.0.0.\(size % 250)", now: clock)
    _ = core?.tick(now: clock)
    return 0
}
