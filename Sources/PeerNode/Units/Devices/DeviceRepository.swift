import Crypto
import Gossip
import Store

/// The store as devices and revocations use it: the claims and revocations
/// held, a revoked device's chain and forks, and the refiling of what it
/// signed past its limit. Every call throws a `RepositoryError` naming what it was doing.
struct DeviceRepository {
    let store: Store

    func claims() throws(RepositoryError) -> [Store.DeviceRow] {
        try storeCall("reading the devices claimed") { try store.devices() }
    }

    func add(_ row: Store.DeviceRow) throws(RepositoryError) {
        _ = try storeCall("recording a device's claim") { try store.addDevice(row) }
    }

    func devices(of account: PublicKey) throws(RepositoryError) -> [Store.DeviceRow] {
        try storeCall("reading an account's devices") { try store.devices(of: account) }
    }

    func revocations() throws(RepositoryError) -> [Store.RevocationRow] {
        try storeCall("reading the revocations held") { try store.revocations() }
    }

    func add(_ row: Store.RevocationRow) throws(RepositoryError) {
        try storeCall("recording a revocation") { try store.addRevocation(row) }
    }

    func fileAsRefused(by device: PublicKey, after limit: UInt64) throws(RepositoryError) {
        _ = try storeCall("filing a revoked device's posts as refused") { try store.fileAsRefused(by: device, after: limit) }
    }

    func envelope(by author: PublicKey, sequence: UInt64) throws(RepositoryError) -> Envelope? {
        try storeCall("reading a revoked device's chain") { try store.envelope(by: author, sequence: sequence) }
    }

    func fork(by author: PublicKey, sequence: UInt64, id: MessageID) throws(RepositoryError) -> Envelope? {
        try storeCall("reading a revoked device's forks") { try store.fork(by: author, sequence: sequence, id: id) }
    }

    func head(of author: PublicKey) throws(RepositoryError) -> (sequence: UInt64, id: MessageID)? {
        try storeCall("reading a device's last envelope") { try store.head(of: author) }
    }

    /// Stores the genuine envelopes of a named chain: `replacing` take the
    /// rows of forks held first, `proven` fill where nothing is held.
    func storeGenuine(replacing: [Envelope], proven: [Envelope], at now: UInt64) throws(RepositoryError) {
        try storeCall("storing a revoked device's genuine envelopes") {
            for genuine in replacing { _ = try store.replaceHeld(with: genuine) }
            if !proven.isEmpty { _ = try store.insertProven(proven, receivedAt: now) }
        }
    }
}
