/// Text that came from the network (a close reason, a nick claimed in a
/// handshake): it prints only as `TerminalText.sanitize` makes it, so an
/// escape sequence in it can never act on a screen or a log. Interpolating
/// it (`"\(reason)"`) gives the sanitized form; the bytes as sent are
/// reachable only by the explicitly named `unsanitized`, for comparisons
/// and for encoders that escape on their own (JSON, RFC 8259 §7).
public struct PeerText: Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private let raw: String

    public init(_ raw: String) { self.raw = raw }

    /// Safe for a terminal or a log line.
    public var description: String { TerminalText.sanitize(raw) }
    public var debugDescription: String { description.debugDescription }

    /// The text exactly as the peer sent it: never print this.
    public var unsanitized: String { raw }
}
