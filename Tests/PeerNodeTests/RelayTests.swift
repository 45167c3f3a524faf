import Crypto
import Foundation
import Glibc
import TestSupport
import Testing

/// A `peernode relay` process; its JSON log lines are collected.
final class RelayProcess: @unchecked Sendable {
    let child: Child
    let log: Locked<[[String: String]]>

    convenience init(dir: String, _ arguments: [String] = []) throws {
        try self.init(commandLine: ["relay", "--data-dir", dir, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--no-discovery",
                                    "--log-format", "json"] + arguments)
    }

    /// The relay with exactly these arguments (its log must be JSON to be read).
    init(commandLine arguments: [String]) throws {
        // The log is stderr.
        let log = Locked<[[String: String]]>([])
        child = try Child(PeerNodeProcess.binary, arguments, stdout: .null, stderr: .pipe, onLine: collectingJSON(into: log))
        self.log = log
    }

    func ready() async -> [String: String]? {
        await eventuallyValue { self.log.value.first { $0["msg"] == "relay ready" } }
    }

    func terminate() async -> Int32 {
        child.signal(SIGTERM)
        return await child.exited()
    }
}


/// A plain HTTP/1.1 GET over a socket: status and body.
func httpGet(_ hostPort: String, _ path: String) -> (status: Int, body: String)? {
    guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else { return nil }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, String(hostPort[..<colon]), &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: \(hostPort)\r\nConnection: close\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        response += buffer[0..<n]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let headEnd = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else { return nil }
    return (status, String(text[headEnd.upperBound...]))
}

/// A relay's /metrics at `address`, parsed (`parseMetrics`); nil if it did not answer or parse.
func fetchMetrics(_ address: String) -> [String: Double]? {
    httpGet(address, "/metrics").flatMap { parseMetrics($0.body) }
}

/// Prometheus text: every sample line as name{labels} → value; nil if any line does not parse.
func parseMetrics(_ text: String) -> [String: Double]? {
    var out: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        guard parts.count == 2, let value = Double(parts[1]), value.isFinite, parts[0].hasPrefix("peernode_") else { return nil }
        out[String(parts[0])] = value
    }
    return out
}

@Suite("The headless relay", .serialized)
struct RelayTests {
    @Test("two nodes that never link directly chat through a relay; /healthz and /metrics parse; SIGTERM exits 0 with nothing lost")
    func relay() async throws {
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        var relay = try RelayProcess(dir: dirs[0].path)
        let ready = try #require(await relay.ready())
        let listen = try #require(ready["listen"])
        // --max-links 0: the two do not take up each other's addresses from the relay's
        // overlay (on one host they could; across LANs they could not), so all goes through it.
        let a = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--max-links", "0", "--peer", "ws://" + listen])
        let c = try NodeProcess(dir: dirs[2].path, ["--nick", "carol", "--max-links", "0", "--peer", "ws://" + listen])
        #expect(await started(a))
        #expect(await started(c))
        #expect(await a.wait { $0["type"] == "peer_up" && $0["id"] == ready["id"] } != nil)
        #expect(await c.wait { $0["type"] == "peer_up" && $0["id"] == ready["id"] } != nil)
        for i in 1...20 { a.send("via relay \(i)") }
        if await c.wait({ $0["text"] == "via relay 20" }) == nil {
            Issue.record("carol never got alice's 20 messages through the relay: \(await MessageLifeTests.state([a, c], relay))")
        }
        #expect(c.messages(from: a.id) == (1...20).map { "via relay \($0)" })
        a.send("/msg \(c.id) only for carol")
        #expect(await c.wait { $0["kind"] == "dm" && $0["text"] == "only for carol" } != nil)
        // The two nodes never linked to each other.
        #expect(!a.events.value.contains { $0["type"] == "peer_up" && $0["id"] == c.id })
        // The log names each link's version and cipher, as agreed.
        let ups = relay.log.value.filter { $0["msg"] == "link up" }
        let agreed = NoiseCipher.aesGCM.isAvailable ? "peernode.10.aesgcm" : "peernode.10"
        #expect(ups.count == 2 && ups.allSatisfy { $0["link"] == agreed }, "\(ups)")

        // The link port answers no plain GET (issue 13, finding 8): only the metrics address does.
        #expect(httpGet(listen, "/healthz")?.status != 200)
        #expect(httpGet(listen, "/metrics")?.status != 200)
        let metricsAddress = try #require(ready["metrics"])
        #expect(metricsAddress.hasPrefix("127.0.0.1:"))
        let health = try #require(httpGet(metricsAddress, "/healthz"))
        #expect(health.status == 200)
        let status = try #require(try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: Any])
        #expect(status["status"] as? String == "ok" && status["links"] as? Int == 2)
        let stored = try #require(status["envelopes"] as? Int)
        #expect(stored >= 23, "20 posts, a DM and two nicks")
        let metricsResponse = try #require(httpGet(metricsAddress, "/metrics"))
        #expect(metricsResponse.status == 200)
        let metrics = try #require(parseMetrics(metricsResponse.body), "\(metricsResponse.body)")
        #expect(metrics["peernode_links"] == 2)
        // Both read the same count; a receipt may still come between the two reads, so it lies between them.
        let storedAfter = try #require(httpGet(metricsAddress, "/healthz").flatMap {
            try JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any]
        }?["envelopes"] as? Int)
        #expect((Double(stored)...Double(storedAfter)).contains(metrics["peernode_envelopes_stored"] ?? -1), "\(stored)…\(storedAfter)")
        // Where the time goes: the relay verified and stored what it relayed.
        #expect((metrics["peernode_stage_seconds_count{stage=\"verify\"}"] ?? 0) >= 1)
        #expect((metrics["peernode_stage_seconds_count{stage=\"store\"}"] ?? 0) >= 1)
        // Its COMMITs ran on the store's committer thread, the loop forwarding meanwhile.
        #expect((metrics["peernode_stage_seconds_count{stage=\"commit\"}"] ?? 0) >= 1)
        let verifyMedian = try #require(metrics["peernode_stage_seconds{stage=\"verify\",quantile=\"0.5\"}"])
        #expect(verifyMedian > 0 && verifyMedian < 1)
        #expect((metrics["peernode_envelopes_relayed_total"] ?? 0) >= 21)
        #expect((metrics["peernode_bytes_received_total"] ?? 0) > 0 && (metrics["peernode_bytes_sent_total"] ?? 0) > 0)
        // Peer ids stay out of the labels unless --metrics-peer-labels asks (see maxStore).
        #expect(metrics["peernode_sync_lag_envelopes"] != nil)
        #expect(!metricsResponse.body.contains("peer=") && !metricsResponse.body.contains(c.id))
        #expect(metrics["peernode_drops_total{reason=\"invalid_envelope\"}"] == 0)
        #expect(httpGet(metricsAddress, "/nothing-here")?.status == 404)

        // SIGTERM: exit 0, links closed (the nodes see peer_down), nothing lost.
        #expect(await relay.terminate() == 0)
        #expect(await a.wait { $0["type"] == "peer_down" && $0["id"] == ready["id"] } != nil)
        #expect(relay.log.value.contains { $0["msg"] == "stopped" }, "log ends: \(relay.log.value.suffix(4)); ended: \(relay.child.outputEnded)")
        relay = try RelayProcess(dir: dirs[0].path)
        let again = try #require(await relay.ready())
        let metrics2 = try #require(again["metrics"])
        let health2 = try #require(httpGet(metrics2, "/healthz"))
        let status2 = try #require(try JSONSerialization.jsonObject(with: Data(health2.body.utf8)) as? [String: Any])
        // Nothing lost: at least what it said it held (more may have come before the SIGTERM).
        #expect((status2["envelopes"] as? Int ?? 0) >= storedAfter, "\(status2) after \(storedAfter)")
        _ = await relay.terminate()
        await a.quit(); await c.quit()
        // A relay reads no message by its id: it keeps no index of them; a node does (docs/DECISIONS.md).
        func idIndexes(_ dir: TemporaryDirectory) async throws -> String {
            try await runToEnd("/usr/bin/sqlite3", [dir.file("peernode.db"), "SELECT count(*) FROM sqlite_schema WHERE name = 'envelopes_by_id'"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try await idIndexes(dirs[0]) == "0")
        #expect(try await idIndexes(dirs[1]) == "1")
    }

    @Test("a relay at its --max-store refuses envelopes from others with a counted, logged reason, and keeps what it has")
    func maxStore() async throws {
        let dirs = (0..<2).map { _ in TemporaryDirectory() }
        let relay = try RelayProcess(dir: dirs[0].path, ["--max-store", "1K", "--metrics-peer-labels"])
        let ready = try #require(await relay.ready())
        let listen = try #require(ready["listen"])
        let metricsAddress = try #require(ready["metrics"])
        let a = try NodeProcess(dir: dirs[1].path, ["--peer", "ws://" + listen])
        #expect(await started(a))
        #expect(await a.wait { $0["type"] == "peer_up" } != nil)
        for i in 1...5 { a.send("too much \(i)") }
        #expect(await eventuallyValue { relay.log.value.first { $0["msg"]?.hasPrefix("store full") == true } } != nil)
        let metrics = await eventuallyValue { () -> [String: Double]? in
            guard let m = fetchMetrics(metricsAddress),
                  (m["peernode_drops_total{reason=\"store_full\"}"] ?? 0) > 0 else { return nil }
            return m
        }
        #expect(metrics != nil, "store_full drops counted")
        #expect(metrics?["peernode_sync_lag_envelopes{peer=\"\(a.id)\"}"] != nil, "--metrics-peer-labels names the peers")
        let health = httpGet(metricsAddress, "/healthz")
        #expect(health?.body.contains("\"status\":\"store_full\"") == true)
        #expect(await relay.terminate() == 0)
        await a.quit()
    }

    @Test("--log-file: SIGHUP reopens the log after it was rotated away; SIGINT stops like SIGTERM")
    func logRotation() async throws {
        let dirs = (0..<1).map { _ in TemporaryDirectory() }
        let logPath = dirs[0].file("relay.log")
        let relay = try Child(PeerNodeProcess.binary, ["relay", "--data-dir", dirs[0].file("data"), "--listen", "127.0.0.1:0", "--no-discovery", "--log-file", logPath])
        let ready = await eventuallyValue { (try? String(contentsOfFile: logPath, encoding: .utf8))?.contains("relay ready") == true ? true : nil }
        #expect(ready == true)
        // logrotate moves the file away, then signals.
        try FileManager.default.moveItem(atPath: logPath, toPath: logPath + ".1")
        relay.signal(SIGHUP)
        let reopened = await eventuallyValue { (try? String(contentsOfFile: logPath, encoding: .utf8))?.contains("log reopened") == true ? true : nil }
        #expect(reopened == true, "a new log file after SIGHUP")
        relay.signal(SIGINT)
        #expect(await relay.exited() == 0)
        #expect((try? String(contentsOfFile: logPath, encoding: .utf8))?.contains("stopping signal=INT") == true)
        #expect((try? String(contentsOfFile: logPath + ".1", encoding: .utf8))?.contains("relay ready") == true)
    }
}

