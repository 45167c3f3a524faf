import Crypto
import Foundation
import Gossip
import Store

/// Revoking a device (docs/PROTOCOL.md §15, "Revoking a device"): any
/// device of an account says that another's envelopes after a sequence
/// are refused. The account key's word always counts; another device's
/// counts unless the account key revoked that device before it spoke. Two
/// devices that revoke each other are both revoked. What a revoked device
/// signs past its limit is stored and relayed like anything, and shown,
/// applied and counted as a message nowhere.
extension Node {
    /// Revocations read at start, and each limit they give.
    func loadRevocations() throws {
        revocationRows = Set(try store.revocations())
        revokedAfter = Self.limits(revocationRows, account: { self.people.account($0) })
    }

    /// Each revoked device's last accepted sequence, from every revocation
    /// held: the same on every node that holds the same revocations,
    /// whatever order they came in.
    static func limits(_ rows: Set<Store.RevocationRow>, account: (PublicKey) -> PublicKey) -> [PublicKey: UInt64] {
        var byAccountKey: [PublicKey: UInt64] = [:]
        for r in rows where r.by == account(r.by) {
            byAccountKey[r.device] = min(byAccountKey[r.device] ?? .max, r.last)
        }
        var out = byAccountKey
        for r in rows where r.by != account(r.by) {
            // Signed after the account key had revoked its author: does not count.
            if let limit = byAccountKey[r.by], r.bySequence > limit { continue }
            out[r.device] = min(out[r.device] ?? .max, r.last)
        }
        return out
    }

    /// Whether `e` was signed by a revoked device after its limit.
    func isRevoked(_ e: Envelope) -> Bool {
        revokedAfter[e.author].map { e.sequence > $0 } ?? false
    }

    /// A delivered revocation: nil (and counted `revoke_refused`) unless
    /// its author and the device it names belong to one account, and the
    /// device is not the account key (an account is not revoked by its devices).
    func acceptRevocation(_ e: Envelope, _ opened: OpenedEnvelope) -> Store.RevocationRow? {
        guard e.room == accountsRoom, let revocation = DeviceRevocation.decode(opened.content) else {
            refusedRevocations &+= 1
            return nil
        }
        let account = people.account(revocation.device)
        guard account != revocation.device, people.account(e.author) == account else {
            refusedRevocations &+= 1
            return nil
        }
        let row = Store.RevocationRow(device: revocation.device, by: e.author, bySequence: e.sequence, last: revocation.last)
        guard revocationRows.insert(row).inserted else { return nil }
        do { try store.addRevocation(row) } catch { return nil }
        revokedAfter = Self.limits(revocationRows, account: { self.people.account($0) })
        return row
    }

    /// Finds one of our account's devices by its id, short fingerprint or name.
    func ownDevice(_ who: String) throws -> Store.DeviceRow {
        let all = try devices(of: me)
        let found = all.filter { $0.device.hex == who || $0.device.shortFingerprint == who || $0.name == who }
        guard found.count == 1, let device = found.first else {
            throw found.isEmpty ? NodeError.noDevice(who) : NodeError.ambiguous(who, candidates: found.map(\.device))
        }
        return device
    }

    /// Signs a revocation of one of our account's devices (not the account
    /// key): what it signed after the last envelope of it held here is refused.
    @discardableResult
    func revoke(_ who: String) throws -> (Envelope, Store.DeviceRow) {
        let device = try ownDevice(who)
        guard device.device != account else { throw NodeError.cannotRevokeAccountKey }
        let last = try store.head(of: device.device)?.sequence ?? 0
        let e = try appendOwn(room: accountsRoom, kind: .revoke, content: DeviceRevocation(device: device.device, last: last).encoded, key: accountsKey)
        if let opened = open(e) { _ = acceptRevocation(e, opened) }
        return (e, device)
    }
}
