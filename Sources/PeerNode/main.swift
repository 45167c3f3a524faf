import CMalloc
import Crypto
import Discovery
import Foundation
import Gossip
import Reactor
import Store
import Synchronization
import TermUI

/// Set once from any thread (stdout's writer), read at the end.
final class FailedOnce: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var happened: Bool { flag.withLock { $0 } }
}

/// Exit codes: 0 success, 1 a runtime failure (message on stderr), 2 bad usage.
enum ExitCode {
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

func printError(_ message: String) {
    // A closed stderr has nowhere to say so.
    try? Syscall.writeAll(2, Array(("peernode: " + message + "\n").utf8))
}

/// The one-shot commands' output (help, id, a web URL): a reader that has
/// gone is no error of ours.
func writeLines(_ lines: [String]) {
    guard !lines.isEmpty else { return }
    try? Syscall.writeAll(1, Array((lines.joined(separator: "\n") + "\n").utf8))
}

func run(_ command: Command) throws {
    let environment = ProcessInfo.processInfo.environment
    switch command {
    case .help:
        writeLines([CommandLineSpec.version + " — serverless chat for a local network", CommandLineSpec.usage])
    case .version:
        writeLines([CommandLineSpec.version])
    case let .newNetworkKey(path):
        try KeyFile.writeNetworkKey(NetworkKey.generate(), to: path)
        writeLines(["wrote a new network key to \(path) (mode 0600): give it to the members with --network-key-file \(path)"])
    case let .id(options):
        guard let path = resolveDataDirectory(options, environment: environment) else {
            throw NodeError.noDataDirectory
        }
        // A mistyped --data-dir would print a new identity as if it were yours (issue 44): an explicit one must exist.
        var isFolder: ObjCBool = false
        if options.dataDirectory != nil, !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) || !isFolder.boolValue {
            throw NodeError.noSuchDataDirectory(path)
        }
        try DataDirectory.createDirectories(path)
        let (key, isNew) = try KeyFile.loadOrCreateIdentity(at: path + "/" + DataDirectory.identityFileName)
        if isNew {
            // A key made just now has posted nothing anywhere: its database says so,
            // or the first start would wait for a peer before posting.
            try Node(options: options, environment: environment).ownDurability.markKnown()
        }
        writeLines([key.publicKey.hex, key.publicKey.shortFingerprint])
    case let .chat(options):
        // Before any thread starts, so that only the loop's signalfd sees them.
        try EventLoop.blockSignals([SIGWINCH] + chatStopSignals)
        let node = try Node(options: options, environment: environment)
        node.ownDurability.startRunning()
        let room = try RoomName(options.room ?? RoomName.general.value)
        var startupNick: String?
        if let wanted = options.nick {
            let nick = try Nick(wanted)
            if node.nick != nick.value { startupNick = nick.value }
        } else if node.nick == nil, let user = environment["USER"], let nick = Nick.checked(user) {
            startupNick = nick.value
        }
        if let nick = startupNick, node.ownDurability.historyIsKnown {
            try node.post(nick, kind: .nick, in: room)
            startupNick = nil
        }
        let out = Output()
        if options.json { out.droppedLine = { JSONEvents.line(["type": .string("dropped"), "lines": .number(UInt64($0))]) } }
        // A person at a terminal gets the line editor and a prompt; scripts and pipes get plain lines.
        let terminal = !options.json && Terminal.isInteractive ? TerminalSession(prompt: room.value + "> ") : nil
        if let terminal {
            Renderer.style = .terminal(colors: environment["NO_COLOR"] == nil, me: node.me)
            out.sink = { terminal.print($0) }
            _ = terminal.start()
        }
        let log = try Logger(format: .chat)
        if let terminal { log.sink = { terminal.print([$0]) } }
        // At a terminal, each room and conversation is a window (`TerminalWindows`); a pipe gets every line.
        let windows = terminal.map { terminal in
            let windows = TerminalWindows(me: node.me)
            windows.ring = { terminal.bell() }
            windows.clear = { terminal.clear() }
            return windows
        }
        let lines: any Presenter = options.json ? JSONPresenter(out: out)
            : windows.map { WindowedTerminalPresenter(lines: TerminalPresenter(out: out), windows: $0) } ?? TerminalPresenter(out: out)
        let web = try options.web.map { wanted throws(NodeError) -> WebService in
            guard let (host, port) = CommandLineSpec.webAddress(wanted) else {
                throw NodeError.badAddress(option: "--web", needs: "PORT or HOST:PORT", got: wanted)
            }
            return WebService(access: WebAccess(host: host, port: port), directory: node.directory.path)
        }
        let presenter: any Presenter = web.map { PresenterGroup(all: [lines, $0]) } ?? lines
        // Read receipts: a person at a terminal or the page reads what is shown, unless they said otherwise
        // (the page says what it showed with the API's `read`).
        let readReceipts = (try node.store.setting("receipts")).map { $0 == "on" } ?? (terminal != nil || web != nil)
        let network = try NetworkNode(node: node, room: room, presenter: presenter, log: log,
                                      pendingNick: startupNick, sendsReadReceipts: readReceipts)
        network.applyLimits(options)
        network.autoGet = options.autoGet.flatMap(CommandLineSpec.parseSize).map { AutoGetBudget(limit: $0) }
        network.windows = windows
        windows?.openRooms = { [unowned network] in network.session.openRoomIDs }
        windows?.completerChanged = { [weak windows] completer in
            windows?.completerStale = false
            terminal?.setCompleter(completer)
        }
        network.answersScripts = options.json
        let done = DispatchSemaphore(value: 0)
        let input = StandardInput(network: network, terminal: terminal) { done.signal() }
        // Whoever reads stdout has gone: stop as at the end of standard input. A reader that closed
        // it (EPIPE) ends the run as the end of input does, exit 0; a stdout that cannot be written
        // (a full disk, an I/O error) is a failure, exit 1, so a script or a service sees it.
        let stdoutFailed = FailedOnce()
        out.onClosed = { error in
            if error.errno == EPIPE {
                network.log.warning("standard output was closed (\(error)): stopping")
            } else {
                stdoutFailed.set()
                network.log.warning("writing standard output failed (\(error)): stopping")
            }
            network.loop.execute { input.quit() }
        }
        // Before the loop starts (nothing else touches it yet); these were blocked first thing.
        try network.loop.onSignals([SIGWINCH] + chatStopSignals) { number in
            if number == SIGWINCH {
                terminal?.resized()
                return
            }
            // As at the end of standard input: links closed, the WAL folded, the clean stop recorded.
            network.log.info("stopping (signal \(number))")
            input.quit()
        }
        try network.start(listen: options.listen, peers: options.peers, discovery: try discoveryConfiguration(options))
        if let web {
            let address: String
            do { address = try web.start(network: network) } catch {
                throw NodeError.cannotBind(serving: "web", address: options.web ?? "", reason: "\(error)")
            }
            let url = WebAccess.url(address: address, token: WebToken.load(directory: node.directory.path) ?? [])
            network.loop.execute { network.emit(.webPage(url: url)) }
        }
        network.loop.execute {
            if let terminal {
                network.promptChanged = { terminal.setPrompt($0) }
                terminal.setCompleter(network.completer())
            }
            input.start()
        }
        done.wait()
        out.finish()
        terminal?.finish()
        if stdoutFailed.happened { exit(ExitCode.failure) }
    case let .relay(options):
        try runRelay(options, environment: environment)
    case let .deviceAdd(options):
        try DeviceCommands.add(options, environment: environment)
    case let .deviceJoin(code, options):
        try DeviceCommands.join(code: code, options, environment: environment)
    case let .deviceRevoke(who, options):
        try DeviceCommands.revoke(who, options, environment: environment)
    case let .webURL(options):
        guard let path = resolveDataDirectory(options, environment: environment) else { throw NodeError.noDataDirectory }
        writeLines([try WebToken.url(directory: path, replace: options.newWebToken)])
    }
}

/// Discovery as the options ask for it (nil with --no-discovery).
func discoveryConfiguration(_ options: Options) throws -> DiscoveryService.Configuration? {
    guard options.discovery else { return nil }
    var configuration = DiscoveryService.Configuration(interface: options.multicastInterface)
    if let wanted = options.multicast {
        guard let (group, port) = PeerAddress.split(hostPort: wanted), port != 0 else {
            throw NodeError.badAddress(option: "--multicast", needs: "GROUP:PORT (e.g. 239.255.73.73:7733)", got: wanted)
        }
        configuration.group = group
        configuration.port = port
    }
    return configuration
}

/// SIGTERM (a session or service ending), SIGHUP (its terminal closed) and
/// SIGINT stop a chat node as the end of its input does: cleanly, exit 0.
let chatStopSignals = [SIGTERM, SIGHUP, SIGINT]

// Writing to a pipe whose reader has gone fails with EPIPE (handled where
// it happens) instead of killing the process; sockets say MSG_NOSIGNAL too.
signal(SIGPIPE, SIG_IGN)

// A turn that fans a batch out to many links allocates and frees megabytes;
// glibc would hand the top of its heap back to the kernel after each one
// and fault the pages in again on the next (7 % of a busy relay's time).
// Freed memory stays up to this much; the quiet-time malloc_trim returns it.
_ = mallopt(M_TRIM_THRESHOLD, 32 << 20)

// Files this process creates (database, WAL, lock) are private to the user;
// a file fetched with /get gets the rights the user's own umask gives it,
// read before it is changed (`SavedFile.fileMode`).
_ = SavedFile.fileMode
umask(0o077)

do {
    let command = try CommandLineSpec.parse(Array(CommandLine.arguments.dropFirst()))
    do {
        try run(command)
    } catch {
        printError("\(error)")
        exit(ExitCode.failure)
    }
} catch {
    // One line and where to look, not the whole usage: the error stays on the screen (issue 44).
    printError(error.message + "; try `peernode --help`")
    exit(ExitCode.usage)
}
