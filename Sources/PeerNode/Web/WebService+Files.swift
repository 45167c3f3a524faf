import Crypto
import Foundation
import Gossip
import NetworkText
import Reactor
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// A file sent from the page, arriving: its bytes come as binary messages
/// after its `send_file` command, into a private file of the data directory.
struct WebUpload {
    let fd: Int32
    let path: String
    let name: String
    let size: UInt64
    var got: UInt64 = 0
    let caption: String
    let target: WebCommand.Target?
    let ref: String?
}

/// Files on the page (issue 39): a file the node holds whole is served to
/// the page's token at `GET /file/ROOT` (pictures shown inline, other
/// files as a download, opened a chunk at a time off the loop as the
/// browser reads: `FileBodyReader`), and a file chosen on the page is uploaded over
/// the API's socket and offered as `/send` offers it.
extension WebService {
    /// Bytes a file sent from the page may have: as much as any file
    /// (`FileOffer.maximumSize`). Its bytes go to a file in the data
    /// directory as they come, never held in memory, and the page sends
    /// them as the socket drains.
    static let maximumUploadBytes: UInt64 = FileOffer.maximumSize
    /// The path prefix files are served under.
    static let filePath = "/file/"
    /// Media types shown inline; every other file is served as a download.
    static let inlineTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

    /// The answer to `GET /file/ROOT?token=…`.
    func fileResponse(_ request: HTTPRequest, network: NetworkNode) -> HTTPResponse {
        if let refusal = access.refusal(for: request, token: WebToken.load(directory: directory), needsToken: true) { return refusal.response }
        let hex = String(request.path.dropFirst(Self.filePath.count))
        guard let root = Hex.bytes(hex), root.count == FileTree.hashSize else { return HTTPResponse(status: 404, text: "no such file\n") }
        let served: (offer: FileOffer, key: FileKey, path: String)?
        do { served = try network.node.files.served(root) } catch {
            network.node.storeFailures.heard(error)
            return HTTPResponse(status: 500, text: "\(error)\n")
        }
        guard let (offer, key, path) = served else {
            return HTTPResponse(status: 404, text: "not held here whole: fetch it first (/get)\n")
        }
        let asked = FileBodyReader.range(request.head.value("Range"), size: offer.size)
        if case .failure? = asked {
            return HTTPResponse(status: 416, text: "that range holds no byte of the file\n", fields: ["Content-Range": "bytes */\(offer.size)"])
        }
        guard let reader = FileBodyReader(path: path, size: offer.size, key: key, plainHash: offer.plainHash, range: try? asked?.get()) else {
            return HTTPResponse(status: 500, text: "\(NodeError.fileUnreadable(path: path, reason: String(cString: strerror(errno))))\n")
        }
        let inline = Self.inlineTypes.contains(offer.type)
        // The name goes in a header only made safe and ASCII: the rest as %XX (RFC 6266, RFC 5987).
        let safe = SavedFile.safeName(offer.name)
        let ascii = String(safe.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        let encoded = safe.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ascii
        var fields = [
            "Accept-Ranges": "bytes",
            "Content-Disposition": (inline ? "inline" : "attachment") + "; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
        ]
        // One range asked for (a video seeking, a download going on): 206 with where it lies.
        if !reader.whole { fields["Content-Range"] = "bytes \(reader.range.lowerBound)-\(reader.range.upperBound)/\(offer.size)" }
        return HTTPResponse(status: reader.whole ? 200 : 206, contentType: inline ? offer.type : "application/octet-stream", stream: reader.body, fields: fields)
    }

    /// `send_file`: makes room for the bytes that follow on `c`.
    func startUpload(_ name: String, size: UInt64, caption: String, target: WebCommand.Target?, ref: String?, on c: WebSocketConnection) throws {
        if uploads[ObjectIdentifier(c)] != nil { throw WebCommand.Failure(ref: ref, message: "a file is already being sent on this connection: one at a time") }
        let folder = directory + "/uploads"
        if mkdir(folder, 0o700) != 0, errno != EEXIST { throw NodeError.fileNotSaved(path: folder, reason: String(cString: strerror(errno))) }
        let path = folder + "/" + Hex.encode(secureRandomBytes(8))
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw NodeError.fileNotSaved(path: path, reason: String(cString: strerror(errno))) }
        uploads[ObjectIdentifier(c)] = WebUpload(fd: fd, path: path, name: name, size: size, caption: caption, target: target, ref: ref)
    }

    /// Bytes of the file being sent on `c`; the last of them offer it.
    func uploaded(_ bytes: [UInt8], on c: WebSocketConnection, network: NetworkNode) {
        guard var upload = uploads[ObjectIdentifier(c)] else {
            return c.send(.text(Self.error(ref: nil, "binary messages are a file's bytes, after send_file")))
        }
        guard upload.got + UInt64(bytes.count) <= upload.size else {
            endUpload(on: c)
            return c.send(.text(Self.error(ref: upload.ref, "more bytes than the size send_file named")))
        }
        do { try Syscall.writeAll(upload.fd, bytes) } catch {
            endUpload(on: c)
            return c.send(.text(Self.error(ref: upload.ref, "cannot keep the file: \(error)")))
        }
        upload.got += UInt64(bytes.count)
        uploads[ObjectIdentifier(c)] = upload
        guard upload.got == upload.size else { return }
        // The file stays until it is sealed; then it goes, whatever became of it.
        uploads[ObjectIdentifier(c)] = nil
        close(upload.fd)
        let answer = { (result: Result<Envelope, any Error>) in
            unlink(upload.path)
            switch result {
            case let .success(e):
                c.send(.text(JSONEvents.line(pairs: [("type", .string("ok")), ("cmd", .string("send_file"))]
                    + (upload.ref.map { [("ref", .string($0))] } ?? []) + [("id", .string(e.id.hex))])))
            case let .failure(error):
                network.node.storeFailures.heard(error)
                c.send(.text(Self.error(ref: upload.ref, "\(error)")))
            }
        }
        do {
            let conversation = try upload.target.map { try network.resolve($0) }
            try network.offerFile(path: upload.path, name: upload.name, caption: upload.caption,
                                  room: conversation?.room ?? network.session.room, peer: conversation?.peer, then: answer)
        } catch {
            answer(.failure(error))
        }
    }

    /// Closes and removes the upload's file (its bytes are sealed into `files/` by then, or dropped).
    func endUpload(on c: WebSocketConnection) {
        guard let upload = uploads.removeValue(forKey: ObjectIdentifier(c)) else { return }
        close(upload.fd)
        unlink(upload.path)
    }
}
