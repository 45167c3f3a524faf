import Crypto
import Foundation

/// A thread-safe line writer for stdout. Between `hold()` and `release()`
/// lines are gathered and written with one system call.
final class Output: @unchecked Sendable {
    private let lock = NSLock()
    private var held: [String]?
    /// Where lines go instead of stdout (the terminal session, which prints
    /// them above the prompt). Set once, before any output.
    var sink: (@Sendable ([String]) -> Void)?

    func line(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        if held != nil {
            held?.append(text)
        } else if let sink {
            sink([text])
        } else {
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }

    /// Several lines with one write.
    func lines(_ texts: [String]) {
        hold()
        for text in texts { line(text) }
        release()
    }

    func hold() {
        lock.lock()
        if held == nil { held = [] }
        lock.unlock()
    }

    func release() {
        lock.lock()
        let lines = held ?? []
        held = nil
        if lines.isEmpty {
        } else if let sink {
            sink(lines)
        } else {
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        lock.unlock()
    }
}

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
