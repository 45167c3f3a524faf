import NodeCore
import Synchronization
import Testing

@Suite("Where the time goes: stage times (pure)")
struct StageTimesTests {
    @Test("count, total and longest over every run; median and p99 over the last `window` runs, at the window and one past it")
    func window() {
        var t = StageTimes()
        #expect(t.summary(.verify) == nil)
        #expect(t.summaries.isEmpty)
        // 1 µs … window µs: the median is the middle one, p99 near the top.
        for i in 1...StageTimes.window { t.record(.verify, Double(i) * 1e-6) }
        var s = t.summary(.verify)
        #expect(s?.count == UInt64(StageTimes.window))
        #expect(s?.median == Double(StageTimes.window / 2 + 1) * 1e-6)
        #expect(s?.p99 == Double(Int(Double(StageTimes.window) * 0.99) + 1) * 1e-6)
        #expect(s?.maximum == Double(StageTimes.window) * 1e-6)
        // One past the window: the oldest (1 µs) goes, a 1 s run comes; the
        // count and the longest cover every run.
        t.record(.verify, 1)
        s = t.summary(.verify)
        #expect(s?.count == UInt64(StageTimes.window) + 1)
        #expect(s?.maximum == 1)
        #expect(s?.median == Double(StageTimes.window / 2 + 2) * 1e-6)
        #expect(t.summaries.map(\.stage) == [.verify])
    }

    @Test("a negative or non-finite duration (a clock that stepped) counts as 0; stages are listed in the order of a message's path")
    func oddValues() {
        var t = StageTimes()
        t.record(.store, -1)
        t.record(.store, .nan)
        t.record(.store, .infinity)
        t.record(.receive, 2e-6)
        let s = t.summary(.store)
        #expect(s?.count == 3 && s?.total == 0 && s?.maximum == 0 && s?.median == 0 && s?.p99 == 0)
        #expect(t.summaries.map(\.stage) == [.receive, .store])
    }

    @Test("with a stopwatch, a link core times the Noise opening and the decoding of a pushed batch; without one it times nothing")
    func linkCoreTimes() throws {
        var wire = try Wire(2)
        let ticks = Mutex(0.0)
        // Each reading is 1 ms after the one before.
        wire.sides[1].core.stopwatch = { ticks.withLock { $0 += 0.001; return $0 } }
        wire.peer(1, dials: 0)
        wire.tick()
        let noiseBefore = wire.sides[1].core.stages.summary(.noise)?.count ?? 0
        try wire.post(0, count: 1)
        #expect(wire.contiguous(1, wire.key(0)) == 1)
        let stages = wire.sides[1].core.stages
        #expect((stages.summary(.noise)?.count ?? 0) > noiseBefore)
        #expect(stages.summary(.noise)?.median == 0.001)
        #expect(stages.summary(.decode)?.count == 1, "one envelopes message decoded")
        #expect(wire.sides[0].core.stages.summaries.isEmpty, "no stopwatch: nothing timed")
    }
}
