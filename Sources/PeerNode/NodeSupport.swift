import Crypto
import Foundation

/// The blocked identities, shared with link handshakes.
final class BlockList: @unchecked Sendable {
    private let lock = NSLock()
    private var keys: Set<PublicKey> = []

    func set(_ new: Set<PublicKey>) {
        lock.lock()
        keys = new
        lock.unlock()
    }

    func contains(_ key: PublicKey) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return keys.contains(key)
    }

    var snapshot: Set<PublicKey> {
        lock.lock()
        defer { lock.unlock() }
        return keys
    }
}

extension NetworkNode {
    static func split(hostPort: String) -> (String, UInt16)? {
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else { return nil }
        var host = String(hostPort[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func parse(peerURL: String) -> (String, UInt16)? {
        guard peerURL.hasPrefix("ws://") else { return nil }
        var rest = String(peerURL.dropFirst(5))
        if rest.hasSuffix("/peernode/1") { rest = String(rest.dropLast("/peernode/1".count)) }
        if rest.hasSuffix("/") { rest = String(rest.dropLast()) }
        return split(hostPort: rest)
    }
}
