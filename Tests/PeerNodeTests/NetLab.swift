import Foundation
import TestSupport
import Testing

/// `scripts/netlab` from the tests: a lab of hosts (network namespaces) with
/// a prefix of its own, torn down when the test ends (and before it starts,
/// should an earlier run have died half-way).
final class NetLab: @unchecked Sendable {
    static var ip: String {
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"
    }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/netlab").path
    }

    let prefix: String
    let hosts: Int

    /// Builds the lab, or throws with the script's reason (not root, no `ip`...).
    init(hosts: Int) async throws {
        prefix = "pn\(getpid() % 100_000)x"
        self.hosts = hosts
        try await run(["up", String(hosts)])
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    @discardableResult
    func run(_ arguments: [String]) async throws -> String {
        try check(arguments, try await runToEnd("/bin/bash", [Self.script] + arguments, environment: environment))
    }

    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["NETLAB_PREFIX"] = prefix
        return environment
    }

    private func check(_ arguments: [String], _ result: Finished) throws -> String {
        guard result.status == 0 else {
            throw Failure(description: "scripts/netlab \(arguments.joined(separator: " ")) failed: \(result.stderr)\(result.stdout)")
        }
        return result.stdout
    }

    func namespace(_ host: Int) -> String { "\(prefix)\(host)" }
    func address(_ host: Int) -> String { "10.213.0.\(host)" }
    func cut(_ host: Int) async throws { try await run(["cut", String(host)]) }
    func restore(_ host: Int) async throws { try await run(["restore", String(host)]) }
    func interfaceDown(_ host: Int) async throws { try await run(["ifdown", String(host)]) }
    func interfaceUp(_ host: Int) async throws { try await run(["ifup", String(host)]) }

    /// A node on lab host `host`, with discovery on.
    func node(_ host: Int, dir: String, _ arguments: [String] = []) throws -> NodeProcess {
        try NodeProcess(dir: dir, arguments, discovery: true, namespace: namespace(host), listen: "0.0.0.0:7733")
    }

    /// Quick (a few `ip` commands), and called where no `await` can be.
    func tearDown() {
        _ = try? runToEndBlocking("/bin/bash", [Self.script, "down"], environment: environment)
    }

    deinit { tearDown() }
}
