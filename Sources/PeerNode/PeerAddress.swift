/// Where a link goes: `host:port` (an IPv6 host in brackets) and `ws://host:port[/peernode/1]`.
enum PeerAddress {
    /// `host:port` split; nil when either part is missing or the port is not a number.
    static func split(hostPort: String) -> (String, UInt16)? {
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else { return nil }
        var host = String(hostPort[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
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
