import ChatText
import Foundation
import Gossip
import NetworkText
import Reactor
import Store
import WebSocket

/// `--web`: the page and its API on one port (docs/API.md). A presenter
/// like the terminal and the JSON lines: every event goes to every API
/// client as its `--json` line, one text message each; commands come back
/// as JSON and run as the typed lines do. State is confined to the node's
/// loop (every callback, `present`, and the token check run there).
final class WebService: JSONLinePresenter, @unchecked Sendable {
    /// API clients at once (a browser tab or two, a few bots); one more is
    /// closed at once with 1013 ("try again later").
    static let maximumClients = 16
    /// Largest command a client may send (a post's text is far smaller).
    static let maximumCommandBytes = 64 << 10
    /// Events queued for a client that has not taken them: past this it is
    /// not reading, and is closed (1008) so that it holds up nobody else.
    static let maximumUnsentBytes = 4 << 20
    /// Seconds between looks at the token file: a token replaced by
    /// `peernode web-url --new` closes the clients let in with the old one.
    /// The look rides on the node's own turn (`NetworkNode.onTick`), so the
    /// page costs an idle node no wake-up of its own.
    static let tokenCheckInterval = NetworkNode.tickInterval
    /// The longest `ref` a command may carry (echoed in its answer).
    static let maximumRefLength = 64
    /// Seconds a connection has to send its whole request head: a browser
    /// sends it at once, so one that has not is closed (with the
    /// half-open cap per address, `WebSocketServer.Configuration.maximumHalfOpenPerAddress`,
    /// a local process cannot keep the owner's page from loading).
    static let headerDeadline = 3.0
    /// Connections from one address still sending their request head: one
    /// more closes the oldest of them. A browser opens a handful at once.
    static let maximumHalfOpen = 16

    var showsReceipts: Bool { true }

    /// Loop only once started (its port is the bound one from then).
    private(set) var access: WebAccess
    let directory: String
    weak var network: NetworkNode?
    private var server: WebSocketServer?
    private var clients: [ObjectIdentifier: WebSocketConnection] = [:]
    /// A file being sent from the page, per client (`WebService+Files.swift`).
    var uploads: [ObjectIdentifier: WebUpload] = [:]
    private var token: [UInt8]?

    init(access: WebAccess, directory: String) {
        self.access = access
        self.directory = directory
    }

    /// Listens on the node's loop; returns the address the page is at.
    func start(network: NetworkNode) throws -> String {
        self.network = network
        token = try WebToken.ensure(directory: directory)
        var configuration = WebSocketServer.Configuration(paths: [WebAccess.apiPath])
        configuration.limits = WebSocketLimits(maximumMessageSize: Self.maximumCommandBytes, maximumSendQueue: Self.maximumUnsentBytes)
        configuration.timeouts.handshake = Self.headerDeadline
        configuration.maximumHalfOpenPerAddress = Self.maximumHalfOpen
        configuration.admit = { [unowned self] request in
            access.refusal(for: request, token: WebToken.load(directory: directory), needsToken: true)?.response
        }
        let callbacks = WebSocketCallbacks(
            onOpen: { [unowned self] c in opened(c) },
            onMessage: { [unowned self] c, m in received(m, from: c) },
            onClose: { [unowned self] c, _ in
                clients[ObjectIdentifier(c)] = nil
                endUpload(on: c)
            }
        )
        let server = WebSocketServer(loop: network.loop, configuration: configuration, callbacks: callbacks) { [unowned self] request in
            if let refusal = access.refusal(for: request, token: nil, needsToken: false) { return refusal.response }
            if request.path == WebAccess.tokenCheckPath {
                return access.refusal(for: request, token: WebToken.load(directory: directory), needsToken: true)?.response ?? HTTPResponse(status: 204, text: "")
            }
            if request.path.hasPrefix(Self.filePath), let network = self.network { return fileResponse(request, network: network) }
            return WebPage.response(for: request.path, host: request.head.value("Host") ?? "")
        }
        let port = try server.listen(host: access.host, port: access.port)
        self.server = server
        // Port 0 picked one: `Host` must name that. Queued right behind the
        // listener's start, so it is in place before the first request is read.
        let bound = WebAccess(host: access.host, port: port)
        network.loop.execute { [unowned self] in access = bound }
        network.onTick.append { [unowned self] in checkToken() }
        // A stopping node says so to its clients (1001), as to its links.
        network.onStop.append { [unowned self] in stop() }
        let shownHost = access.host.contains(":") ? "[\(access.host)]" : access.host
        let address = "\(shownHost == "0.0.0.0" || shownHost == "[::]" ? "127.0.0.1" : shownHost):\(port)"
        let path = directory + "/" + WebAccess.addressFileName
        do { try WebToken.write(address, to: path) } catch {
            network.log.warning("\(error): `peernode web-url` will not know this address")
        }
        return address
    }

    func stop() {
        server?.stop()
        for c in clients.values { c.close(code: .goingAway, reason: "node quitting") }
    }

    // MARK: the presenter

    var wantsLines: Bool { !clients.isEmpty }
    /// The page asks for history, rooms and searches itself (its `ref` ties the answer to the asking).
    var takesAnswers: Bool { false }

    func present(lines: [String]) {
        for c in clients.values {
            for line in lines { c.send(.text(line)) }
        }
    }

    // MARK: clients

    private func opened(_ c: WebSocketConnection) {
        guard clients.count < Self.maximumClients else {
            c.close(code: .tryAgainLater, reason: "too many API clients (at most \(Self.maximumClients))")
            return
        }
        clients[ObjectIdentifier(c)] = c
        guard let network else { return }
        c.send(.text(JSONEvents.line([
            "type": .string("hello"), "api": .number(1), "id": .string(network.node.me.hex), "fp": .string(network.node.me.shortFingerprint),
            "nick": .text(PeerText(network.node.nick ?? "")), "room": .string(network.session.room.value),
        ])))
    }

    private func checkToken() {
        let now = WebToken.load(directory: directory)
        guard now != token else { return }
        token = now
        for c in clients.values { c.close(code: .policyViolation, reason: "the token was replaced") }
    }

    private func received(_ message: WebSocketMessage, from c: WebSocketConnection) {
        guard case let .text(text) = message else {
            if case let .binary(bytes) = message, let network { return uploaded(bytes, on: c, network: network) }
            return c.send(.text(Self.error(ref: nil, "commands are JSON text messages, not binary")))
        }
        let command: WebCommand
        do { command = try WebCommand.parse(text) } catch {
            return c.send(.text(Self.error(ref: error.ref, error.message)))
        }
        guard let network else { return }
        if case let .sendFile(name, size, caption, target) = command.action {
            do {
                try startUpload(name, size: size, caption: caption, target: target, ref: command.ref, on: c)
                c.send(.text(JSONEvents.line(pairs: [("type", .string("ready")), ("cmd", .string("send_file"))] + (command.ref.map { [("ref", .string($0))] } ?? []))))
            } catch let failure as WebCommand.Failure {
                c.send(.text(Self.error(ref: command.ref, failure.message)))
            } catch {
                c.send(.text(Self.error(ref: command.ref, "\(error)")))
            }
            return
        }
        let lines = run(command, on: network)
        for line in lines { c.send(.text(line)) }
    }

    /// The lines that answer one command, for the client that sent it:
    /// the events it produced, each with the command's `ref`, then `ok`
    /// (or one `error`, and nothing was done).
    private func run(_ command: WebCommand, on network: NetworkNode) -> [String] {
        let ref = command.ref
        defer { network.flushOwn() }
        do {
            let (events, extra) = try answer(command.action, on: network)
            let okLine = JSONEvents.line(pairs: [("type", .string("ok")), ("cmd", .string(command.name))]
                + (ref.map { [("ref", .string($0))] } ?? []) + extra)
            return events.flatMap(JSONPresenter.lines).map { Self.tagged($0, ref: ref) } + [okLine]
        } catch let failure as WebCommand.Failure {
            return [Self.error(ref: ref, failure.message)]
        } catch {
            network.node.storeFailures.heard(error)
            return [Self.error(ref: ref, "\(error)")]
        }
    }

    /// What one command does: the events that answer it and the fields of its `ok`.
    /// The number message `e` has in its room or conversation, where it is delivered here.
    private func number(of e: Envelope, on network: NetworkNode) -> Int? {
        network.readLogged("a message's number") { try network.node.store.delivered(id: e.id).flatMap { try network.node.store.number(of: $0) } } ?? nil
    }

    private func answer(_ action: WebCommand.Action, on network: NetworkNode) throws -> (events: [NodeEvent], ok: [(String, JSONEvents.Value)]) {
        switch action {
        case let .post(text, kind, room):
            return ([], Self.posted(try network.postText(text, kind: kind, in: room)))
        case let .direct(to, text, kind):
            return ([], Self.posted(try network.postText(text, kind: kind, to: try network.node.people.resolve(to))))
        case let .history(target, limit, before):
            let conversation = try network.resolve(target ?? .room(network.session.room))
            let (events, next) = try network.historyPage(of: conversation, limit: limit, before: before)
            var fields: [(String, JSONEvents.Value)] = conversation.peer.map { [("with", .string($0.hex))] }
                ?? [("room", .string(conversation.room?.value ?? ""))]
            // Messages only: nick changes and joins are in a history but are not `message` events.
            fields.append(("count", .number(UInt64(events.count { if case let .message(m) = $0 { m.opened.isMessage } else { false } }))))
            if let next { fields.append(("before", .string(WebCommand.cursorText(next)))) }
            return (events, fields)
        case let .read(target):
            try network.markRead(try network.resolve(target))
            return ([], [])
        case let .join(room):
            let warning = try network.joinRoom(room)
            return ([], [("room", .string(room.value))] + (warning.map { [("warning", .string($0))] } ?? []))
        case let .part(room):
            try network.session.leave(room)
            network.showDeliveries()
            return ([], [("room", .string(room.value))])
        case let .createPrivate(room):
            try network.node.privateRooms.createPrivateRoom(room)
            return ([], [("room", .string(room.value))])
        case .rooms:
            return ([.conversations(try network.conversations())], [])
        case let .search(text):
            let found = try network.found(text)
            return ([.found(found)], [("count", .number(UInt64(found.count)))])
        case .mentions:
            let found = try network.foundMentions()
            return ([.found(found)], [("count", .number(UInt64(found.count)))])
        case let .who(room):
            return ([try network.members(in: room)], [])
        case let .edit(id, text):
            let e = try network.act { try $0.messageLife.edit(try $0.messageLife.ownMessage(id: id), text: text) }
            return ([], [("id", .string(e.id.hex)), ("seq", .number(e.sequence))])
        case let .delete(id):
            let e = try network.act { try $0.messageLife.delete(try $0.messageLife.ownMessage(id: id)) }
            return ([], [("id", .string(e.id.hex)), ("seq", .number(e.sequence))])
        case let .versions(id):
            return ([try network.versions(of: try network.node.messageLife.message(id: id))], [])
        case let .react(id, reaction):
            guard Reaction.isValid(reaction) else { throw NodeError.badReaction(limit: Reaction.maximumLength) }
            let e = try network.act { try $0.reactions.react(to: try $0.messageLife.message(id: id), with: reaction) }
            return ([], [("id", .string(e.id.hex)), ("seq", .number(e.sequence))])
        case let .reply(id, text):
            let e = try network.act(message: true) { try $0.reactions.reply(to: try $0.messageLife.message(id: id), text: text) }
            return ([], [("id", .string(e.id.hex)), ("seq", .number(e.sequence))])
        case let .typing(target):
            for room in try network.resolve(target ?? .room(network.session.room)).ids.prefix(1) { network.sendTyping(in: room) }
            return ([], [])
        case let .getFile(id):
            let e = try network.node.messageLife.message(id: id)
            let place = network.node.roomName(e.room)?.value ?? "a conversation"
            return (try network.getFile(e, number: number(of: e, on: network) ?? 0, place: place, folder: nil), [])
        case let .cancelFile(id):
            let e = try network.node.messageLife.message(id: id)
            try network.cancelFile(e, number: number(of: e, on: network) ?? 0)
            return ([], [])
        case let .files(target):
            let listing = try network.fileListing(of: try network.resolve(target ?? .room(network.session.room)))
            return ([.answer(.files(listing))], [("count", .number(UInt64(listing.rows.count)))] + (listing.more ? [("more", .string("yes"))] : []))
        case .sendFile:
            // Handled as it arrives (`received`): its bytes follow on the same connection.
            return ([], [])
        case let .input(input):
            let (events, failure) = network.run(input)
            if let failure { throw WebCommand.Failure(ref: nil, message: failure) }
            return (events, [])
        }
    }

    /// The `ok` of a post: the first message's id and sequence, and how many
    /// messages a long text became (`MessageParts`).
    static func posted(_ envelopes: [Envelope]) -> [(String, JSONEvents.Value)] {
        guard let first = envelopes.first else { return [] }
        return [("id", .string(first.id.hex)), ("seq", .number(first.sequence)), ("parts", .number(UInt64(envelopes.count)))]
    }

    /// An event line that answers a command: its `ref` first (every line
    /// `JSONEvents` writes is an object, so it starts with "{").
    static func tagged(_ line: String, ref: String?) -> String {
        guard let ref, line.hasPrefix("{") else { return line }
        return "{\"ref\":" + JSONEvents.quoted(ref) + "," + line.dropFirst()
    }

    static func error(ref: String?, _ message: String) -> String {
        JSONEvents.line(pairs: [("type", .string("error"))] + (ref.map { [("ref", .string($0))] } ?? []) + [("error", .string(message))])
    }
}
