import Crypto
import Foundation
import Gossip
import Store

/// A revoked device's named chain as far as it was followed: the id at each
/// sequence from `floor` up to the named envelope, and the id the envelope
/// at `floor` names as its previous (the next link down).
struct NamedChain {
    var ids: [UInt64: MessageID]
    var floor: UInt64
    var below: MessageID
}

/// Revoking a device (docs/PROTOCOL.md §15, "Revoking a device"): any
/// device of an account says that another's envelopes after a sequence
/// are refused. The account key's word always counts; another device's
/// counts unless the account key revoked that device before it spoke. Two
/// devices that revoke each other are both revoked. What a revoked device
/// signs past its limit is stored and relayed like anything, and shown,
/// applied and counted as a message nowhere.
extension Devices {
    /// The revocations that count, from every one held: the account key's,
    /// and another device's unless the account key revoked its author
    /// before it was signed. The same on every node that holds the same
    /// revocations, whatever order they came in.
    static func counted(_ rows: Set<Store.RevocationRow>, account: (PublicKey) -> PublicKey) -> [Store.RevocationRow] {
        var byAccountKey: [PublicKey: UInt64] = [:]
        for r in rows where r.by == account(r.by) {
            byAccountKey[r.device] = min(byAccountKey[r.device] ?? .max, r.last)
        }
        return rows.filter { r in
            // Signed after the account key had revoked its author: does not count.
            r.by == account(r.by) || byAccountKey[r.by].map { r.bySequence <= $0 } ?? true
        }
    }

    /// Each revoked device's last accepted sequence: the lowest the counted revocations give.
    static func limits(_ counted: [Store.RevocationRow]) -> [PublicKey: UInt64] {
        var out: [PublicKey: UInt64] = [:]
        for r in counted { out[r.device] = min(out[r.device] ?? .max, r.last) }
        return out
    }

    /// Each revoked device's named last envelope: of the counted
    /// revocations that name one, the lowest (ties: the smaller id).
    static func namedHeads(_ counted: [Store.RevocationRow]) -> [PublicKey: (sequence: UInt64, id: MessageID)] {
        var out: [PublicKey: (sequence: UInt64, id: MessageID)] = [:]
        for r in counted {
            guard let id = r.lastID else { continue }
            if let known = out[r.device], (known.sequence, known.id) <= (r.last, id) { continue }
            out[r.device] = (r.last, id)
        }
        return out
    }

    /// Whether `e` was signed by a revoked device and is not accepted: past
    /// its limit, or at or below it but not on the chain that ends at the
    /// envelope its revocation names (a fork the device's key signed, seen
    /// here where the original never was). Below the limit, only what this
    /// node can prove stands: every held envelope from `e` up to the named
    /// one links to the next.
    func isRevoked(_ e: Envelope) -> Bool {
        guard let limit = revokedAfter[e.author] else { return false }
        if e.sequence > limit { return true }
        guard let named = revokedHeads[e.author] else { return false }
        if e.sequence == named.sequence { return e.id != named.id }
        if e.sequence > named.sequence { return false }
        return !onNamedChain(e, named: named)
    }

    /// Follows the named chain down from the named envelope (once: how far
    /// it got is kept), each link the envelope whose id the one above names
    /// as `previous`, held or kept as a fork (a genuine envelope refused
    /// here because a fork of the thief's was held first is kept so), and
    /// says whether `e` is on it.
    private func onNamedChain(_ e: Envelope, named: (sequence: UInt64, id: MessageID)) -> Bool {
        var chain = namedChains[e.author] ?? NamedChain(ids: [:], floor: named.sequence &+ 1, below: named.id)
        while chain.floor > e.sequence, chain.floor > 1 {
            let sequence = chain.floor - 1
            guard let (link, _) = chainLink(e.author, sequence, chain.below) else { break }
            chain.ids[sequence] = link.id
            chain.floor = sequence
            chain.below = link.previous
        }
        namedChains[e.author] = chain
        return chain.ids[e.sequence] == e.id
    }

    /// Stores the envelopes of `device`'s named chain that this node kept only
    /// as forks: where it holds nothing (the genuine envelope after a thief's
    /// fork, refused then as not linking), and where it holds the thief's
    /// fork itself (held first), which goes to the forks table in its place.
    /// They are shown, and the chain fills, so what depends on it (the
    /// revocation itself) is delivered.
    func promoteNamedChain(_ device: PublicKey) {
        guard let named = revokedHeads[device] else { return }
        var expected = named.id, sequence = named.sequence
        var proven: [Envelope] = [], replacing: [Envelope] = []
        while sequence >= 1, let (link, held) = chainLink(device, sequence, expected) {
            if held == nil { proven.append(link) } else if held?.id != link.id { replacing.append(link) }
            expected = link.previous
            sequence -= 1
        }
        guard !proven.isEmpty || !replacing.isEmpty else { return }
        _ = failures.read { () throws(RepositoryError) in try repository.storeGenuine(replacing: replacing, proven: proven.reversed(), at: Node.now()) }
    }

    /// `author`'s envelope at `sequence` with id `id` (the held one, or a
    /// fork kept), and what is held there.
    private func chainLink(_ author: PublicKey, _ sequence: UInt64, _ id: MessageID) -> (link: Envelope, held: Envelope?)? {
        let held = failures.read { () throws(RepositoryError) in try repository.envelope(by: author, sequence: sequence) }
        if let held, held.id == id { return (held, held) }
        guard let kept = failures.read({ () throws(RepositoryError) in try repository.fork(by: author, sequence: sequence, id: id) }) else { return nil }
        return (kept, held)
    }

    /// A delivered revocation: nil (and counted `revoke_refused`) unless
    /// its author and the device it names belong to one account, and the
    /// device is not the account key (an account is not revoked by its devices).
    func acceptRevocation(_ e: Envelope, _ opened: OpenedEnvelope) -> Store.RevocationRow? {
        guard e.room == accountsRoom, let revocation = DeviceRevocation.decode(opened.content) else {
            refusedRevocations &+= 1
            return nil
        }
        let account = book.account(of: revocation.device)
        guard account != revocation.device, book.account(of: e.author) == account else {
            refusedRevocations &+= 1
            return nil
        }
        let row = Store.RevocationRow(device: revocation.device, by: e.author, bySequence: e.sequence, last: revocation.last, lastID: revocation.lastID)
        guard !revocationRows.contains(row) else { return nil }
        // Not kept when it cannot be recorded (said): it is taken again when next delivered or stored.
        guard failures.read({ () throws(RepositoryError) in try repository.add(row) }) != nil else { return nil }
        revocationRows.insert(row)
        revocationsChanged()
        // What it signed past the limit and was filed before counts as nobody's unread message.
        // A failure here costs only that count: `open` refuses the words whatever their filing.
        if let limit = revokedAfter[row.device] {
            do { try repository.fileAsRefused(by: row.device, after: limit) } catch {
                refusedFilingFailures &+= 1
                failures.failed(error)
            }
        }
        promoteNamedChain(row.device)
        return row
    }

    /// A revocation taken ahead of its delivery (when stored, or first in a
    /// batch): only once the revoked device's claim is known, so one that
    /// waits for its claim is taken (or refused) at delivery, not refused here.
    func takeRevocationEarly(_ e: Envelope, _ opened: OpenedEnvelope) -> Store.RevocationRow? {
        guard e.room == accountsRoom, opened.kind == .revoke, let revocation = DeviceRevocation.decode(opened.content),
              book.account(of: revocation.device) != revocation.device,
              book.account(of: revocation.device) == book.account(of: e.author) else { return nil }
        return acceptRevocation(e, opened)
    }

    /// Whether a kept revocation is news to show: the device's limit is not
    /// the one last shown (the two forms of one revocation, 40 and 72 bytes,
    /// are shown once).
    func revocationIsNews(_ device: PublicKey) -> Bool {
        let limit = revokedAfter[device]
        defer { shownRevocationLimits[device] = limit }
        return shownRevocationLimits[device] != limit
    }

    /// The line for a kept revocation, once per change of the device's limit
    /// (its two forms, 40 and 72 bytes, are told once).
    func revokedEvent(_ row: Store.RevocationRow, book people: People) -> NodeEvent? {
        guard revocationIsNews(row.device) else { return nil }
        return .deviceRevoked(people[row.device], device: row.device, by: row.by, last: revokedAfter[row.device] ?? row.last)
    }

    /// When this machine's own key is revoked: what it tells the user at
    /// each post, with who revoked it and when ("this machine was revoked
    /// from carol's account at 13:26; nothing it posts is accepted").
    func ownRevocation(book people: People) -> String? {
        guard revokedAfter[me] != nil else { return nil }
        let rows = revocationRows.filter { $0.device == me }
        let at = rows.compactMap { row in failures.read { () throws(RepositoryError) in try repository.envelope(by: row.by, sequence: row.bySequence) }?.timestamp }.min()
        // The nick as every network text is shown: sanitized (PeerText's description).
        let owner = people.nick(account).map { "\($0)·" + account.shortFingerprint } ?? account.shortFingerprint
        return "this machine was revoked from \(owner)'s account\(at.map { " at " + Renderer.clock($0) } ?? ""); nothing it posts is accepted"
    }

    /// Signs a revocation of one of our account's devices (not the account
    /// key): what it signed after the last envelope of it held here is
    /// refused, and so is anything else it signed at or below it. Two
    /// envelopes: the 40-byte form for nodes that read only that, then the
    /// one naming the last envelope (none when nothing of it is held).
    @discardableResult
    func revoke(_ who: String) throws -> (Envelope, Store.DeviceRow) {
        let device = try ownDevice(who)
        guard device.device != account else { throw NodeError.cannotRevokeAccountKey }
        let head = try repository.head(of: device.device)
        var e = try author.appendOwn(room: accountsRoom, kind: .revoke, content: DeviceRevocation(device: device.device, last: head?.sequence ?? 0).encoded,
                              key: accountsKey)
        if let opened = envelopes.open(e) { _ = acceptRevocation(e, opened) }
        if let head {
            e = try author.appendOwn(room: accountsRoom, kind: .revoke, content: DeviceRevocation(device: device.device, last: head.sequence, lastID: head.id).encoded,
                              key: accountsKey)
            if let opened = envelopes.open(e) { _ = acceptRevocation(e, opened) }
        }
        return (e, device)
    }
}
