import Crypto
import Foundation
import Store

/// Whether our own history is safe (docs/DECISIONS.md, "Own posts are sent
/// before their fsync"): no sequence number of ours is ever used twice.
///
/// Own envelopes go to the links before their fsync: committed to the
/// kernel's cache, sent, then synced before they are shown. A process that
/// dies loses nothing of that (the kernel still writes it); only the
/// machine stopping in the fraction of a millisecond between the send and
/// the sync can take back a post that a peer already holds. Were the next
/// post to reuse its sequence number, that would be a fork.
///
/// So the unit records the boot it runs under (the kernel's boot id). A
/// start under another boot than the last means the machine stopped since:
/// our last posts may be only on our peers, and posting waits for a linked
/// peer's clock, as for a lost database (`OwnHistoryGate`), or at most
/// `OwnHistoryGate.patience` seconds with no peer linked. The doubt is
/// saved, so a restart in the meantime does not clear it. A clean stop
/// records that nothing of ours is only on peers (an empty boot), so the
/// next start has no doubt under any boot. Where the boot id cannot be
/// read or recorded, own posts are fsynced before they are sent, as before.
///
/// Given the store (through `Repository`), our id, whether the identity
/// is new, and where failures that cannot be thrown go. Confined to the
/// node's loop.
final class OwnDurability {
    /// Where Linux gives this boot's id (a fresh random UUID at each boot).
    static let bootIDFile = "/proc/sys/kernel/random/boot_id"
    /// The setting holding the boot id the node last started under.
    static let bootSetting = "last_boot"
    /// The setting (our id) that says: the machine stopped since the last
    /// start, and no peer has said what we posted yet.
    static let unsureSetting = "own_history_unsure"
    /// The setting that records "this database knows all our own messages"
    /// (its value is our id, so a database moved under another key does not count).
    static let knownSetting = "own_history_known"

    /// The store as this unit uses it: settings, our chain's head, a sync.
    struct Repository {
        let store: Store

        func setting(_ name: String) throws(RepositoryError) -> String? { try storeCall("reading the setting \(name)") { try store.setting(name) } }
        func set(_ name: String, _ value: String) throws(RepositoryError) { try storeCall("writing the setting \(name)") { try store.setSetting(name, value) } }
        func remove(_ name: String) throws(RepositoryError) { try storeCall("removing the setting \(name)") { try store.removeSetting(name) } }
        func hasOwnChain(_ me: PublicKey) throws(RepositoryError) -> Bool { try storeCall("reading our own chain's head") { try store.head(of: me) != nil } }
        func sync() throws(RepositoryError) { try storeCall("syncing the database") { try store.sync() } }
    }

    private let repository: Repository
    private let me: PublicKey
    private let identityIsNew: Bool
    private let failures: StoreFailures

    /// Own envelopes are sent before their fsync: only in a running chat
    /// node or relay (`startRunning`); a one-shot command (`device revoke`)
    /// stores what it signs durably.
    private(set) var sendsBeforeSync = false
    /// The machine stopped since this node last started, and no linked peer
    /// has said what we posted since: our history is not known.
    private(set) var unsure = false
    private var known = false

    init(repository: Repository, me: PublicKey, identityIsNew: Bool, failures: StoreFailures) throws(RepositoryError) {
        self.repository = repository
        self.me = me
        self.identityIsNew = identityIsNew
        self.failures = failures
        unsure = try repository.setting(Self.unsureSetting) == me.hex
        // A key made with this database: nothing of ours can be elsewhere.
        if identityIsNew { try markKnown() }
    }

    /// Whether a post now is safe from reusing a sequence number that peers
    /// already hold: true for an identity made with this database, when this
    /// store has our own messages, or once a peer's clock said what we
    /// posted. An old identity with none here (a lost or new database) may
    /// have posted before; its first post waits until a peer says.
    var historyIsKnown: Bool {
        // Once true it stays true (our messages and the setting are never
        // removed), so the store is asked only until then. A read that
        // fails answers "not known": the safe side (a post waits for a peer).
        if unsure { return false }
        if !known {
            known = identityIsNew || failures.read { () throws(RepositoryError) in try repository.hasOwnChain(me) } == true
                || failures.read { () throws(RepositoryError) in try repository.setting(Self.knownSetting) } == me.hex
        }
        return known
    }

    /// A peer's clock said what we posted (or the identity is new): recorded.
    func markKnown() throws(RepositoryError) {
        if try repository.setting(Self.knownSetting) != me.hex { try repository.set(Self.knownSetting, me.hex) }
        if unsure { try repository.remove(Self.unsureSetting) }
        unsure = false
        known = true
    }

    /// This boot's id, or nil where it cannot be read (then nothing is sent before its fsync).
    static func currentBootID(file: String = bootIDFile) -> String? {
        // Unreadable (no /proc, another kernel): nothing is sent before its fsync, the safe side.
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty || id.count > 64 ? nil : id
    }

    /// A chat node or relay starts, before anything of ours is signed:
    /// the boot is compared and recorded, and posts go before their fsync
    /// where it could be. A boot that cannot be recorded (a full or
    /// read-only disk): our posts are fsynced before they go, and that is
    /// said. One-shot commands (`device revoke`) do not call this: what
    /// they sign is stored durably, and their start is no run of a node.
    func startRunning() {
        do { sendsBeforeSync = try recordBoot(Self.currentBootID()) } catch {
            failures.failed(error)
            sendsBeforeSync = false
        }
    }

    /// Compares `boot` with the last start's, saves the doubt when they
    /// differ, and records this one, durably, before anything of ours is
    /// sent unsynced. Returns whether own posts may go before their fsync
    /// (a boot id was read).
    func recordBoot(_ boot: String?) throws(RepositoryError) -> Bool {
        guard let boot else { return false }
        let last = try repository.setting(Self.bootSetting)
        guard last != boot else { return true }
        // A clean stop (empty), an older version or a new database (none): no doubt.
        if let last, !last.isEmpty, !identityIsNew {
            try repository.set(Self.unsureSetting, me.hex)
            unsure = true
        }
        try repository.set(Self.bootSetting, boot)
        try repository.sync()
        return true
    }

    /// The fsync after a send failed: what was sent may never reach the
    /// disk (Linux may drop the pages it could not write). From now on our
    /// posts are fsynced before they go, and the next start waits for a
    /// peer's clock, as after the machine stopped (if that can still be
    /// written). This run goes on as it is: it still reads what it wrote.
    func syncFailed() {
        sendsBeforeSync = false
        do { try repository.set(Self.unsureSetting, me.hex) } catch { failures.failed(error) }
    }

    /// At a clean stop, after the last own envelope: everything of ours is
    /// on the disk, so the next start has nothing to wait for, whatever the
    /// boot. The exit's checkpoint syncs this write with the rest; were it
    /// lost, the old boot stays on record, which only costs a wait.
    func recordCleanStop() throws(RepositoryError) {
        guard sendsBeforeSync else { return }
        try repository.set(Self.bootSetting, "")
    }
}
