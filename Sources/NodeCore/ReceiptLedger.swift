import Crypto
import Gossip

/// Receipts both ways, as a pure ledger: what this node owes others for
/// what it showed them (posted as receipt messages, at most one per room
/// and state every `interval`), and how far peers say our own messages
/// have got (`stored`, `delivered`, `read`). The shell posts what `due`
/// returns and turns the ranges `stored`/`arrived` return into events.
public struct ReceiptLedger: Sendable {
    /// Seconds between two receipts for one room.
    public static let interval = 2.0

    /// Where our last message in a room has got to, as chat apps show it.
    public enum OwnMessageState: String, Sendable {
        /// Stored here only.
        case local = "…"
        /// A linked peer has it (its clock says so, or it sent a receipt).
        case stored = "✓"
        /// Every linked member of the room has shown it.
        case delivered = "✓✓"
        /// Every linked member of the room has read it.
        case read = "read"
    }

    public let me: PublicKey
    /// Read receipts go out only while this is on (`/set receipts`).
    public var sendsRead: Bool
    /// Room → state → author → highest sequence shown (or read) here.
    private var owed: [RoomID: [Receipt.State: [PublicKey: UInt64]]] = [:]
    private var lastSent: [RoomID: Double] = [:]
    private struct Acknowledgement: Hashable {
        let peer: PublicKey
        let room: RoomID
        let state: Receipt.State
    }
    /// What peers acknowledged of our messages: the highest sequence per peer, room and state.
    private var acknowledged: [Acknowledgement: UInt64] = [:]
    /// Our own messages up to here are stored by at least one peer.
    public private(set) var storedThrough: UInt64 = 0
    /// The sequence of our last text or action per room, this session.
    private var lastOwnPost: [RoomID: UInt64] = [:]

    public init(me: PublicKey, sendsRead: Bool = false) {
        self.me = me
        self.sendsRead = sendsRead
    }

    // MARK: what we owe

    /// Someone else's message (`isMessage`: a text or an action) was shown,
    /// in the room the person has open when `current`: owe its author a
    /// delivered receipt, and a read one if read receipts are on.
    public mutating func shown(author: PublicKey, sequence: UInt64, in room: RoomID, isMessage: Bool, current: Bool) {
        guard author != me, isMessage else { return }
        var debts = owed[room, default: [:]]
        debts[.delivered, default: [:]][author] = max(debts[.delivered]?[author] ?? 0, sequence)
        if sendsRead, current {
            debts[.read, default: [:]][author] = max(debts[.read]?[author] ?? 0, sequence)
        }
        owed[room] = debts
    }

    /// A person read a whole room (the page showed it, docs/API.md `read`):
    /// owe each author a read receipt up to `marks`, if read receipts are on.
    public mutating func read(_ marks: [PublicKey: UInt64], in room: RoomID) {
        guard sendsRead else { return }
        var debts = owed[room, default: [:]]
        for (author, sequence) in marks where author != me {
            debts[.read, default: [:]][author] = max(debts[.read]?[author] ?? 0, sequence)
        }
        if !debts.isEmpty { owed[room] = debts }
    }

    /// The receipts to post now: for each room whose interval has passed,
    /// delivered then read, at most `Receipt.maximumMarks` authors each
    /// (more in further receipts), authors in order. What is returned is no
    /// longer owed.
    public mutating func due(now: Double) -> [(room: RoomID, receipt: Receipt)] {
        var out: [(room: RoomID, receipt: Receipt)] = []
        for room in owed.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        where now - (lastSent[room] ?? -.infinity) >= Self.interval {
            let debts = owed.removeValue(forKey: room) ?? [:]
            lastSent[room] = now
            for state in [Receipt.State.delivered, .read] {
                let marks = (debts[state] ?? [:]).map { Dependency(author: $0.key, sequence: $0.value) }.sorted { $0.author < $1.author }
                for start in stride(from: 0, to: marks.count, by: Receipt.maximumMarks) {
                    out.append((room, Receipt(state: state, marks: Array(marks[start..<min(marks.count, start + Receipt.maximumMarks)]))))
                }
            }
        }
        return out
    }

    // MARK: what peers say of ours

    /// We posted our text or action `sequence` in `room`.
    public mutating func posted(_ sequence: UInt64, in room: RoomID) {
        lastOwnPost[room] = sequence
    }

    /// A peer stored our messages up to `sequence`: the ones no peer had
    /// stored before (the first peer to store each gives it its event).
    public mutating func stored(through sequence: UInt64) -> ClosedRange<UInt64>? {
        guard sequence > storedThrough else { return nil }
        defer { storedThrough = sequence }
        return storedThrough + 1...sequence
    }

    /// A receipt from `peer` in `room`: the state it gives and our
    /// sequences in that room it newly covers (nil: nothing new).
    public mutating func arrived(_ receipt: Receipt, from peer: PublicKey, in room: RoomID) -> (state: Receipt.State, ours: ClosedRange<UInt64>)? {
        guard peer != me, let mark = receipt.marks.first(where: { $0.author == me }) else { return nil }
        let key = Acknowledgement(peer: peer, room: room, state: receipt.state)
        let before = acknowledged[key] ?? 0
        guard mark.sequence > before else { return nil }
        acknowledged[key] = mark.sequence
        return (receipt.state, before + 1...mark.sequence)
    }

    /// How far our message `sequence` in `room` has got, by the best any
    /// peer said this session: read, delivered, stored, or here only (what a
    /// page loaded again shows beside each of our messages).
    public func reached(_ sequence: UInt64, in room: RoomID) -> Receipt.State? {
        func any(_ state: Receipt.State) -> Bool { acknowledged.contains { $0.key.room == room && $0.key.state == state && $0.value >= sequence } }
        return any(.read) ? .read : any(.delivered) ? .delivered : nil
    }

    /// Where our last message in `room` has got to (nil: none posted this
    /// session). `claims`: each linked peer's declared clock entry for us.
    /// Members are the linked peers that have sent receipts in the room.
    public func state(in room: RoomID, linked: Set<PublicKey>, claims: [PublicKey: UInt64]) -> OwnMessageState? {
        guard let sequence = lastOwnPost[room] else { return nil }
        let members = Set(acknowledged.keys.filter { $0.room == room && linked.contains($0.peer) }.map(\.peer))
        func all(_ state: Receipt.State) -> Bool {
            !members.isEmpty && members.allSatisfy { (acknowledged[Acknowledgement(peer: $0, room: room, state: state)] ?? 0) >= sequence }
        }
        if all(.read) { return .read }
        if all(.delivered) { return .delivered }
        let declared = claims.values.contains { $0 >= sequence }
        let acknowledgedAny = acknowledged.contains { $0.key.room == room && $0.value >= sequence }
        return declared || acknowledgedAny || storedThrough >= sequence ? .stored : .local
    }
}
