import Foundation
import TestSupport
import Testing

@Suite("Catch-up larger than the send queue", .serialized)
struct CatchUpTests {
    @Test("a new peer catches up on 42 MB of history (more than the 8 MiB link send queue) in one link: paced by the socket, never closed for it")
    func largeCatchUp() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let count = 700
        let filler = String(repeating: "x", count: 60_000)
        for i in 0..<count { a.send("\(i) \(filler)") }
        let deadline = Deadline(120)
        while a.messages(from: a.id).count < count, !deadline.passed { try await Task.sleep(nanoseconds: 100_000_000) }
        #expect(a.messages(from: a.id).count == count)

        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        let caughtUp = Deadline(120)
        while b.messages(from: a.id).count < count, !caughtUp.passed { try await Task.sleep(nanoseconds: 100_000_000) }
        #expect(b.messages(from: a.id).count == count)
        // One link did it: B never saw the link drop and come back.
        #expect(b.events.value.filter { $0["type"] == "peer_up" }.count == 1, "\(b.events.value.filter { $0["type"] == "peer_up" || $0["type"] == "peer_down" })")
        await a.quit(); await b.quit()
    }
}
