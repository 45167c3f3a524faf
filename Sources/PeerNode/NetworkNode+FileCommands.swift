import ChatText
import Foundation
import Store
import Crypto
import Gossip
import NetworkText
import NodeCore

/// Files in a room or conversation (`Files`; docs/PROTOCOL.md §16): the
/// commands, and the events a transfer makes.
extension NetworkNode {
    func fileCommand(_ input: ChatInput) throws -> [NodeEvent] {
        switch input {
        case let .send(typed, typedCaption):
            let (path, caption) = Self.widened(typed, typedCaption)
            let full = Self.expandingHome(path)
            try offerFile(path: full, name: nil, caption: caption, room: session.room, peer: session.conversationPeer) { [self] result in
                if case let .failure(error) = result { emit(.failed("/send \(TerminalText.sanitize(path)): \(error)")) }
            }
            var info = stat()
            guard stat(full, &info) == 0, let notice = Self.sealingNotice(path, size: UInt64(info.st_size), regular: info.st_mode & S_IFMT == S_IFREG) else {
                return []
            }
            return chatLines([notice])
        case let .get(number, folder):
            let place = try session.openPlace()
            let e = try node.messageLife.message(in: place.room, named: place.name, number: number)
            return try getFile(e, number: number, place: place.name, folder: folder.map(Self.expandingHome))
        case let .cancel(number):
            let place = try session.openPlace()
            try cancelFile(try node.messageLife.message(in: place.room, named: place.name, number: number), number: number)
            return []
        case .files:
            let place = try session.openPlace()
            let rows = readLogged("the files held") { try node.files.repository.files() } ?? []
            let held = Dictionary(rows.map { ($0.root, node.files.live($0)) }, uniquingKeysWith: { a, _ in a })
            var lines: [String] = []
            for stored in try node.store.history(of: place.room, limit: ChatInput.maximumHistory) {
                guard let offer = node.open(stored.envelope)?.offer else { continue }
                let number = readLogged("a message's number") { try node.store.number(of: stored) } ?? nil
                var state = held[offer.root].map { $0.complete ? "held" : "\(FileSize.text(node.files.held($0))) fetched" } ?? "not fetched"
                // A /get under way says where it saves (a second /get may have moved it).
                if let saving = node.files.savingInto(offer.root) {
                    state += ", saving into " + TerminalText.sanitize(saving) + (number.map { " (/cancel \($0) stops it)" } ?? "")
                }
                lines.append("  \(number.map { "(\($0)) " } ?? "")\(TerminalText.sanitize(offer.name)) \(FileSize.text(offer.size)) from "
                             + Renderer(people: node.people).label(stored.envelope.author) + ": \(state)")
            }
            return chatLines(lines.isEmpty ? ["-- no files offered in \(place.name)"] : ["-- files offered in \(place.name):"] + lines)
        default:
            return []
        }
    }

    /// Files at least this large are said to be sealing when `/send` starts.
    static let sealingNoticeBytes: UInt64 = 50_000_000

    /// What `/send` says at once of a large file, so the wait is not a
    /// mystery; nothing for one it will refuse (past the limit, not a
    /// regular file): the refusal is the one line said.
    static func sealingNotice(_ path: String, size: UInt64, regular: Bool) -> String? {
        guard regular, size >= sealingNoticeBytes, size <= FileOffer.maximumSize else { return nil }
        return "-- sealing \(TerminalText.sanitize(path)) (\(FileSize.text(size))): it is offered here once that is done"
    }

    /// Offers the file at `path` (under `name`, else its own) in `room`, or
    /// to `peer` in your conversation: read and sealed into the data
    /// directory off the loop (a large file takes seconds, and links and the
    /// prompt go on meanwhile), then kept and posted on it; `then` hears how
    /// it went, on the loop.
    func offerFile(path: String, name: String?, caption: String, room: RoomName, peer: PublicKey?,
                   then: @escaping (Result<Envelope, any Error>) -> Void) throws {
        let folder = try node.files.stagingFolder()
        nonisolated(unsafe) let then = then
        fileSealer.async { [self] in
            let sealed = Result { try Files.seal(path: path, name: name, caption: caption, folder: folder) }
            loop.execute { [self] in
                then(Result {
                    let offer = try node.files.keep(try sealed.get(), now: Node.now())
                    let e = try act(message: true) { node in
                        if let peer { return try node.conversations.post(offer.encoded, kind: .file, to: peer) }
                        return try node.post(content: offer.encoded, kind: .file, in: room)
                    }
                    try node.files.offered(offer, as: e, clock: monotonic())
                    flushOwn()
                    return e
                })
            }
        }
    }

    /// Fetches the file `e` offers (message `number` in `place`) into
    /// `folder`, else the download folder: the events that start it.
    /// `resumed`: taken up again at start, when the links are still to come (nobody is said to be missing yet).
    func getFile(_ e: Envelope, number: Int, place: String, folder: String?, resumed: Bool = false) throws -> [NodeEvent] {
        guard let offer = node.open(e)?.offer else { throw NodeError.notAFile(number) }
        let target = try folder ?? Self.downloadFolder()
        var said = try node.files.get(offer, from: e, number: number, place: place, folder: target, now: Node.now(), clock: monotonic())
        let links = fileLinks
        assignFiles(node.files.fetch.assign(links: links, now: monotonic()))
        if links.isEmpty, !resumed { said += node.files.waitingWithoutLinks(offer.root) }
        tell(said)
        return []
    }

    /// `/cancel N`: the `/get` of the file `e` offers stops, what came of it erased (`Files.cancel`).
    func cancelFile(_ e: Envelope, number: Int) throws {
        guard let offer = node.open(e)?.offer else { throw NodeError.notAFile(number) }
        guard let cancelled = node.files.cancel(offer.root) else {
            throw NodeError.notBeingFetched(number, whole: node.files.holdsWhole(offer.root))
        }
        tell([cancelled])
    }

    /// Says what transfers did; a file held whole is opened into its folder
    /// on a worker (seconds for a large one), and said when that is done.
    func tell(_ said: [Files.Progress]) {
        guard !said.isEmpty else { return }
        var events: [NodeEvent] = []
        for progress in said {
            nonisolated(unsafe) let store = node.store
            switch progress {
            case let .opening(o):
                fileOpener.async { [self] in
                    let done = Files.save(o, store: store)
                    loop.execute { [self] in tell([done]) }
                }
            case let .checkingHeld(check):
                fileOpener.async { [self] in
                    let held = check.run(store: store)
                    loop.execute { [self] in
                        let said = node.files.resume(held, clock: monotonic())
                        assignFiles(node.files.fetch.assign(links: fileLinks, now: monotonic()))
                        tell(said)
                    }
                }
            default:
                events += event(progress).map { [$0] } ?? []
            }
        }
        emit(events)
        refreshPrompt()
    }

    /// What a transfer's progress says to the person (nil: work to do off the loop, not words).
    func event(_ progress: Files.Progress) -> NodeEvent? {
        switch progress {
        case let .progress(n, place, root, bytes, of): .fileProgress(number: n, place: place, root: root, bytes: bytes, of: of)
        case let .done(n, place, root, path, hash): .fileDone(number: n, place: place, root: root, path: path, hash: hash)
        case let .failed(n, place, root, reason): .fileFailed(number: n, place: place, root: root, reason: reason)
        case let .cancelled(n, place, root): .fileCancelled(number: n, place: place, root: root)
        case let .waiting(n, place, root, bad): .fileWaiting(number: n, place: place, root: root, bad: bad.map { node.people[$0] })
        case let .moved(n, _, _, from, to):
            .chatLines(["-- /get \(n): saving into \(TerminalText.sanitize(to)) now, not \(TerminalText.sanitize(from))"])
        case .opening, .checkingHeld: nil
        }
    }

    /// `/send my report.pdf` typed without quotes: when `path` names
    /// nothing, the longest run of the caption's words after it that makes
    /// a file's path is taken as the path (and the rest as the caption).
    static func widened(_ path: String, _ caption: String) -> (path: String, caption: String) {
        var info = stat()
        guard !caption.isEmpty, stat(expandingHome(path), &info) != 0, errno == ENOENT else { return (path, caption) }
        let words = caption.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for count in stride(from: words.count, through: 1, by: -1) {
            let candidate = path + " " + words[..<count].joined(separator: " ")
            if stat(expandingHome(candidate), &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                return (candidate, words[count...].joined(separator: " ").trimmingCharacters(in: .whitespaces))
            }
        }
        return (path, caption)
    }

    /// `~/x` is the home folder's `x`.
    static func expandingHome(_ path: String) -> String {
        guard path.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] else { return path }
        return home + path.dropFirst()
    }

    /// The default folder for `/get`, made if missing.
    static func downloadFolder() throws -> String {
        guard let folder = SavedFile.downloadFolder(environment: ProcessInfo.processInfo.environment) else { throw NodeError.noDownloadFolder }
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw NodeError.fileNotSaved(path: folder, reason: error.localizedDescription)
        }
        return folder
    }

    /// `--auto-get`: a file someone offered, up to the size given, fetched
    /// into the download folder by itself (a failure to start is said),
    /// within the hour's budget (`AutoGetBudget`).
    func autoGet(_ e: Envelope, _ offer: FileOffer, number: Int?, place: String) -> [NodeEvent] {
        guard var budget = autoGet, offer.size <= budget.limit, let number, !node.files.fetch.fetches(offer.root) else { return [] }
        defer { autoGet = budget }
        guard budget.take(offer.size, now: monotonic()) else {
            guard budget.tells(now: monotonic()) else { return [] }
            return [.chatLines(["-- not fetched by itself: --auto-get took \(FileSize.text(budget.budget)) in the last hour, "
                                + "its most (\(AutoGetBudget.factor) × \(FileSize.text(budget.limit))); /get \(number) fetches \(TerminalText.sanitize(offer.name))"])]
        }
        do { return try getFile(e, number: number, place: place, folder: nil) } catch {
            node.storeFailures.heard(error)
            return [.failed("fetching \(TerminalText.sanitize(offer.name)) by itself (--auto-get) failed: \(error)")]
        }
    }

    /// At start: every `/get` a stop cut short goes on from the chunks held,
    /// into the folder it was saving to.
    func resumeFiles() {
        node.files.removeStaging()
        node.files.eraseLeftovers()
        guard !relay else { return node.files.eraseUnfinished() }
        let rows = readLogged("the files held") { try node.files.repository.files() } ?? []
        node.files.handOverKept(rows, now: Node.now(), clock: monotonic())
        for row in rows where !row.complete {
            guard let folder = row.folder, let author = row.author, let sequence = row.sequence,
                  let e = readLogged("a file's offer", { try node.store.envelope(by: author, sequence: sequence) }) ?? nil,
                  let stored = readLogged("a file's offer", { try node.store.delivered(id: e.id) }) ?? nil else { continue }
            let number = readLogged("a message's number") { try node.store.number(of: stored) } ?? nil
            do { emit(try getFile(e, number: number ?? 0, place: node.roomName(e.room)?.value ?? "your conversation", folder: folder, resumed: true)) } catch {
                node.storeFailures.heard(error)
                emit(.failed("going on with the fetch of a file failed: \(error)"))
            }
        }
    }
}
