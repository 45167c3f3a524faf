import Foundation
import Gossip
import WebSocket

/// Round-trip time per link, for `/peers`: a WebSocket ping every
/// `roundTripProbeInterval` whose payload is a probe number (4 bytes, no
/// clock: nothing about this node leaks outside Noise), timed when the pong
/// brings it back. Smoothed like TCP's SRTT (RFC 6298 §2: 7/8 old, 1/8 new).
extension NetworkNode {
    /// Seconds between probes on a link (and one as soon as it is up).
    static let roundTripProbeInterval = 10.0

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
        link.roundTrip = link.roundTrip.map { $0 * 7 / 8 + sample / 8 } ?? sample
        link.probe = nil
        links[id] = link
    }

    static func probePayload(_ number: UInt32) -> [UInt8] {
        [UInt8(number >> 24), UInt8(number >> 16 & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)]
    }
}
