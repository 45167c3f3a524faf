import Foundation
import Glibc
import TestSupport
import Testing

/// An idle node on a laptop: how often its threads wake with nothing to do.
/// Each wake-up of a sleeping thread is a voluntary context switch when it
/// sleeps again, counted by the kernel per thread (`/proc/PID/task/*/status`).
@Suite("An idle node sleeps", .serialized)
struct IdleWakeTests {
    /// The voluntary context switches of every thread of `pid` so far (nil: gone).
    static func wakeUps(_ pid: pid_t) -> Int? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total = 0
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
        }
        return total
    }

    /// The most wake-ups a second an idle node with a link and its page may
    /// have: its own once-a-second turn (the page's token check rides on it), the link's
    /// round-trip probes both ways (2–3 measured). The loop once looked at its
    /// handlers' timeouts every 50 ms, 20 wake-ups a second with nothing due,
    /// and a checkpoint timer woke two more threads every second.
    static let idleWakeUpsPerSecond = 6.0

    /// CPU seconds `pid` has used (user and system, all threads; nil: gone).
    static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("without epoll_pwait2 (an older kernel; a container's filter refusing it with EPERM) the loop waits with epoll_wait: messages flow, and an idle node neither spins nor wakes more")
    func withoutNanosecondWaits() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url], wrapper: [
            "/usr/bin/strace", "-f", "--seccomp-bpf", "-e", "trace=epoll_pwait2", "-e", "inject=epoll_pwait2:error=EPERM", "-o", "/dev/null"])
        #expect(await started(b), "strace comes with make test")
        #expect(await b.wait { $0["type"] == "peer_up" } != nil)
        for text in ["one", "two"] {
            a.send(text)
            #expect(await b.wait { $0["text"] == text } != nil)
            b.send("re " + text)
            #expect(await a.wait { $0["text"] == "re " + text } != nil)
        }
        #expect(await a.wait { $0["type"] == "receipt" } != nil)
        // b's node is the strace's child.
        let node = (try? String(contentsOfFile: "/proc/\(b.pid)/task/\(b.pid)/children", encoding: .utf8))
            .flatMap { $0.split(separator: " ").first.flatMap { pid_t($0) } } ?? b.pid
        let window = 3.0
        let before = (Self.cpuSeconds(node), Self.wakeUps(node))
        try await Task.sleep(for: .seconds(window))
        let after = (Self.cpuSeconds(node), Self.wakeUps(node))
        if let c0 = before.0, let c1 = after.0, let w0 = before.1, let w1 = after.1 {
            #expect(c1 - c0 < window * 0.1, "bob used \(c1 - c0) s of CPU in \(window) s idle: its loop spins")
            #expect(Double(w1 - w0) / window <= Self.idleWakeUpsPerSecond, "bob woke \(Double(w1 - w0) / window) times a second")
        } else {
            Issue.record("no /proc entry for bob's node (\(node))")
        }
        await a.quit()
        await b.quit()
    }

    @Test("two linked nodes, one serving its page, with nothing to do wake a few times a second, not at the loop's 50 ms tick")
    func idlePair() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice", "--web", "127.0.0.1:0"])
        #expect(await started(a))
        let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
        #expect(await started(b))
        #expect(await b.wait { $0["type"] == "peer_up" } != nil)
        a.send("hello")
        #expect(await b.wait { $0["text"] == "hello" } != nil)
        // Once the hello's receipt is back, nothing is left to do: a window of quiet is counted.
        #expect(await a.wait { $0["type"] == "receipt" } != nil)
        let window = 4.0
        let before = (Self.wakeUps(a.pid), Self.wakeUps(b.pid))
        let started = ProcessInfo.processInfo.systemUptime
        try await Task.sleep(for: .seconds(window))
        let elapsed = ProcessInfo.processInfo.systemUptime - started
        let after = (Self.wakeUps(a.pid), Self.wakeUps(b.pid))
        for (name, first, last) in [("alice (with the page)", before.0, after.0), ("bob", before.1, after.1)] {
            guard let first, let last else {
                Issue.record("\(name): no /proc entry for the node")
                continue
            }
            let rate = Double(last - first) / elapsed
            #expect(rate <= Self.idleWakeUpsPerSecond, "\(name) woke \(rate) times a second with nothing to do")
        }
        await a.quit()
        await b.quit()
    }
}
