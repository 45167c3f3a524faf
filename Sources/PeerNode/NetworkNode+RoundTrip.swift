import Foundation
import Gossip
import WebSocket

/// Round-trip time per link, for `/peers`: a WebSocket ping every
/// `roundTripProbeInterval` (the first `quickProbes` a second apart) whose
/// payload is a probe number (4 bytes, no clock: nothing about this node
/// leaks outside Noise), timed when the pong brings it back. What is shown
/// is the least of the last `keptSamples`: a sample that met either node
/// busy with a turn of other work times that work, not the link (a smoothed
/// mean kept one such sample for minutes), and the least one is the link's.
extension NetworkNode {
    /// Seconds between probes on a link (the first `firstProbeDelay` after it is up).
    static let roundTripProbeInterval = 10.0
    /// Seconds after a link is up that its first probe leaves.
    static let firstProbeDelay = 1.0
    /// Probes a second apart once a link is up, before the slower pace.
    static let quickProbes = 3
    /// Samples the shown round trip is the least of.
    static let keptSamples = 5

    /// Seconds until `link`'s next probe is due, after its last one.
    static func probeInterval(_ link: Link) -> Double {
        link.samples.count < quickProbes ? firstProbeDelay : roundTripProbeInterval
    }

    func probeRoundTrip(on id: LinkID, now: Double) {
        guard var link = links[id] else { return }
        let number = (link.probe?.number ?? UInt32.random(in: 0...UInt32.max)) &+ 1
        link.probe = (number, now)
        link.lastProbe = now
        links[id] = link
        link.connection.ping(Self.probePayload(number))
    }

    func pongArrived(_ payload: [UInt8], on id: LinkID) {
        // A pong that answers no probe of ours (an old one, or unsolicited, RFC 6455 §5.5.3) is ignored.
        guard var link = links[id], let probe = link.probe, payload == Self.probePayload(probe.number) else { return }
        let sample = max(0, monotonic() - probe.sentAt)
        link.samples = Array((link.samples + [sample]).suffix(Self.keptSamples))
        link.roundTrip = link.samples.min()
        link.probe = nil
        links[id] = link
    }

    static func probePayload(_ number: UInt32) -> [UInt8] {
        [UInt8(number >> 24), UInt8(number >> 16 & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)]
    }
}
