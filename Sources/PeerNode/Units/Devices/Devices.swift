import Crypto
import Foundation
import Gossip
import NetworkText
import Store

/// Who signs for whom, as a unit is given it: the node's book of accounts.
protocol AccountBook: AnyObject {
    /// The account `key` signs for: itself when it claimed none.
    func account(of key: PublicKey) -> PublicKey
    /// Every device known from a claim, with its account.
    var deviceAccounts: [PublicKey: PublicKey] { get }
}

/// Accounts and their devices (docs/PROTOCOL.md §15). An identity is an
/// account with one device, itself. A device of another account signs its
/// own chain with its own key and claims the account once, with the
/// account's certificate, in the accounts room; from that claim on every
/// node shows what the device signs as the account's. Revocations are in
/// `Devices+Revocation.swift`.
///
/// Owns the revocations held and the limits they give, and its refusal
/// counts. Given the store (`DeviceRepository`), the book of accounts, the
/// node's one validity check and our chain; the node records a kept claim
/// in its book and hands the claim's conversation key on. Confined to the node's loop.
final class Devices {
    let repository: DeviceRepository
    unowned let book: any AccountBook
    unowned let envelopes: any EnvelopeOpening
    unowned let author: any OwnPosting
    let failures: StoreFailures
    /// The network's accounts room and its key.
    let accountsRoom: RoomID
    let accountsKey: SymmetricKey

    /// Device claims refused (`device_refused`).
    var refusedClaims = 0
    /// Revocations held, and the limit each revoked device has.
    var revocationRows: Set<Store.RevocationRow> = []
    private(set) var revokedAfter: [PublicKey: UInt64] = [:]
    /// For a revoked device, the envelope its revocations name as the last
    /// accepted (`namedHeads`), and its chain as far down from there as
    /// this node can follow it.
    private(set) var revokedHeads: [PublicKey: (sequence: UInt64, id: MessageID)] = [:]
    var namedChains: [PublicKey: NamedChain] = [:]
    /// The limit last shown for each revoked device (`revocationIsNews`).
    var shownRevocationLimits: [PublicKey: UInt64] = [:]
    /// Revocations refused (`revoke_refused`), and envelopes of revoked devices not shown (`revoked_refused`).
    var refusedRevocations = 0
    var refusedRevoked = 0
    /// Refilings of a revoked device's envelopes that the store failed (`revoked_filing_failed`).
    var refusedFilingFailures = 0

    init(repository: DeviceRepository, book: any AccountBook, envelopes: any EnvelopeOpening, author: any OwnPosting,
         failures: StoreFailures, accountsRoom: RoomID, accountsKey: SymmetricKey) {
        self.repository = repository
        self.book = book
        self.envelopes = envelopes
        self.author = author
        self.failures = failures
        self.accountsRoom = accountsRoom
        self.accountsKey = accountsKey
    }

    var me: PublicKey { author.me }
    var account: PublicKey { book.account(of: author.me) }

    /// The claims held, read at start (the node puts them in its book).
    func claims() throws(RepositoryError) -> [Store.DeviceRow] { try repository.claims() }

    /// A delivered device claim: the row to record in the book, and the
    /// certificate (which announces its account's conversation key). Nil
    /// (and counted `device_refused`) when the claim does not hold: its
    /// certificate does not verify or names another device, it is not in the
    /// accounts room, the device claimed an account before, or either key is
    /// already the other kind (an account with devices cannot become a
    /// device; a device cannot be an account). Nil, said, when the store fails.
    func acceptClaim(_ e: Envelope, _ opened: OpenedEnvelope) -> (row: Store.DeviceRow, certificate: DeviceCertificate)? {
        let known = book.deviceAccounts
        // Our own claim, taken when it was posted, is delivered once more.
        if e.author == me, known[me] != nil { return nil }
        // A certificate that does not decode or verify is the claimer's fault: refused and counted.
        guard e.room == accountsRoom, let certificate = try? DeviceCertificate.decode(opened.content),
              certificate.device == e.author, known[e.author] == nil, known[certificate.account] == nil,
              !known.values.contains(e.author)
        else {
            refusedClaims &+= 1
            return nil
        }
        let row = Store.DeviceRow(device: e.author, account: certificate.account, name: certificate.name,
                                  issued: certificate.issued, claim: e.sequence)
        guard failures.read({ () throws(RepositoryError) in try repository.add(row) }) != nil else { return nil }
        return (row, certificate)
    }

    /// The devices of the account `key` signs for, the account's own first.
    func devices(of key: PublicKey) throws(RepositoryError) -> [Store.DeviceRow] {
        let account = book.account(of: key)
        let root = Store.DeviceRow(device: account, account: account, name: "first device", issued: 0, claim: 0)
        return [root] + (try repository.devices(of: account))
    }

    /// The name a claimed device goes by (its certificate's), nil for an
    /// account key, a key that claimed nothing, or a store that failed (said).
    func name(of device: PublicKey) -> String? {
        let account = book.account(of: device)
        guard account != device else { return nil }
        return failures.read { () throws(RepositoryError) in try repository.devices(of: account) }?.first { $0.device == device }?.name
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

    /// Our account's devices that are revoked.
    var ownRevokedDevices: Set<PublicKey> {
        Set(revokedAfter.keys.filter { $0 != account && book.account(of: $0) == account })
    }

    /// Reads the revocations held, at start.
    func loadRevocations() throws(RepositoryError) {
        revocationRows = Set(try repository.revocations())
        revocationsChanged()
    }

    func revocationsChanged() {
        let counted = Self.counted(revocationRows, account: { self.book.account(of: $0) })
        revokedAfter = Self.limits(counted)
        revokedHeads = Self.namedHeads(counted)
        namedChains = [:]
    }
}
