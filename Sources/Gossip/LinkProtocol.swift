import Crypto

/// The version a link speaks. The dialler offers every version it knows as
/// WebSocket subprotocols (RFC 6455 §1.9), newest first; the listener picks
/// the newest it also knows. The version is then mixed into the Noise
/// prologue, so two ends that came away believing different versions fail
/// the handshake instead of misreading each other.
///
/// The link's cipher is a second dimension of the same offer (`LinkTerms`):
/// `peernode.N` runs ChaCha20-Poly1305, `peernode.N.aesgcm` AES-256-GCM, the
/// latter offered only by a node whose CPU has AES, and before the former.
public enum LinkProtocol: Int, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// Catch-up is sent by the side that has it: on a peer's clock, a node
    /// sends what that clock lacks.
    case v1 = 1
    /// Catch-up is asked for by the side that lacks it, in paced windows
    /// (`Replicator.pullWindow`); a node sends stored envelopes only when asked.
    case v2 = 2
    /// As version 2, and envelopes of version 2 (kind sealed, bodies padded)
    /// travel on it. Older links carry only version-1 envelopes.
    case v3 = 3
    /// As version 3, and the overlay travels on it: membership messages
    /// (bounded links, HyParView) and tree push (ids on lazy links,
    /// prune and graft; Plumtree). Older links are kept whole and pushed to
    /// in full, as before.
    case v4 = 4
    /// As version 4, and envelopes of version 3 (body hash signed, bodies
    /// that can be erased; docs/PROTOCOL.md §4) travel on it.
    case v5 = 5
    /// As version 5, and typing notices (type 12) travel on it.
    case v6 = 6
    /// As version 6, and files' chunks (types 13–15) travel on it.
    case v7 = 7
    /// As version 7, and an ask for chunks may name the envelope that
    /// offered the file (type 16), so a relay erases the file with it.
    case v8 = 8
    /// As version 8, and presence beacons (type 17) travel on it.
    case v9 = 9
    /// As version 9, and envelopes of version 4 (the id covers the
    /// signature, so a chain vouches for it; docs/PROTOCOL.md §4) travel on it.
    case v10 = 10

    public static func < (a: LinkProtocol, b: LinkProtocol) -> Bool { a.rawValue < b.rawValue }

    /// The newest version this build speaks.
    public static let newest = LinkProtocol.v10

    /// The WebSocket subprotocol that names it: `peernode.N`.
    public var subprotocol: String { "peernode.\(rawValue)" }

    /// The Noise prologue of a link of this version: `peernode/N`.
    public var prologue: [UInt8] { Array("peernode/\(rawValue)".utf8) }

    /// The version a subprotocol names (nil: none we speak).
    public init?(subprotocol: String?) {
        guard let subprotocol, let version = Self.allCases.first(where: { $0.subprotocol == subprotocol.lowercased() }) else { return nil }
        self = version
    }

    /// Subprotocols to offer and to prefer, newest first, with ChaCha20-Poly1305 only.
    public static let subprotocols = allCases.sorted(by: >).map(\.subprotocol)

    /// Whether a peer on a link of this version asks for its catch-up (so we
    /// send stored envelopes only when asked).
    public var peerAsksForCatchUp: Bool { self >= .v2 }

    /// The newest envelope version the peer on a link of this version reads:
    /// a node sends it nothing newer (docs/PROTOCOL.md §10).
    public var envelopeVersion: UInt8 { self >= .v10 ? 4 : self >= .v5 ? 3 : self >= .v3 ? 2 : 1 }

    /// Whether membership and tree messages may be sent on a link of this version.
    public var speaksOverlay: Bool { self >= .v4 }

    /// Whether typing notices may be sent on a link of this version.
    public var speaksTyping: Bool { self >= .v6 }

    /// Whether files' chunks may be asked for and sent on a link of this version.
    public var speaksFiles: Bool { self >= .v7 }

    /// Whether an ask for chunks may name the offer's envelope (type 16) on a link of this version.
    public var namesFileOffers: Bool { self >= .v8 }

    /// Whether presence beacons may be sent on a link of this version.
    public var speaksPresence: Bool { self >= .v9 }

    public var description: String { "\(rawValue)" }
}

/// What a link's two ends agreed in the WebSocket handshake: the version and
/// the Noise cipher, named together by one subprotocol (docs/PROTOCOL.md §1).
public struct LinkTerms: Equatable, Sendable, CustomStringConvertible {
    public let version: LinkProtocol
    public let cipher: NoiseCipher

    public init(version: LinkProtocol, cipher: NoiseCipher = .chaChaPoly) {
        self.version = version
        self.cipher = cipher
    }

    /// The oldest version a link may run AES-GCM on: older builds never
    /// offered it, so no older version needs the name.
    public static let firstWithAESGCM = LinkProtocol.v10
    /// What follows `peernode.N` when the cipher is AES-256-GCM.
    static let aesGCMSuffix = ".aesgcm"

    /// `peernode.N`, or `peernode.N.aesgcm`.
    public var subprotocol: String { version.subprotocol + (cipher == .aesGCM ? Self.aesGCMSuffix : "") }

    /// The terms a subprotocol names (nil: none we speak).
    public init?(subprotocol: String?) {
        guard let subprotocol = subprotocol?.lowercased() else { return nil }
        if subprotocol.hasSuffix(Self.aesGCMSuffix) {
            guard let version = LinkProtocol(subprotocol: String(subprotocol.dropLast(Self.aesGCMSuffix.count))),
                  version >= Self.firstWithAESGCM else { return nil }
            self.init(version: version, cipher: .aesGCM)
        } else {
            guard let version = LinkProtocol(subprotocol: subprotocol) else { return nil }
            self.init(version: version)
        }
    }

    /// Subprotocols to offer and to prefer: newest version first and, within
    /// a version, AES-GCM first when `ciphers` has it (a node lists the
    /// ciphers its CPU runs and its `--link-cipher` allows).
    public static func subprotocols(ciphers: [NoiseCipher]) -> [String] {
        LinkProtocol.allCases.sorted(by: >).flatMap { version in
            let aes = ciphers.contains(.aesGCM) && version >= firstWithAESGCM
            return (aes ? [LinkTerms(version: version, cipher: .aesGCM).subprotocol] : []) + [version.subprotocol]
        }
    }

    public var description: String { "\(version.rawValue) (\(cipher.rawValue))" }
}
