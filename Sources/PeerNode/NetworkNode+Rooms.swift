import ChatText
import Foundation
import Store
import Crypto
import Gossip
import NetworkText
import NodeCore

/// The node's rooms at the terminal and in `--json`: private rooms'
/// membership commands and what a delivered membership event shows
/// (docs/PROTOCOL.md §14, "Membership and key epochs"), changes that
/// another device of ours made (`Following`), and invites.
extension NetworkNode {
    /// What the command signs (the room's create too, for an older room) goes
    /// out with the rest of the command's own envelopes (`flushOwn`).
    func membershipCommand(_ input: ChatInput) throws -> [NodeEvent] {
        let room = session.room
        let id = try node.privateRooms.privateRoom(named: room)
        switch input {
        case let .kick(who): try node.privateRooms.changeMembership(id, .kick, target: node.people.account(try node.people.resolve(who)))
        case let .ban(who): try node.privateRooms.changeMembership(id, .ban, target: node.people.account(try node.people.resolve(who)))
        case let .op(who, on): try node.privateRooms.changeMembership(id, .role, target: node.people.account(try node.people.resolve(who)), role: on ? .admin : .member)
        case .leaveRoom:
            try node.privateRooms.changeMembership(id, .leave, target: node.account)
            return try chatLines(session.part())
        case .members:
            guard let state = try node.privateRooms.recomputeMembership(id) else {
                throw NodeError.badCommand("\(room.value) has no membership events yet (made before them): everyone with its key is in it")
            }
            let order: [MembershipEvent.Role: Int] = [.owner: 0, .admin: 1, .member: 2]
            let members = state.roles.sorted { (order[$0.value] ?? 3, $0.key) < (order[$1.value] ?? 3, $1.key) }
            return [.roomRoles(room: room, members.map { (node.people[$0.key], Self.roleName($0.value)) }, banned: state.banned.sorted().map { node.people[$0] })]
        default:
            break
        }
        return []
    }

    static func roleName(_ role: MembershipEvent.Role) -> String {
        switch role {
        case .owner: return "owner"
        case .admin: return "admin"
        case .member: return "member"
        }
    }

    /// A delivered membership event: the room's state again, keys sealed to
    /// us taken, a new key made when we are the one to; shown as a line.
    func membershipDelivered(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        guard let event = MembershipEvent.decode(opened.content), let name = node.roomName(e.room) else { return [] }
        do {
            try node.privateRooms.recomputeMembership(e.room)
            if try node.privateRooms.rekeyIfNeeded(e.room) != nil { flushOwn() }
        } catch {
            log.warning("applying a membership change in \(name.value) failed: \(error)")
        }
        // A change that does not hold (a member "removing" the owner) is not
        // shown: its line would say something that did not happen.
        guard node.privateRooms.membershipHolds(e) else {
            node.privateRooms.refusedMembership &+= 1
            return []
        }
        if [.kick, .ban, .leave].contains(event.action) {
            do { try node.privateRooms.fileRefusedPosts(in: e.room, of: event.target) } catch { node.storeFailures.failed("filing a removed member's refused posts", error) }
        }
        return [.membershipChanged(room: name, by: node.people[e.author], action: event.actionName, target: node.people[event.target], epoch: event.epoch)]
    }

    /// After a revocation or a new conversation key: on the account key's
    /// machine, the next conversation key; then, in each room we rekey, a
    /// new room key if the current one reached an account under an older one.
    func conversationKeysChanged() {
        do {
            let devices = node.devices
            if try node.conversations.rekeyIfNeeded(revoked: devices.ownRevokedDevices, devices: { try devices.devices(of: devices.account) },
                                                    accountsRoom: node.accountsRoom, accountsKey: node.accountsKey) != nil { flushOwn() }
        } catch {
            log.warning("making a new conversation key after a revocation failed: \(error)")
        }
        rekeyRooms()
    }

    /// Each private room we are the rekeyer of gets a new key if it needs
    /// one (a race, a leave, a revoked device, the schedule).
    func rekeyRooms(standingIn: Bool = false) {
        var stillNeeded: Set<RoomID> = []
        for room in node.privateRooms.memberships.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            do {
                // Another device of the rekeyer's account stands in for a need seen at the last check too.
                let standIn = standingIn && rekeyNeededAtLastCheck.contains(room)
                if try node.privateRooms.rekeyIfNeeded(room, standIn: standIn) != nil {
                    flushOwn()
                } else if node.privateRooms.needsRekeyByUs(room) {
                    stillNeeded.insert(room)
                }
            } catch {
                log.warning("making a new key for a private room failed: \(error)")
            }
        }
        if standingIn { rekeyNeededAtLastCheck = stillNeeded }
    }

    /// A change another device of ours made, followed here: what
    /// `Following` says is ours to follow is done to rooms, marks and blocks.
    func followed(_ e: Envelope, _ opened: OpenedEnvelope) -> [NodeEvent] {
        guard let change = node.following.change(in: e, opened, fromOurAccount: node.people.account(e.author) == node.account) else { return [] }
        do {
            guard try node.following.applying({ try follow(change) }) else { return [] }
            roomOrderStale = true
            let (name, about) = change.described
            // The device that made the change, by its own key and name (its
            // account is ours, the same for every device).
            return [.followed(change: name, about: about, device: e.author, name: node.devices.name(of: e.author))]
        } catch {
            node.storeFailures.heard(error)
            return [.failed("following a change another device of ours made failed: \(error)")]
        }
    }

    /// Does a followed change here; false when it changes nothing here.
    private func follow(_ change: FollowChange) throws -> Bool {
        switch change {
        case let .joined(name):
            guard node.roomNames[node.roomID(name)] == nil else { return false }
            _ = try node.join(name)
        case let .parted(name):
            // Public rooms only: a private room's name is each device's own.
            guard name != .general, node.privateRooms[node.roomID(name)] == nil, node.roomNames[node.roomID(name)] != nil else { return false }
            try node.leave(name)
        case let .trusted(key, on):
            guard node.people.trusted.contains(key) != on else { return false }
            try node.setTrusted(key, on)
        case let .blocked(key, on):
            guard try node.store.blockedIdentities().contains(key) != on else { return false }
            try node.setBlocked(key, on)
            blocked.set(try node.store.blockedIdentities())
            if on { feed(.blocked(key)) }
        case let .accepted(room):
            guard node.privateRooms[room] == nil, let pending = try node.privateRooms.pendingInvites().first(where: { $0.room == room }) else { return false }
            _ = try node.privateRooms.accept(pending)
        case let .madePrivate(room, keyBytes, name):
            guard node.privateRooms[room] == nil, node.privateRooms.forgedPrivateRoom(room, name: name, peer: node.account) == nil else { return false }
            // Our own device's change with a key that is not one: said as a failure, nothing changed.
            let key = try SymmetricKey(bytes: keyBytes)
            let local = node.privateRooms.freeRoomName(like: name)
            try node.privateRooms.add(room, name: local, key: key)
            _ = try node.join(local)
            try node.privateRooms.recomputeMembership(room)
        }
        return true
    }
}

extension MembershipEvent {
    /// The change's name in `--json` (`"action"`) and what the terminal says.
    var actionName: String {
        switch action {
        case .create: "create"
        case .invite: "invite"
        case .kick: "kick"
        case .ban: "ban"
        case .role: role == .admin ? "admin" : "member"
        case .leave: "leave"
        case .rotate: "rotate"
        }
    }

    /// One line for a change named `action` (an `actionName`), its labels
    /// already sanitized: live and in a room's history alike.
    static func sentence(by: String, action: String, target: String, room: String, epoch: UInt32) -> String {
        let what: String
        switch action {
        case "create": what = "\(by) made \(room)"
        case "invite": what = "\(by) invited \(target) to \(room)"
        case "kick": what = "\(by) removed \(target) from \(room)"
        case "ban": what = "\(by) banned \(target) from \(room)"
        case "admin", "member": what = "\(by) made \(target) \(action == "admin" ? "an admin" : "a member") of \(room)"
        case "leave": what = "\(by) left \(room)"
        default: what = "\(by) gave \(room) a new key"
        }
        return what + (action == "leave" || action == "create" ? "" : " (key epoch \(epoch))")
    }
}

/// Invites to private rooms: shown when they arrive, and nothing more until
/// the user answers with `/accept` or `/decline` (docs/PROTOCOL.md §14).
extension NetworkNode {
    /// An invite arrived: it waits for the user, or is refused outright when
    /// it names a room that cannot be private (a public or direct room: it
    /// would have replaced that room's key).
    func invited(by peer: PublicKey, _ invite: Invite) -> [NodeEvent] {
        let refusal: InviteRefusal?
        do {
            refusal = try node.privateRooms.receiveInvite(invite, from: peer)
        } catch {
            log.warning("keeping an invite failed: \(error)")
            return []
        }
        if let refusal {
            count(.inviteRefused)
            return [.inviteRefused(by: node.people[peer], room: invite.name.value, reason: refusal.description)]
        }
        guard node.privateRooms[invite.room] == nil else { return [] }
        return [.invite(by: node.people[peer], room: invite.name.value, listed: false)]
    }

    /// `/accept [#room]` or `/decline [#room]`. `open`: the room accepted
    /// becomes the open one (typed at the prompt: the next line is meant
    /// for it, and must not go to the room the invite came into).
    func answerInvite(_ room: String, accept: Bool, open: Bool = false) throws -> [NodeEvent] {
        let pending = try node.privateRooms.pendingInvite(named: room)
        guard accept else {
            try node.privateRooms.decline(pending)
            return [.inviteDeclined(room: pending.name, by: pending.inviter)]
        }
        let name = try node.privateRooms.accept(pending)
        if name.value != pending.name { session.invitedAs[name] = pending.name }
        if open { session.open(name) }
        // What the room said before we joined, now that we can read it.
        let earlier = readLogged("the history of the room joined") { try node.store.history(of: pending.room, limit: ChatInput.maximumHistory) } ?? []
        return [.inviteAccepted(room: name, askedFor: pending.name, by: pending.inviter, opened: open)]
            + earlier.compactMap { stored in
                guard !blocked.contains(stored.envelope.author), let opened = node.open(stored.envelope) else { return nil }
                return .message(ShownMessage(envelope: stored.envelope, opened: opened, room: name, to: nil, me: node.me, book: node.people))
            }
    }

    /// `/invites`: who invited us where, oldest first.
    func listInvites() throws -> [NodeEvent] {
        let pending = try node.privateRooms.pendingInvites()
        guard !pending.isEmpty else { return [.noInvites] }
        return pending.map { .invite(by: node.people[$0.inviter], room: $0.name, listed: true) }
    }
}

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
