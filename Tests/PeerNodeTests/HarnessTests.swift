import Foundation
import Glibc
import TestSupport
import Testing

/// The test harness itself: a process that does not end is named, with
/// what it was doing, instead of holding a run for its whole limit.
@Suite("The test harness: a process that does not end")
struct HarnessTests {
    @Test("a child still running past its deadline is not waited for; its report names its command and every thread's stack (make test installs gdb)")
    func hangReport() async throws {
        let child = try Child("/bin/sleep", ["60"])
        defer { child.signal(SIGKILL) }
        #expect(await child.exited(within: 0.2) == nil, "sleep 60 ended within 0.2 s")
        let report = await child.hangReport("did not end")
        #expect(report.contains("/bin/sleep 60"), "\(report)")
        #expect(report.contains("---- stacks (gdb)") && report.contains("#0 "), "no stacks (is gdb installed? make test installs it): \(report)")
        child.signal(SIGKILL)
        #expect(await child.exited(within: 30) == SIGKILL)
    }
}
