/// Where a link goes: `host:port` (an IPv6 host in brackets) and `ws://host:port[/peernode/1]`.
enum PeerAddress {
    /// `host:port` split; nil when either part is missing, the port is not
    /// a number, or the host is not one: a bracket that does not enclose the
    /// whole host (`[::1` was taken as the host `[:`), or a space, a slash or
    /// a control character in it.
    static func split(hostPort: String) -> (String, UInt16)? {
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else { return nil }
        var host = Substring(hostPort[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 { host = host.dropFirst().dropLast() }
        let notInAHost: (Unicode.Scalar) -> Bool = { $0 == "[" || $0 == "]" || $0 == "/" || $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }
        guard !host.isEmpty, !host.unicodeScalars.contains(where: notInAHost) else { return nil }
        return (String(host), port)
    }

    /// A `--peer` URL's host and port; nil for anything but `ws://`.
    static func parse(peerURL: String) -> (String, UInt16)? {
        guard peerURL.hasPrefix("ws://") else { return nil }
        var rest = String(peerURL.dropFirst(5))
        if rest.hasSuffix("/peernode/1") { rest = String(rest.dropLast("/peernode/1".count)) }
        if rest.hasSuffix("/") { rest = String(rest.dropLast()) }
        return split(hostPort: rest)
    }
}
