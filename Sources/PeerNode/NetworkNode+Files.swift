import ChatText
import Crypto
import Foundation
import Gossip
import NetworkText
import NodeCore
import Reactor
import Store

/// Files in a room or conversation (`Files`; docs/PROTOCOL.md §16): the
/// commands, and the events a transfer makes.
extension NetworkNode {
    func fileCommand(_ input: ChatInput) throws -> [NodeEvent] {
        switch input {
        case let .send(typed, typedCaption):
            let (path, caption) = Self.widened(typed, typedCaption)
            let full = Files.expandingHome(path)
            try offerFile(path: full, name: nil, caption: caption, room: session.room, peer: session.conversationPeer) { [self] result in
                if case let .failure(error) = result { emit(.failed("/send \(TerminalText.sanitize(path)): \(error)")) }
            }
            var info = stat()
            guard stat(full, &info) == 0, let notice = Self.sealingNotice(path, size: UInt64(info.st_size), regular: info.st_mode & S_IFMT == S_IFREG) else {
                return []
            }
            return chatLines([notice])
        case let .get(typed, folder):
            let place = try session.openPlace()
            // Alone: the file offered last here, however old, that stands and reads here.
            guard let number = try typed ?? node.files.offers(in: place.room).offers.first?.stored.number else {
                throw NodeError.noFileHere(place.name)
            }
            let e = try node.messageLife.message(in: place.room, named: place.name, number: number)
            return try getFile(e, number: number, place: place.name, folder: folder.map(Files.expandingHome))
        case let .cancel(typed):
            let place = try session.openPlace()
            let number = try typed ?? node.files.onlyFetch(in: place.room, place: place.name)
            try cancelFile(try node.messageLife.message(in: place.room, named: place.name, number: number), number: number)
            return []
        case .files:
            let place = try session.openPlace()
            let listing = try node.files.listing(of: place.room, place: place.name, name: session.conversationPeer == nil ? session.room : nil,
                                                 with: session.conversationPeer.map(node.people.account), people: node.people)
            // A script gets the terminal's lines as before (`notice`; scripts read them), then the rows.
            return chatLines(listing.lines) + (answersScripts ? [.answer(.files(listing))] : [])
        default:
            return []
        }
    }

    /// Files dropped on the terminal (`DroppedFiles`): at a terminal, a line
    /// that is only the paths of files (or a folder) there is held and the
    /// person asked: y offers each file, t posts the line as text, anything
    /// else drops it. True when the line was taken so.
    func droppedFile(_ line: String) -> Bool {
        guard windows != nil, !answersScripts, let drop = DroppedFiles.read(line, disk: DroppedFiles.realDisk) else { return false }
        if case .tooMany = drop {} else { held = .drop(paths: drop.paths, line: line) }
        emit(.chatLines([drop.question]))
        return true
    }

    /// The answer to `droppedFile`.
    func answerDrop(paths: [String], line: String, _ answer: String) {
        func said(_ act: () throws -> [NodeEvent]) {
            do { emit(try act()) } catch {
                node.storeFailures.heard(error)
                emit(.failed("\(error)"))
            }
        }
        switch answer {
        // Each its own offer: one that cannot go is said, and the rest still go.
        case "y" where !paths.isEmpty, "yes" where !paths.isEmpty: for path in paths { said { try fileCommand(.send(path: path, caption: "")) } }
        case "t": said { try handle(ChatInput.parse(line), line: line).events }
        default:
            emit(.chatLines([paths.isEmpty ? "-- nothing was sent or posted" : paths.count == 1 ? "-- the dropped file was not sent" : "-- the dropped files were not sent"]))
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
        guard node.files.fetch.waitsItsTurn(offer.root) else { return [] }
        return [.chatLines(["-- /get \(number): waits its turn: \(FileFetch.maximumTransfers) files are being fetched; it starts as soon as one ends, "
                            + "or goes \(Int(FileFetch.stalledAfter)) s without a chunk"])]
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
                    loop.execute { [self] in tell([node.files.opened(done)]) }
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
        guard !caption.isEmpty, stat(Files.expandingHome(path), &info) != 0, errno == ENOENT else { return (path, caption) }
        let words = caption.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        for count in stride(from: words.count, through: 1, by: -1) {
            let candidate = path + " " + words[..<count].joined(separator: " ")
            if Files.regularFileSize(Files.expandingHome(candidate)) != nil {
                return (candidate, words[count...].joined(separator: " ").trimmingCharacters(in: .whitespaces))
            }
        }
        return (path, caption)
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

/// Files' chunks on the links (`Files`, `FileFetch`): asks sent as the
/// fetch core decides, chunks checked and written as they come, and asks
/// from peers answered as the link drains, a bounded queue per link.
extension NetworkNode {
    /// Where chunks that came, checked on the loop, are written and opened (`Files.ChunkCheck.write`), in order.
    static let fileWorkerLabel = "peernode.files"

    /// Unsent bytes on a link below which queued chunk asks are answered.
    static let fileSendWindow = 2 << 20

    /// Links up that speak files (version 7 on), by peer.
    var fileLinks: [LinkID: PublicKey] {
        linkedPeers.filter { core.version(of: $0.key)?.speaksFiles == true }
    }

    /// Sends the asks the fetch core returned.
    func assignFiles(_ actions: [FileFetch.Action]) {
        for case let .want(id, root, chunks) in actions {
            guard let size = node.files.size(of: root) else { continue }
            // The offer is named where the link reads it (version 8 on), for a relay to erase the file with it.
            let offer = core.version(of: id)?.namesFileOffers == true ? node.files.offer(of: root) : nil
            for part in stride(from: 0, to: chunks.count, by: FileMessage.maximumIndices) {
                let some = Array(chunks[part..<min(chunks.count, part + FileMessage.maximumIndices)])
                feed(.send(id, .file(.want(root: root, size: size, chunks: some, offer: offer))))
            }
        }
    }

    /// A file message from `peer` on `id`.
    func fileArrived(_ message: FileMessage, from id: LinkID, peer: PublicKey) {
        let now = monotonic()
        switch message {
        case let .want(root, size, chunks, offer):
            if !relay { node.files.relayHandOver.fetching(root, on: id) }
            node.files.asked(root, chunks: chunks, by: peer)
            // A relay fetches what it is asked for and does not hold, to serve it (within `--max-files`).
            if relay, node.files.relay(root, size: size, offer: offer, asker: peer, now: Node.now(), clock: now) {
                assignFiles(node.files.fetch.assign(links: fileLinks, now: now))
            }
            guard var link = links[id] else { return }
            let room = Files.maximumQueuedWants - link.fileWants.reduce(0) { $0 + $1.chunks.count }
            guard room >= chunks.count else { return count(.fileMessageDropped) }
            link.fileWants.append((root, chunks))
            links[id] = link
            pumpFiles(id)
        case let .chunk(root, index, proof, sealed):
            if !relay { node.files.relayHandOver.served(root, index: index, by: peer, on: id) }
            switch node.files.arrived(root, index: index, proof: proof, sealed: sealed, from: peer, links: fileLinks, now: now) {
            case .ignored: break
            case let .duplicate(actions): assignFiles(actions)
            case let .check(check):
                // The leaf's hash here, beside the link's open of the same bytes; the write and the
                // opening on the files worker (another core); the loop takes the outcome in.
                guard let leaf = check.checked() else { return chunkChecked(check.invalid) }
                nonisolated(unsafe) let store = node.store
                fileWorker.async { [self] in
                    let outcome = check.write(leaf: leaf, store: store)
                    loop.execute { [self] in chunkChecked(outcome) }
                }
            }
        case let .none(root, chunks):
            assignFiles(node.files.lacking(root, chunks: chunks, from: peer, links: fileLinks, now: now))
            asksAgainAfterLack()
        }
    }

    /// A chunk's check and write, done: what it frees asked for, and said.
    private func chunkChecked(_ outcome: Files.ChunkOutcome) {
        let (actions, said) = node.files.apply(outcome, links: fileLinks, now: monotonic())
        assignFiles(actions)
        answerFreedAsks()
        tell(said)
    }

    /// A peer that said it lacks a file is asked again once `FileFetch.lackFirst`
    /// has passed, not at the tick after: a relay fetching it has chunks by then.
    /// One such timer at a time (a peer flooding "none" sets no more).
    private func asksAgainAfterLack() {
        once(\.askAgainDue, after: FileFetch.lackFirst + 0.01) { [self] in
            assignFiles(node.files.fetch.assign(links: fileLinks, now: monotonic()))
        }
    }

    /// Runs `body` `seconds` from now, unless a timer marked by `due` is set already: one at a time.
    private func once(_ due: ReferenceWritableKeyPath<Files, Bool>, after seconds: Double, _ body: @escaping () -> Void) {
        guard !node.files[keyPath: due] else { return }
        node.files[keyPath: due] = true
        _ = loop.after(seconds) { [weak self] in
            guard let self else { return }
            node.files[keyPath: due] = false
            body()
        }
    }

    /// Answers queued asks while the link has room; then waits for it to drain.
    func pumpFiles(_ id: LinkID) {
        let asker = table.links[id]?.remote.map { (id, $0) }
        while let link = links[id], let next = link.fileWants.first {
            guard link.connection.unsentBytes < Self.fileSendWindow else {
                link.connection.whenUnsent(below: Self.fileSendWindow / 2) { [self] in pumpFiles(id) }
                return
            }
            links[id]?.fileWants.removeFirst()
            for answer in node.files.answer(next.root, chunks: next.chunks, asker: asker, now: monotonic()) { feed(.send(id, .file(answer))) }
        }
        checkPatienceLater()
    }

    /// While asks wait for chunks, their patience is looked at as it runs
    /// out (`WaitingAsks.patience`), not at the next tick: one timer at a time.
    private func checkPatienceLater() {
        guard !node.files.waitingAsks.isEmpty else { return }
        once(\.patienceCheckDue, after: WaitingAsks.patience / 2) { [self] in
            answerFreedAsks(expiring: true)
            checkPatienceLater()
        }
    }

    /// Asks that waited for chunks a fetch here had not got (`WaitingAsks`)
    /// and stopped waiting: those whose chunks came are answered with them
    /// as the link drains, the rest (their fetch ended, or, with `expiring`,
    /// they waited `WaitingAsks.patience`) none at once.
    func answerFreedAsks(expiring: Bool = false) {
        for freed in node.files.takeFreedAsks(expiring: expiring ? monotonic() : nil) where links[freed.link] != nil {
            guard freed.held else {
                feed(.send(freed.link, .file(.none(root: freed.root, chunks: freed.chunks))))
                continue
            }
            links[freed.link]?.fileWants.append((freed.root, freed.chunks))
            pumpFiles(freed.link)
        }
    }

    /// Once a second: offers of ours handed to the relays that now hold
    /// their envelopes (`RelayHandOver`): a link holds one once the clock it
    /// declared holds the offer's sequence.
    func handOffersToRelays() {
        guard !relay, !node.files.relayHandOver.waiting.isEmpty else { return }
        let now = monotonic()
        let relays = fileLinks.filter { id, peer in
            core.version(of: id)?.namesFileOffers == true && presence.board.current(peer, now: now)?.state == .relay
        }
        let due = node.files.relayHandOver.due(relays: relays, holds: { id, offer in
            (replicator.declaredClock(of: id)?[offer.author] ?? 0) >= offer.sequence
        }, now: now)
        for (id, want) in due { feed(.send(id, .file(want))) }
    }

    /// Once a second: unanswered asks go to others, and links with room are asked.
    func tickFiles() {
        handOffersToRelays()
        // Fetches ended since (erased, cancelled, dropped): their waiting asks are answered none. Patience is the timer's.
        answerFreedAsks()
        guard !node.files.fetch.roots.isEmpty else { return }
        if relay { node.files.dropStale(now: monotonic()) } else { tell(node.files.waiting(now: monotonic())) }
        assignFiles(node.files.fetch.tick(links: fileLinks, now: monotonic()))
    }
}
