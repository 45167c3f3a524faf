/// Round-trip time of one link, for `/peers`: a WebSocket ping every
/// `interval` (the first `quickProbes` a second apart) whose payload is a
/// probe number (4 bytes, no clock: nothing about this node leaks outside
/// Noise), timed when the pong brings it back. What is shown is the least
/// of the last `keptSamples`: a sample that met either node busy with a
/// turn of other work times that work, not the link (a smoothed mean kept
/// one such sample for minutes), and the least one is the link's. A value:
/// times come in as arguments.
struct RoundTripProbe {
    /// Seconds between probes on a link (the first `firstDelay` after it is up).
    static let interval = 10.0
    /// Seconds after a link is up that its first probe leaves.
    static let firstDelay = 1.0
    /// Probes a second apart once a link is up, before the slower pace.
    static let quickProbes = 3
    /// Samples the shown round trip is the least of.
    static let keptSamples = 5

    /// Round-trip time (seconds): the least of `samples`.
    private(set) var roundTrip: Double?
    private(set) var samples: [Double] = []
    /// The probe in flight: its number (the ping's payload) and when it left.
    private var inFlight: (number: UInt32, sentAt: Double)?
    /// When the last probe left (or the link came up).
    var lastProbe = 0.0

    /// Whether a probe is due at `now`.
    func isDue(now: Double) -> Bool {
        now - lastProbe >= (samples.count < Self.quickProbes ? Self.firstDelay : Self.interval)
    }

    /// A probe leaves at `now`: the ping's payload. `first` numbers the
    /// first probe of a link (a random start).
    mutating func start(now: Double, first: UInt32) -> [UInt8] {
        let number = (inFlight?.number ?? first) &+ 1
        inFlight = (number, now)
        lastProbe = now
        return Self.payload(number)
    }

    /// A pong came at `now`. One that answers no probe of ours (an old one,
    /// or unsolicited, RFC 6455 §5.5.3) changes nothing.
    mutating func pong(_ payload: [UInt8], now: Double) {
        guard let probe = inFlight, payload == Self.payload(probe.number) else { return }
        samples = Array((samples + [max(0, now - probe.sentAt)]).suffix(Self.keptSamples))
        roundTrip = samples.min()
        inFlight = nil
    }

    static func payload(_ number: UInt32) -> [UInt8] {
        [UInt8(number >> 24), UInt8(number >> 16 & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)]
    }
}
