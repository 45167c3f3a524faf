import Foundation
import NodeCore
@testable import PeerNode
import Store
import TestSupport
import Testing

/// The boot record behind sending own posts before their fsync
/// (`Units/OwnDurability`); the whole story with processes is in
/// `MachineStopTests` and `DurabilityAndSetupTests/ownPostSentBeforeItsSync`.
@Suite("Own posts before their fsync: the boot record")
struct OwnDurabilityTests {
    static func options(_ dir: TemporaryDirectory) -> Options {
        var options = Options()
        options.dataDirectory = dir.path
        options.discovery = false
        return options
    }

    /// A node as a chat node or relay starts it.
    static func running(_ dir: TemporaryDirectory) throws -> Node {
        let node = try Node(options: options(dir), environment: [:])
        node.ownDurability.startRunning()
        return node
    }

    @Test("this Linux gives a boot id; an unreadable or empty file gives none")
    func bootID() throws {
        #expect(OwnDurability.currentBootID() != nil, "\(OwnDurability.bootIDFile) is readable here")
        #expect(OwnDurability.currentBootID(file: "/nonexistent/boot_id") == nil)
        let dir = TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.file("empty"), contents: Data("\n".utf8)))
        #expect(OwnDurability.currentBootID(file: dir.file("empty")) == nil)
    }

    @Test("a start under the same boot leaves no doubt; under another, our history is unsure until marked known; without a boot id, own posts are fsynced before they are sent")
    func bootRecord() throws {
        let dir = TemporaryDirectory()
        do {
            let node = try Self.running(dir)
            #expect(node.ownDurability.sendsBeforeSync)
            #expect(!node.ownDurability.unsure, "a new identity: nothing of ours can be elsewhere")
            _ = try node.post("one", kind: .text, in: .general)
        }
        // Each start in its own scope: a node holds its directory's lock until it goes.
        let open = { try Self.running(dir) }
        do {
            let node = try open()
            #expect(!node.ownDurability.unsure && node.ownDurability.historyIsKnown, "the same boot: the kernel kept everything")
            try node.store.setSetting(OwnDurability.bootSetting, "an earlier boot")
        }
        do {
            let node = try open()
            #expect(node.ownDurability.unsure && !node.ownDurability.historyIsKnown, "another boot: our last post may be only on peers")
        }
        do {
            let node = try open()
            #expect(node.ownDurability.unsure, "the doubt outlives a restart in the same boot")
            try node.ownDurability.markKnown()
            #expect(!node.ownDurability.unsure && node.ownDurability.historyIsKnown)
        }
        do {
            let node = try open()
            #expect(!node.ownDurability.unsure, "a peer's word is saved")
            // A database from before the boot record (an older version fsynced before sending): no doubt.
            try node.store.removeSetting(OwnDurability.bootSetting)
        }
        do {
            let node = try open()
            #expect(!node.ownDurability.unsure)
            try node.ownDurability.recordCleanStop()
            #expect(try node.store.setting(OwnDurability.bootSetting) == "")
        }
        // After a clean stop, another boot brings no doubt.
        let node = try open()
        #expect(!node.ownDurability.unsure)
        #expect(try node.store.setting(OwnDurability.bootSetting) == OwnDurability.currentBootID())
        #expect(try node.ownDurability.recordBoot(nil) == false, "no boot id: nothing goes before its fsync")
    }

    @Test("an own post stored without its fsync is marked until syncOwn")
    func unsyncedMark() throws {
        let dir = TemporaryDirectory()
        let node = try Self.running(dir)
        try node.store.sync()
        #expect(!node.store.ownUnsynced)
        _ = try node.post("quick", kind: .text, in: .general)
        #expect(node.store.ownUnsynced)
        try node.store.syncOwn()
        #expect(!node.store.ownUnsynced)
        let e = try node.store.envelopes(from: node.me, startingAt: 1, limit: 10)
        #expect(e.count >= 1)
    }

    @Test("a one-shot command's node (device revoke) records no boot and stores what it signs durably")
    func oneShot() throws {
        let dir = TemporaryDirectory()
        let node = try Node(options: Self.options(dir), environment: [:])
        #expect(!node.ownDurability.sendsBeforeSync)
        _ = try node.post("signed by a command", kind: .text, in: .general)
        #expect(!node.store.ownUnsynced)
        #expect(try node.store.setting(OwnDurability.bootSetting) == nil)
    }

    @Test("an fsync that failed after a send: later posts are fsynced before they go, and the next start waits for a peer's clock")
    func failedSync() throws {
        let dir = TemporaryDirectory()
        let open = { try Self.running(dir) }
        do {
            let node = try open()
            _ = try node.post("one", kind: .text, in: .general)
            node.ownDurability.syncFailed()
            #expect(!node.ownDurability.sendsBeforeSync && !node.ownDurability.unsure, "this run still reads what it wrote")
            _ = try node.post("two", kind: .text, in: .general)
            #expect(!node.store.ownUnsynced, "fsynced before it went")
        }
        let node = try open()
        #expect(node.ownDurability.unsure && !node.ownDurability.historyIsKnown)
    }

    @Test("alone after the machine stopped: posting waits patience seconds with no peer linked, at the limit and not a moment less")
    func aloneLongEnough() {
        let p = OwnHistoryGate.patience
        #expect(!OwnHistoryGate.aloneLongEnough(startedAt: 5, now: 5 + p - 0.001, linkedPeers: 0))
        #expect(OwnHistoryGate.aloneLongEnough(startedAt: 5, now: 5 + p, linkedPeers: 0))
        #expect(!OwnHistoryGate.aloneLongEnough(startedAt: 5, now: 5 + 10 * p, linkedPeers: 1), "a linked peer's clock decides instead")
        #expect("\(OwnHistoryGate.Refusal.machineStopped)".contains("no sequence number is used twice"))
    }
}
