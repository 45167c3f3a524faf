import Crypto
import NodeCore
import Testing

@Suite("Own-history gate (pure)")
struct OwnHistoryGateTests {
    let p = OwnHistoryGate.patience

    @Test("an identity with history elsewhere waits for a linked peer's clock; then the database knows it, and the waiting nick goes once")
    func unknownHistory() throws {
        let bob = try SigningKey.generate().publicKey
        var gate = OwnHistoryGate(pendingNick: "ann")
        #expect(gate.refusal(known: false, claims: [:], ours: 0, now: 0) == .historyUnknown)
        #expect(gate.tick(known: false, claims: [:], ours: 0, now: 0).isEmpty, "nobody linked: nothing known, the nick waits")
        #expect(gate.pendingNick == "ann")
        // Bob declares 3 of ours: still coming.
        #expect(gate.tick(known: false, claims: [bob: 3], ours: 0, now: 1).isEmpty)
        #expect(gate.refusal(known: false, claims: [bob: 3], ours: 0, now: 1) == .stillComing(missing: 3))
        #expect("\(OwnHistoryGate.Refusal.stillComing(missing: 3))".contains("coming back"))
        // They arrived.
        #expect(gate.tick(known: false, claims: [bob: 3], ours: 3, now: 2) == [.historyKnown, .postNick("ann")])
        #expect(gate.tick(known: true, claims: [bob: 3], ours: 3, now: 3).isEmpty, "once")
        #expect(gate.refusal(known: true, claims: [:], ours: 3, now: 4) == nil)
    }

    @Test("a known history posts with nobody linked; the nick waits for a linked peer anyway, unless the person posts first")
    func knownHistory() throws {
        var gate = OwnHistoryGate(pendingNick: "ann")
        #expect(gate.refusal(known: true, claims: [:], ours: 7, now: 0) == nil)
        #expect(gate.tick(known: true, claims: [:], ours: 7, now: 0).isEmpty)
        #expect(gate.takePendingNick() == "ann" && gate.takePendingNick() == nil)
    }

    @Test("a claim that brings nothing stops posts for patience, at the limit and not a moment past; each liar is reported once")
    func liars() throws {
        let liar = try SigningKey.generate().publicKey, other = try SigningKey.generate().publicKey
        var gate = OwnHistoryGate()
        let claims = [liar: UInt64(1_000_000), other: 2]
        #expect(gate.tick(known: true, claims: claims, ours: 2, now: 10).isEmpty)
        #expect(gate.refusal(known: true, claims: claims, ours: 2, now: 10 + p - 0.001) == .stillComing(missing: 999_998))
        #expect(gate.tick(known: true, claims: claims, ours: 2, now: 10 + p) == [.disbelieved(liar, missing: 999_998)])
        #expect(gate.refusal(known: true, claims: claims, ours: 2, now: 10 + p) == nil)
        #expect(gate.tick(known: true, claims: claims, ours: 2, now: 11 + p).isEmpty, "reported once")
    }

    @Test("after the machine stopped: alone, posts are refused as machineStopped until patience from the start, then posting goes on once; a linked peer's clock decides before that")
    func machineStopped() throws {
        let bob = try SigningKey.generate().publicKey
        var gate = OwnHistoryGate(machineStoppedAt: 100)
        #expect(gate.refusal(known: false, claims: [:], ours: 4, now: 100) == .machineStopped)
        #expect(gate.tick(known: false, claims: [:], ours: 4, now: 100 + p - 0.001).isEmpty)
        #expect(gate.tick(known: false, claims: [:], ours: 4, now: 100 + p) == [.waitedAlone])
        #expect(gate.tick(known: true, claims: [:], ours: 4, now: 101 + p).isEmpty, "once known, nothing more")
        // With a peer linked in time, its clock decides, as after a lost database.
        var linked = OwnHistoryGate(machineStoppedAt: 100)
        #expect(linked.refusal(known: false, claims: [bob: 5], ours: 4, now: 101) == .stillComing(missing: 1))
        #expect(linked.tick(known: false, claims: [bob: 4], ours: 4, now: 102) == [.historyKnown])
    }
}
