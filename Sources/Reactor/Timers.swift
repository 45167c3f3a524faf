/// A timer of the event loop (`EventLoop.every`, `after`), for `cancel`.
public struct TimerID: Hashable, Sendable {
    let number: UInt64
}

/// The loop's timers: few (a node has a handful), so a list kept in order
/// of when each is due. Runs on the loop thread only.
struct Timers {
    private struct Entry {
        let id: TimerID
        var due: Double
        let repeating: Double?
        let body: () -> Void
    }

    private var entries: [Entry] = []
    private var next: UInt64 = 1

    var nextDue: Double? { entries.first?.due }

    mutating func add(due: Double, repeating: Double?, _ body: @escaping () -> Void) -> TimerID {
        let id = TimerID(number: next)
        next += 1
        insert(Entry(id: id, due: due, repeating: repeating, body: body))
        return id
    }

    mutating func cancel(_ id: TimerID) {
        entries.removeAll { $0.id == id }
    }

    /// The bodies due at `now`, in order; repeating ones are due again one
    /// interval later (from now if they fell behind, so a stall does not
    /// make them fire in a burst).
    mutating func takeDue(now: Double) -> [() -> Void] {
        var bodies: [() -> Void] = []
        while let first = entries.first, first.due <= now {
            entries.removeFirst()
            bodies.append(first.body)
            if let interval = first.repeating {
                var again = first
                again.due = max(first.due + interval, now + interval / 2)
                insert(again)
            }
        }
        return bodies
    }

    private mutating func insert(_ entry: Entry) {
        let at = entries.firstIndex { $0.due > entry.due } ?? entries.endIndex
        entries.insert(entry, at: at)
    }
}
