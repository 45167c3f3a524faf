import Foundation
import Glibc
import TestSupport
import Testing

// The node process every PeerNode test drives, and the waits on it that
// several suites share (general waits are TestSupport's).

/// A peernode process in --json mode, its events collected as they come.
final class NodeProcess: @unchecked Sendable {
    let child: Child
    let events: Locked<[[String: String]]>
    /// When each event arrived (monotonic seconds), at the same index.
    let arrivals: Locked<[Double]>
    let dir: String

    /// The last `count` events, each with how long ago it arrived: for failure messages.
    func recent(_ count: Int) -> String {
        let now = ProcessInfo.processInfo.systemUptime
        let (all, times) = events.withLock { ($0, arrivals.value) }
        return zip(all, times).suffix(count).map { "\n    \(String(format: "%.1f", now - $1)) s ago: \($0)" }.joined()
    }

    /// Without `discovery`, the node finds no one by multicast (links come from
    /// --peer only), so tests running side by side cannot meet by accident.
    /// `namespace` runs it inside a lab host (`ip netns exec`); `wrapper`
    /// under another program (its path and arguments: strace, say);
    /// `environment` added to this process's own. Files it fetches without
    /// a folder named go to `downloads` inside `dir` unless `environment`
    /// names a download folder: never into the `~/Downloads` of whoever
    /// runs the tests (a page test once left a picture there each run).
    init(dir: String, _ arguments: [String], discovery: Bool = false, namespace: String? = nil, listen: String = "127.0.0.1:0",
         wrapper: [String] = [], environment: [String: String] = [:]) throws {
        self.dir = dir
        let own = ["--data-dir", dir, "--json", "--listen", listen] + (discovery ? [] : ["--no-discovery"]) + arguments
        var (executable, all) = namespace.map { (NetLab.ip, ["netns", "exec", $0, PeerNodeProcess.binary] + own) } ?? (PeerNodeProcess.binary, own)
        if let program = wrapper.first { (executable, all) = (program, Array(wrapper.dropFirst()) + [executable] + all) }
        let events = Locked<[[String: String]]>([]), arrivals = Locked<[Double]>([])
        let env = ProcessInfo.processInfo.environment.merging(["XDG_DOWNLOAD_DIR": dir + "/" + Self.downloads]) { $1 }
            .merging(environment) { $1 }
        child = try Child(executable, all, environment: env, stdin: .pipe, stdout: .pipe, stderr: .pipe, onLine: collectingJSON(into: events, arrivals: arrivals))
        self.events = events
        self.arrivals = arrivals
    }

    /// The folder inside the data directory a test node saves fetched files to by default.
    static let downloads = "downloads"

    var pid: pid_t { child.pid }

    /// What the node logged on stderr (plain lines, not events): for failure messages.
    var log: String { child.errors }

    func send(_ line: String) { child.send(line + "\n") }

    /// Waits until an event matches; returns it (nil after `timeout`).
    @discardableResult
    func wait(timeout: Double = 30, _ match: @escaping ([String: String]) -> Bool) async -> [String: String]? {
        await eventuallyValue(timeout) { events.withLock { $0.first(where: match) } }
    }

    var ready: [String: String]? { events.withLock { $0.first { $0["type"] == "ready" } } }
    var id: String { ready?["id"] ?? "" }
    var url: String { "ws://" + (ready?["listen"] ?? "") }

    /// The sequence number of the first message shown with `text`.
    func sequence(of text: String) -> Int? {
        events.withLock { $0.first { $0["text"] == text }?["seq"].flatMap { Int($0) } }
    }

    /// The counters `/stats` gives now (nil if no answer came).
    func stats() async -> [String: String]? {
        let mark = events.value.count
        send("/stats")
        return await eventuallyValue(30) { self.events.withLock { $0.dropFirst(mark).first { $0["type"] == "stats" } } }
    }

    func messages(from author: String) -> [String] {
        events.withLock { $0.filter { $0["type"] == "message" && $0["kind"] != "dm" && $0["author"] == author }.compactMap { $0["text"] } }
    }

    /// Seconds a node has to end after its input ends: it waits at most
    /// `NetworkNode.closeGrace` (2 s) for its links, then folds its WAL.
    static let quitDeadline = 60.0

    /// Ends the node as a user does (end of input); returns its exit status.
    /// A node still running `quitDeadline` later fails the test with its
    /// threads' stacks and its log, and is killed.
    @discardableResult
    func quit() async -> Int32 {
        child.closeInput()
        if let status = await child.exited(within: Self.quitDeadline) { return status }
        let report = await child.hangReport("did not end within \(Int(Self.quitDeadline)) s of its input's end")
        Issue.record("\(report)log: \(log.suffix(3_000))")
        child.signal(SIGKILL)
        return await child.exited()
    }

    func kill() async {
        child.signal(SIGKILL)
        await child.exited()
    }
}

/// Whether the node reported ready within 60 s; if not (or it ended
/// first), an issue says how it ended and what it logged.
func started(_ node: NodeProcess) async -> Bool {
    let ready = await eventuallyValue(60) { () -> Bool? in
        if node.ready != nil { return true }
        return node.child.isRunning ? nil : false
    }
    if ready == true { return true }
    Issue.record("""
        not ready: \(node.child.exitStatus.map { "ended with status \($0)" } ?? "still running"); \
        events: \(node.events.value.suffix(3)); log: \(node.log.suffix(1_500))
        """)
    return false
}

func linked(_ node: NodeProcess, to other: NodeProcess) async -> Bool {
    await node.wait { $0["type"] == "peer_up" && $0["id"] == other.id } != nil
}

/// Alice and Bob (Bob dialled Alice), both up and linked each way; `dirs`
/// holds their data directories and `extra` more for the caller.
func aliceAndBob(extra: Int = 0) async throws -> ([TemporaryDirectory], NodeProcess, NodeProcess) {
    let dirs = (0..<(2 + extra)).map { _ in TemporaryDirectory() }
    let a = try NodeProcess(dir: dirs[0].path, ["--nick", "alice"])
    #expect(await started(a))
    let b = try NodeProcess(dir: dirs[1].path, ["--nick", "bob", "--peer", a.url])
    #expect(await started(b))
    #expect(await linked(a, to: b))
    #expect(await linked(b, to: a))
    return (dirs, a, b)
}

/// Alice, Bob and Carol, linked A–B–C (Carol reaches Alice only through Bob), all up.
func chainOfThree() async throws -> ([TemporaryDirectory], NodeProcess, NodeProcess, NodeProcess) {
    let (dirs, a, b) = try await aliceAndBob(extra: 1)
    let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--peer", b.url])
    #expect(await started(c))
    #expect(await linked(c, to: b))
    return (dirs, a, b, c)
}

/// Asks `node` for /stats until `counter` reads `value`; records an issue
/// (with the node's last counters and log) if it does not within `timeout`.
func counterReaches(_ node: NodeProcess, _ counter: String, _ value: String, timeout: Double = 20) async -> Bool {
    let deadline = Deadline(timeout)
    while !deadline.passed {
        node.send("/stats")
        if await node.wait(timeout: 1, { $0["type"] == "stats" && $0[counter] == value }) != nil { return true }
    }
    Issue.record("\(counter) never reached \(value): \(node.events.value.last { $0["type"] == "stats" } ?? [:])\n\(node.log.suffix(2_000))")
    return false
}

/// Waits until `node`'s /stats shows `counter` at `minimum` or more.
func counterAtLeast(_ node: NodeProcess, _ counter: String, _ minimum: Int, timeout: Double = 20) async -> Bool {
    let deadline = Deadline(timeout)
    while !deadline.passed {
        node.send("/stats")
        if await node.wait(timeout: 1, { $0["type"] == "stats" && Int($0[counter] ?? "0") ?? 0 >= minimum }) != nil { return true }
    }
    Issue.record("\(counter) never reached \(minimum): \(node.events.value.last { $0["type"] == "stats" } ?? [:])\n\(node.log.suffix(2_000))")
    return false
}

/// Waits until `node`'s /sync reports something missing: a claim a peer declared has been read.
func claimArrived(_ node: NodeProcess) async -> Bool {
    let deadline = Deadline(40)
    while !deadline.passed {
        let before = node.events.value.count
        node.send("/sync")
        let answer = await eventuallyValue(2) { node.events.value.dropFirst(before).last { $0["type"] == "sync" } }
        if answer?["complete"] == "no" { return true }
    }
    Issue.record("no claim seen; last /sync: \(node.events.value.last { $0["type"] == "sync" } ?? [:])\n\(node.log.suffix(1_500))")
    return false
}

/// All `peer_up` ids a node has reported.
func peersUp(_ node: NodeProcess) -> Set<String> {
    Set(node.events.value.filter { $0["type"] == "peer_up" }.compactMap { $0["id"] })
}

/// Message ids (with how often each was reported) at a node.
func messageCounts(_ node: NodeProcess) -> [String: Int] {
    var out: [String: Int] = [:]
    for e in node.events.value where e["type"] == "message" { out[e["id"] ?? "", default: 0] += 1 }
    return out
}

/// Posts `text` until the node takes it: each try waits for the node's
/// answer (a refusal, or the post shown as ours) before the next, so a
/// slow answer is never taken for a quiet success. Returns whether it was
/// posted and the refusals on the way.
func postWhenAllowed(_ node: NodeProcess, _ text: String, tries: Int = 50) async -> (posted: Bool, refusals: [[String: String]]) {
    var refusals: [[String: String]] = []
    for _ in 0..<tries {
        let before = node.events.value.count
        node.send(text)
        let answer = await eventuallyValue(20) { () -> [String: String]? in
            node.events.value.dropFirst(before).first {
                $0["type"] == "error" || ($0["type"] == "message" && $0["author"] == node.id && $0["text"] == text)
            }
        }
        guard let answer else { break }
        if answer["type"] == "message" { return (true, refusals) }
        refusals.append(answer)
        // Try again once the node has something new to say (history
        // arriving, a peer's clock), or after a second of silence.
        let seen = node.events.value.count
        _ = await eventually(1) { node.events.value.count > seen }
    }
    return (false, refusals)
}
