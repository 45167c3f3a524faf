import Foundation
import Glibc
import TestSupport
import Testing

/// An idle node on a laptop: how often its threads wake with nothing to do.
/// Each wake-up of a sleeping thread is a voluntary context switch when it
/// sleeps again, counted by the kernel per thread (`/proc/PID/task/*/status`),
/// over a window the node's own once-a-second turns measure (`/stats`).
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

    /// What a node's threads did in a window of quiet.
    struct Quiet {
        /// The node's once-a-second turns in the window (about its seconds).
        let turns: Int
        /// Voluntary context switches of all its threads, less the one each `/stats` ask cost.
        let wakeUps: Int
        /// CPU seconds, user and system.
        let cpu: Double
        var wakeUpsPerTurn: Double { Double(wakeUps) / Double(max(1, turns)) }
    }

    /// A window of quiet at `node` (its process `pid`), timed by the node's
    /// own clock rather than a sleep here: from one `/stats` answer to the
    /// one that shows `turns` more of its once-a-second turns (`node_ticks`),
    /// asked every half second. nil: no answer, or no /proc entry.
    static func quiet(_ node: NodeProcess, pid: pid_t, turns: Int) async -> Quiet? {
        let ticks = { (event: [String: String]?) in event?["node_ticks"].flatMap { Int($0) } }
        guard let first = ticks(await node.stats()), let w0 = wakeUps(pid), let c0 = cpuSeconds(pid) else { return nil }
        var asks = 0
        var last = first
        let reached = await eventually(60, interval: .milliseconds(500)) {
            if let now = ticks(node.events.value.last { $0["type"] == "stats" }) { last = now }
            guard last < first + turns else { return true }
            asks += 1
            node.send("/stats")
            return false
        }
        guard reached, let w1 = wakeUps(pid), let c1 = cpuSeconds(pid) else { return nil }
        return Quiet(turns: last - first, wakeUps: w1 - w0 - asks, cpu: c1 - c0)
    }

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
        if let quiet = await Self.quiet(b, pid: node, turns: 3) {
            #expect(quiet.cpu < Double(quiet.turns) * 0.1, "bob used \(quiet.cpu) s of CPU in \(quiet.turns) s idle: its loop spins")
            #expect(quiet.wakeUpsPerTurn <= Self.idleWakeUpsPerSecond, "bob woke \(quiet.wakeUpsPerTurn) times a second")
        } else {
            Issue.record("no /stats answer or /proc entry for bob's node (\(node))")
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
        for (name, node) in [("alice (with the page)", a), ("bob", b)] {
            guard let quiet = await Self.quiet(node, pid: node.pid, turns: 4) else {
                Issue.record("\(name): no /stats answer or /proc entry for the node")
                continue
            }
            #expect(quiet.wakeUpsPerTurn <= Self.idleWakeUpsPerSecond, "\(name) woke \(quiet.wakeUpsPerTurn) times a second with nothing to do")
        }
        await a.quit()
        await b.quit()
    }
}
