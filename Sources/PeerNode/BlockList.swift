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
