import Foundation
import Store

/// Own envelopes go to the links before their fsync (docs/DECISIONS.md,
/// "Own posts are sent before their fsync"): committed to the kernel's
/// cache, sent, then synced before they are shown. A process that dies
/// loses nothing of that (the kernel still writes it); only the machine
/// stopping in the fraction of a millisecond between the send and the
/// sync can take back a post that a peer already holds. Were the next post
/// to reuse its sequence number, that would be a fork.
///
/// So the node records the boot it runs under (the kernel's boot id). A
/// start under another boot than the last means the machine stopped since:
/// our last posts may be only on our peers, and posting waits for a linked
/// peer's clock, as for a lost database (`OwnHistoryGate`), or at most
/// `OwnHistoryGate.patience` seconds with no peer linked. The doubt is
/// saved, so a restart in the meantime does not clear it. A clean stop
/// records that nothing of ours is only on peers (an empty boot), so the
/// next start has no doubt under any boot. Where the boot id cannot be
/// read or recorded, own posts are fsynced before they are sent, as before.
extension Node {
    /// Where Linux gives this boot's id (a fresh random UUID at each boot).
    static let bootIDFile = "/proc/sys/kernel/random/boot_id"
    /// The setting holding the boot id the node last started under.
    static let bootSetting = "last_boot"
    /// The setting (our id) that says: the machine stopped since the last
    /// start, and no peer has said what we posted yet.
    static let ownHistoryUnsureSetting = "own_history_unsure"

    /// This boot's id, or nil where it cannot be read (then nothing is sent before its fsync).
    static func currentBootID(file: String = bootIDFile) -> String? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty || id.count > 64 ? nil : id
    }

    /// A chat node or relay starts, before anything of ours is signed:
    /// the boot is compared and recorded, and posts go before their fsync
    /// where it could be. A boot that cannot be recorded (a full or
    /// read-only disk): our posts are fsynced before they go. One-shot
    /// commands (`device revoke`) do not call this: what they sign is
    /// stored durably, and their start is no run of a node.
    func startRunning() {
        sendsBeforeSync = (try? recordBoot(Self.currentBootID())) ?? false
    }

    /// Compares `boot` with the last start's, saves the doubt when they
    /// differ, and records this one, durably, before anything of ours is
    /// sent unsynced. Returns whether own posts may go before their fsync
    /// (a boot id was read).
    func recordBoot(_ boot: String?) throws -> Bool {
        guard let boot else { return false }
        let last = try store.setting(Self.bootSetting)
        guard last != boot else { return true }
        // A clean stop (empty), an older version or a new database (none): no doubt.
        if let last, !last.isEmpty, !identityIsNew {
            try store.setSetting(Self.ownHistoryUnsureSetting, me.hex)
            ownHistoryUnsure = true
        }
        try store.setSetting(Self.bootSetting, boot)
        try store.sync()
        return true
    }

    /// The fsync after a send failed: what was sent may never reach the
    /// disk (Linux may drop the pages it could not write). From now on our
    /// posts are fsynced before they go, and the next start waits for a
    /// peer's clock, as after the machine stopped (if that can still be
    /// written). This run goes on as it is: it still reads what it wrote.
    func ownSyncFailed() {
        sendsBeforeSync = false
        do { try store.setSetting(Self.ownHistoryUnsureSetting, me.hex) } catch { storeFailures.failed("noting that our history is unsure", error) }
    }

    /// At a clean stop, after the last own envelope: everything of ours is
    /// on the disk, so the next start has nothing to wait for, whatever the
    /// boot. The exit's checkpoint syncs this write with the rest; were it
    /// lost, the old boot stays on record, which only costs a wait.
    func recordCleanStop() throws {
        guard sendsBeforeSync else { return }
        try store.setSetting(Self.bootSetting, "")
    }
}
