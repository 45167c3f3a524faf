/// A seeded generator (splitmix64): small, fast, and the same sequence for
/// the same seed, so a simulation, a test or a fuzz crash replays the same
/// way. The one copy: `OverlaySimulation`, `TestSupport` and `FuzzSupport`
/// re-export it. Never for keys or nonces (libsodium makes those).
public struct SplitMix: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
