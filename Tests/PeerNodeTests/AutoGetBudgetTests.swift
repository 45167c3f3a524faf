@testable import PeerNode
import Testing

/// `--auto-get`'s budget (`AutoGetBudget`): a member offering file after
/// file cannot make a node fetch without end.
@Suite("--auto-get's hourly budget")
struct AutoGetBudgetTests {
    @Test("64 offers of the largest size in an hour are fetched by themselves and one more is not; larger offers never; room comes back as the hour passes; the refusal is said once an hour")
    func atTheLimit() {
        let size: UInt64 = 10 << 20
        var budget = AutoGetBudget(limit: size)
        #expect(AutoGetBudget.factor == 64 && budget.budget == 64 * size)
        for i in 0..<64 {
            let ok = budget.take(size, now: Double(i))
            #expect(ok, "offer \(i)")
        }
        do { let ok = budget.take(size, now: 100); #expect(!ok, "one past the budget") }
        do { let ok = budget.take(1, now: 100); #expect(!ok, "nothing more, however small, while the hour's budget is spent") }
        do { let ok = budget.take(size + 1, now: 10_000); #expect(!ok, "larger than --auto-get's size: never") }
        do { let ok = budget.tells(now: 100); #expect(ok) }
        do { let ok = budget.tells(now: 100 + AutoGetBudget.window - 1); #expect(!ok, "said once an hour") }
        do { let ok = budget.tells(now: 100 + AutoGetBudget.window); #expect(ok) }
        // The first offer's hour is over at 3,600 s: one offer's room comes back, and only one.
        do { let ok = budget.take(size, now: AutoGetBudget.window); #expect(ok) }
        do { let ok = budget.take(size, now: AutoGetBudget.window); #expect(!ok) }
        do { let ok = budget.take(size, now: AutoGetBudget.window + 1); #expect(ok) }
    }

    @Test("a size so large that 64 of it overflows counts as no budget at all, not a wrapped small one")
    func overflow() {
        var budget = AutoGetBudget(limit: .max / 2)
        #expect(budget.budget == .max)
        do { let ok = budget.take(1 << 40, now: 0); #expect(ok) }
    }
}
