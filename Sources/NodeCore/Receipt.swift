import Crypto
import Gossip

/// The body of a receipt envelope (kind `receipt`), sealed with the room's key
/// like any room message (docs/PROTOCOL.md §13):
///
///     state 1 (1 delivered, 2 read) ‖ count 1 ‖ count × (author 32 ‖ sequence 8, big-endian)
///
/// "I have delivered (or read) every message of these authors in this room
/// up to these sequence numbers."
public struct Receipt: Equatable, Sendable {
    public enum State: UInt8, Sendable {
        case delivered = 1, read = 2
        public var name: String { self == .delivered ? "delivered" : "read" }
    }

    /// Most authors one receipt names (more go in the next one).
    public static let maximumMarks = 64

    public let state: State
    public let marks: [Dependency]

    public init(state: State, marks: [Dependency]) {
        self.state = state
        self.marks = marks
    }

    public var encoded: [UInt8] {
        var out: [UInt8] = [state.rawValue, UInt8(marks.count)]
        for m in marks {
            out += m.author.bytes
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: m.sequence >> UInt64(shift))) }
        }
        return out
    }

    /// Nil for anything that is not exactly this layout.
    public static func decode(_ bytes: [UInt8]) -> Receipt? {
        guard bytes.count >= 2, let state = State(rawValue: bytes[0]) else { return nil }
        let count = Int(bytes[1])
        guard count <= maximumMarks, bytes.count == 2 + count * 40 else { return nil }
        var marks: [Dependency] = []
        for i in 0..<count {
            let start = 2 + i * 40
            guard let author = try? PublicKey(bytes: bytes[start..<start + 32]) else { return nil }
            let sequence = bytes[start + 32..<start + 40].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            // Bounded like every sequence from the network (docs/PROTOCOL.md §8).
            guard sequence <= Envelope.maximumSequence else { return nil }
            marks.append(Dependency(author: author, sequence: sequence))
        }
        return Receipt(state: state, marks: marks)
    }
}
