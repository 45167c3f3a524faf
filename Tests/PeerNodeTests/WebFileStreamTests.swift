import Crypto
import Foundation
import Glibc
import TestSupport
import Testing

/// `GET /file/ROOT` on the page, over a real socket (docs/API.md): the file
/// is opened a chunk at a time off the loop as the client reads
/// (`FileBodyReader`), so its size is not bounded by memory, a damaged copy
/// is never served whole, and a client that leaves takes nothing with it.
@Suite("The page's files, given as the browser reads")
struct WebFileStreamTests {
    /// A node with the page, holding `size` random bytes it sent itself.
    struct Holder {
        let dir: TemporaryDirectory
        let node: NodeProcess
        let port: UInt16
        let token: String
        let root: String
        let hash: String
        /// The offer's message number (`/delete N`).
        let n: String
        let bytes: [UInt8]
    }

    func holder(size: Int) async throws -> Holder {
        let dir = TemporaryDirectory(), source = TemporaryDirectory()
        let node = try NodeProcess(dir: dir.path, ["--nick", "alice", "--web", "127.0.0.1:0"])
        #expect(await started(node))
        let url = try #require(await node.wait { $0["type"] == "web" }?["url"])
        let address = String(url.dropFirst("http://".count).prefix { $0 != "/" })
        let port = try #require(address.split(separator: ":").last.flatMap { UInt16($0) })
        let path = source.path + "/big.bin"
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        let bytes = [UInt8](random.readData(ofLength: size))
        try random.close()
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        node.send("/send \(path)")
        let offer = try #require(await node.wait(timeout: 120) { $0["type"] == "file" }, "\(node.recent(4))")
        return Holder(dir: dir, node: node, port: port, token: String(url.split(separator: "=").last ?? ""),
                      root: try #require(offer["root"]), hash: Hex.encode(BLAKE2b.hash(bytes)), n: try #require(offer["n"]), bytes: bytes)
    }

    /// A connected socket to the page that has sent `GET /file/ROOT`.
    func request(_ h: Holder, range: String? = nil) throws -> Int32 {
        let fd = WebHalfOpenTests.connected(h.port)
        try #require(fd >= 0)
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let asked = range.map { "Range: \($0)\r\n" } ?? ""
        let head = Array("GET /file/\(h.root)?token=\(h.token) HTTP/1.1\r\nHost: 127.0.0.1:\(h.port)\r\n\(asked)\r\n".utf8)
        #expect(head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == head.count)
        return fd
    }

    /// Reads to the end (or `limit` bytes of body): the status line, the
    /// Content-Length and the body's BLAKE2b and length. `each` runs after every read.
    func response(_ fd: Int32, limit: Int = .max, each: () -> Void = {}) -> (status: String, length: Int?, hash: String, got: Int, head: String) {
        var head: [UInt8] = []
        var inHead = true
        let stream = BLAKE2bStream()
        var got = 0
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while got < limit {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            var body = Array(buffer[0..<n])
            if inHead {
                head += body
                guard let split = Self.headEnd(head) else { continue }
                body = Array(head[split...])
                head = Array(head[..<split])
                inHead = false
            }
            got += body.count
            body.withUnsafeBytes { stream.update($0) }
            each()
        }
        let text = String(decoding: head, as: UTF8.self)
        let length = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
        return (text.components(separatedBy: "\r\n").first ?? "", length, Hex.encode(stream.finish()), got, text)
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    static func status(_ pid: pid_t, _ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }

    static func openFiles(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    @Test("a 96 MiB file, past what the page used to serve (64 MiB, held whole), comes byte for byte, its hash the file's, while the node's memory grows by far less than the file and it answers the chat meanwhile")
    func largeFileWhole() async throws {
        let size = 96 << 20
        let h = try await holder(size: size)
        let before = Self.status(h.node.pid, "VmRSS")
        let fd = try request(h)
        defer { close(fd) }
        var peak = before
        var reads = 0
        let r = response(fd) {
            reads += 1
            if reads % 16 == 0 { peak = max(peak, Self.status(h.node.pid, "VmRSS")) }
        }
        #expect(r.status == "HTTP/1.1 200 OK", "\(r)")
        #expect(r.length == size && r.got == size && r.hash == h.hash, "\(r)")
        // Held whole it took the file's size at least once (in fact twice: the bytes, then the socket's buffer).
        #expect(peak - before < (size >> 10) / 2, "RSS went from \(before) kB to \(peak) kB serving a \(size >> 20) MiB file")
        h.node.send("/stats")
        #expect(await h.node.wait { $0["type"] == "stats" } != nil, "the node answers: \(h.node.recent(3))")
        await h.node.quit()
    }

    @Test("a chunk damaged on disk after it was checked: the body stops short of its Content-Length and the connection closes, the bytes past the damage never sent")
    func damagedChunkCutsTheBody() async throws {
        let size = 1_000_000
        let h = try await holder(size: size)
        // Chunk 2 (sealed chunks are 64,016 bytes apart) gets one byte flipped.
        let path = h.dir.path + "/files/" + h.root
        let handle = try #require(FileHandle(forUpdatingAtPath: path), "no chunk file at \(path)")
        try handle.seek(toOffset: UInt64(2 * 64_016 + 100))
        let byte = try #require(try handle.read(upToCount: 1)).first ?? 0
        try handle.seek(toOffset: UInt64(2 * 64_016 + 100))
        try handle.write(contentsOf: [byte ^ 0x55])
        try handle.close()
        let fd = try request(h)
        defer { close(fd) }
        let r = response(fd)
        #expect(r.status == "HTTP/1.1 200 OK" && r.length == size, "\(r)")
        #expect(r.got == 2 * 64_000, "the two chunks before the damaged one, nothing after: \(r)")
        await h.node.quit()
    }

    @Test("a delete for everyone during a download stops it short: the bytes erased are never served, and the file is gone after (404)")
    func deletedMidway() async throws {
        let size = 48 << 20
        let h = try await holder(size: size)
        let fd = try request(h)
        defer { close(fd) }
        let first = response(fd, limit: 1 << 20)
        #expect(first.status == "HTTP/1.1 200 OK" && first.got >= 1 << 20, "\(first)")
        h.node.send("/delete \(h.n)")
        let chunks = h.dir.path + "/files/" + h.root
        let erased = await eventuallyValue(30) { FileManager.default.fileExists(atPath: chunks) ? nil : true }
        #expect(erased == true, "the chunk file stayed: \(h.node.recent(3))")
        // What the kernel already holds still comes; nothing read after the erase does.
        let rest = response(fd)
        #expect(first.got + rest.got < size, "the whole file came after its delete: \(first.got) + \(rest.got)")
        let again = try request(h)
        defer { close(again) }
        #expect(response(again).status == "HTTP/1.1 404 Not Found")
        await h.node.quit()
    }

    @Test("one range asked (a video seeking, a download going on): 206 with its Content-Range and exactly those bytes, across chunk boundaries, a suffix and an open end; a range past the end 416; several ranges or a bad one: the whole file, 200")
    func ranges() async throws {
        let size = 300_000
        let h = try await holder(size: size)
        func get(_ range: String) throws -> (status: String, length: Int?, hash: String, got: Int, head: String) {
            let fd = try request(h, range: range)
            defer { close(fd) }
            return response(fd)
        }
        func hash(_ part: ArraySlice<UInt8>) -> String { Hex.encode(BLAKE2b.hash(Array(part))) }
        let middle = try get("bytes=63990-128010")
        #expect(middle.status == "HTTP/1.1 206 Partial Content" && middle.head.contains("Content-Range: bytes 63990-128010/300000"), "\(middle.head)")
        #expect(middle.length == 64_021 && middle.got == 64_021 && middle.hash == hash(h.bytes[63_990...128_010]))
        let suffix = try get("bytes=-1000")
        #expect(suffix.status == "HTTP/1.1 206 Partial Content" && suffix.got == 1000 && suffix.hash == hash(h.bytes[(size - 1000)...]), "\(suffix.head)")
        let open = try get("bytes=299999-")
        #expect(open.got == 1 && open.hash == hash(h.bytes[299_999...]) && open.head.contains("Content-Range: bytes 299999-299999/300000"))
        let beyond = try get("bytes=300000-")
        #expect(beyond.status == "HTTP/1.1 416 Range Not Satisfiable" && beyond.head.contains("Content-Range: bytes */300000"), "\(beyond.head)")
        for ignored in ["bytes=0-10,20-30", "bytes=abc", "lines=1-2", "bytes=0-"] {
            let whole = try get(ignored)
            #expect(whole.status == "HTTP/1.1 200 OK" && whole.got == size && whole.hash == h.hash && whole.head.contains("Accept-Ranges: bytes"), "\(ignored): \(whole.head)")
        }
        await h.node.quit()
    }

    @Test("a client that leaves halfway takes nothing with it: the node's open files go back to what they were, and the next request is served whole")
    func clientLeaves() async throws {
        let size = 24 << 20
        let h = try await holder(size: size)
        let before = Self.openFiles(h.node.pid)
        let fd = try request(h)
        let r = response(fd, limit: 1 << 20)
        #expect(r.status == "HTTP/1.1 200 OK" && r.got >= 1 << 20, "\(r)")
        close(fd)
        let back = await eventuallyValue(20) { Self.openFiles(h.node.pid) <= before ? true : nil }
        #expect(back == true, "open files \(before) before, \(Self.openFiles(h.node.pid)) after")
        let again = try request(h)
        defer { close(again) }
        let whole = response(again)
        #expect(whole.got == size && whole.hash == h.hash, "\(whole)")
        await h.node.quit()
    }
}
