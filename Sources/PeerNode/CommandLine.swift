import Gossip

/// The command line, parsed by a pure function so it can be tested without
/// running anything. The usage text is generated from the same tables.
struct Options: Equatable {
    var dataDirectory: String?
    var networkName: String?
    var networkKeyFile: String?
    var nick: String?
    var room: String?
    /// HOST:PORT to accept links on.
    var listen: String?
    /// Static links (`ws://HOST:PORT`), repeatable.
    var peers: [String] = []
    var json = false
    var discovery = true
    /// GROUP:PORT for discovery (default 239.255.73.73:7733).
    var multicast: String?
    /// Only this interface address for discovery (e.g. 127.0.0.1).
    var multicastInterface: String?
    /// Relay: `plain` (default) or `json` lines on stderr (or in `logFile`).
    var logFormat: String?
    /// Relay: log here instead of stderr; SIGHUP reopens it.
    var logFile: String?
    /// Relay: the database size at which it stops taking envelopes from others (e.g. 500M, 2G).
    var maxStore: String?
    var maxFiles: String?
    var autoGet: String?
    /// Connections accepted at once from one IP address (default 64).
    var maxPerAddress: String?
    /// New envelopes a link may push per second (default `Replicator.pushRate`).
    var pushRate: String?
    /// Links the overlay keeps at most (0: link to every peer found).
    var maxLinks: String?
    /// Relay: HOST:PORT for `/healthz` and `/metrics` (default loopback, `NetworkNode.defaultMetricsListen`).
    var metricsListen: String?
    /// Relay: label `/metrics` samples with peer ids (off: who is linked is nobody's business but the operator's).
    var metricsPeerLabels = false
    /// [HOST:]PORT to serve the page and its API on (`--web`).
    var web: String?
    /// Let `--web` listen on an address other machines reach.
    var webAllowRemote = false
    /// `web-url --new`: replace the page's token.
    var newWebToken = false
    /// `device join --name`: what this machine is called among the account's devices.
    var deviceName: String?
    /// `auto` (default) or `chachapoly`: the ciphers links may use.
    var linkCipher: String?
}

enum Command: Equatable {
    /// Start a node and chat from standard input (the default).
    case chat(Options)
    /// A headless node that stores and forwards everything.
    case relay(Options)
    /// Print the node id and fingerprint.
    case id(Options)
    /// Write a new random network key to a file.
    case newNetworkKey(path: String)
    /// Print the page's address with its token (`--new`: a new token).
    case webURL(Options)
    /// Wait with a one-time code for a new device of this account.
    case deviceAdd(Options)
    /// Join the account whose machine shows `code`.
    case deviceJoin(code: String, Options)
    /// Revoke one of this account's devices.
    case deviceRevoke(String, Options)
    case help
    case version
}

struct UsageError: Error, Equatable {
    let message: String
}

enum CommandLineSpec {
    static let version = "peernode 0.1.0"

    struct OptionSpec: Sendable {
        let name: String
        let argument: String
        let help: String
        let apply: @Sendable (inout Options, String) -> Void
    }

    static let options: [OptionSpec] = [
        OptionSpec(name: "--data-dir", argument: "DIR",
                   help: "where the identity and database live (default $XDG_DATA_HOME/peernode, else ~/.local/share/peernode)",
                   apply: { $0.dataDirectory = $1 }),
        OptionSpec(name: "--network", argument: "NAME",
                   help: "join the network with this name (default \"lan\", open to anyone on the LAN); a name separates networks, it does not hide them",
                   apply: { $0.networkName = $1 }),
        OptionSpec(name: "--network-key-file", argument: "FILE",
                   help: "join the private network whose key is in FILE (see `peernode network new`): only those with the file can join",
                   apply: { $0.networkKeyFile = $1 }),
        OptionSpec(name: "--nick", argument: "NAME", help: "the nick others see next to your fingerprint", apply: { $0.nick = $1 }),
        OptionSpec(name: "--room", argument: "ROOM", help: "the room to start in (default #general)", apply: { $0.room = $1 }),
        OptionSpec(name: "--listen", argument: "HOST:PORT",
                   help: "accept links on this address (default 0.0.0.0:7733; port 0 picks a free port)",
                   apply: { $0.listen = $1 }),
        OptionSpec(name: "--peer", argument: "ws://HOST:PORT", help: "link to this node (repeatable)", apply: { $0.peers.append($1) }),
        OptionSpec(name: "--multicast", argument: "GROUP:PORT",
                   help: "the discovery group (default 239.255.73.73:7733)", apply: { $0.multicast = $1 }),
        OptionSpec(name: "--multicast-if", argument: "ADDR",
                   help: "discover only on the interface with this IPv4 address (127.0.0.1: nodes on this host)",
                   apply: { $0.multicastInterface = $1 }),
        OptionSpec(name: "--log-format", argument: "plain|json", help: "relay: how log lines look (default plain)", apply: { $0.logFormat = $1 }),
        OptionSpec(name: "--log-file", argument: "FILE", help: "relay: log to FILE instead of stderr (SIGHUP reopens it)", apply: { $0.logFile = $1 }),
        OptionSpec(name: "--max-store", argument: "SIZE",
                   help: "relay: stop taking envelopes from others when the database reaches SIZE (e.g. 500M, 2G)",
                   apply: { $0.maxStore = $1 }),
        OptionSpec(name: "--auto-get", argument: "SIZE",
                   help: "fetch every file offered to you up to SIZE (e.g. 10M) into your download folder by itself, at most 64 × SIZE an hour (default: off)",
                   apply: { $0.autoGet = $1 }),
        OptionSpec(name: "--max-files", argument: "SIZE",
                   help: "relay: keep files others fetch through it up to SIZE in all (default 1G), the oldest leaving first; 0 keeps none",
                   apply: { $0.maxFiles = $1 }),
        OptionSpec(name: "--metrics-listen", argument: "HOST:PORT",
                   help: "relay: serve /healthz and /metrics here, not on the link port (default 127.0.0.1:7734: this machine only)",
                   apply: { $0.metricsListen = $1 }),
        OptionSpec(name: "--max-per-address", argument: "N",
                   help: "accept at most N connections at once from one IP address (default 64; 1 to 65536)",
                   apply: { $0.maxPerAddress = $1 }),
        OptionSpec(name: "--push-rate", argument: "N",
                   help: "close a link that sends envelopes we did not ask for faster than N a second, past a burst of 5 s of it, and ask for catch-up no faster (default 10000, catch-up 40000; 1 to 1000000)",
                   apply: { $0.pushRate = $1 }),
        OptionSpec(name: "--web", argument: "[HOST:]PORT",
                   help: "serve the chat page and its API here (HOST defaults to 127.0.0.1: this machine only; see --web-allow-remote); the address to open, with its token, is printed at start and by `peernode web-url`",
                   apply: { $0.web = $1 }),
        OptionSpec(name: "--name", argument: "NAME",
                   help: "device join: what to call this machine among your devices (default: its host name)",
                   apply: { $0.deviceName = $1 }),
        OptionSpec(name: "--max-links", argument: "N",
                   help: "keep at most N links to peers found on the LAN or learned from peers, and know more in reserve (default 6, a relay 32; 0: link to every peer found, as earlier builds did; --peer links come on top)",
                   apply: { $0.maxLinks = $1 }),
        OptionSpec(name: "--link-cipher", argument: "auto|chachapoly",
                   help: "the cipher of links: auto (default) runs AES-256-GCM where both machines' CPUs have AES instructions, else ChaCha20-Poly1305; chachapoly runs ChaCha20-Poly1305 always",
                   apply: { $0.linkCipher = $1 }),
    ]

    /// `--link-cipher chachapoly`.
    static let chaChaPolyOnly = "chachapoly"

    /// Options without a value.
    static let flags: [(name: String, help: String, apply: @Sendable (inout Options) -> Void)] = [
        ("--json", "one JSON object per line on stdout (events for scripts and bots)", { $0.json = true }),
        ("--no-discovery", "do not look for peers on the LAN by multicast (links come from --peer only)", { $0.discovery = false }),
        ("--metrics-peer-labels", "relay: label /metrics samples with linked peers' ids (off by default)", { $0.metricsPeerLabels = true }),
        ("--web-allow-remote", "let --web listen on an address other machines reach: anyone who gets the token can then read and post as you, over plain HTTP that others on the LAN can watch", { $0.webAllowRemote = true }),
        ("--new", "web-url: replace the page's token first (pages open with the old one are closed)", { $0.newWebToken = true }),
    ]

    static let commands: [(usage: String, help: String)] = [
        ("peernode [OPTIONS]", "start a node and chat from standard input"),
        ("peernode relay [OPTIONS]", "run a headless relay: store and forward everything, /healthz and /metrics on --metrics-listen"),
        ("peernode id [--data-dir DIR]", "print this node's id (64 hex characters) and its short fingerprint (DIR must exist)"),
        ("peernode network new FILE", "write a new random network key to FILE (mode 0600, never overwrites)"),
        ("peernode device add", "link a new machine to your account: prints a one-time code and waits for it (--listen HOST:PORT, default 0.0.0.0:7735)"),
        ("peernode device join CODE", "make this machine a device of the account that showed CODE (--peer HOST:PORT as it printed; --name NAME)"),
        ("peernode device revoke DEVICE", "revoke a device of your account (its name, fingerprint or id from /devices): others refuse what it signs from now on"),
        ("peernode web-url [--new]", "print the address of the page a node with --web serves, with its token"),
        ("peernode help", "show this help (also --help, -h)"),
        ("peernode version", "show the version (also --version)"),
    ]

    static var usage: String {
        var lines = ["usage:"]
        for c in commands {
            lines.append("  " + c.usage.padding(toLength: 32, withPad: " ", startingAt: 0) + c.help)
        }
        lines.append("options:")
        for o in options {
            lines.append("  " + "\(o.name) \(o.argument)".padding(toLength: 32, withPad: " ", startingAt: 0) + o.help)
        }
        for f in flags {
            lines.append("  " + f.name.padding(toLength: 32, withPad: " ", startingAt: 0) + f.help)
        }
        return lines.joined(separator: "\n")
    }

    /// Parses the arguments after the program name.
    static func parse(_ arguments: [String]) throws(UsageError) -> Command {
        var options = Options()
        var words: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            switch arg {
            case "--help", "-h": return .help
            case "--version": return .version
            default: break
            }
            if let flag = flags.first(where: { $0.name == arg }) {
                flag.apply(&options)
                continue
            }
            if arg.hasPrefix("-") && arg != "-" {
                let (name, inline) = splitInline(arg)
                guard let spec = options_(named: name) else { throw UsageError(message: "unknown option \(name)") }
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard i < arguments.count else { throw UsageError(message: "option \(name) needs \(spec.argument)") }
                    value = arguments[i]
                    i += 1
                }
                guard !value.isEmpty else { throw UsageError(message: "option \(name) needs a non-empty \(spec.argument)") }
                spec.apply(&options, value)
            } else {
                words.append(arg)
            }
        }
        try expectNumber(options.maxPerAddress, for: "--max-per-address", in: maxPerAddressRange)
        try expectNumber(options.pushRate, for: "--push-rate", in: pushRateRange)
        try expectNumber(options.maxLinks, for: "--max-links", in: maxLinksRange)
        if let web = options.web {
            guard let (host, _) = webAddress(web) else {
                throw UsageError(message: "--web takes PORT or HOST:PORT (e.g. 8080 or 127.0.0.1:8080), got \(web)")
            }
            if !WebAccess.isLoopback(host), !options.webAllowRemote {
                throw UsageError(message: "--web \(web) is reachable from other machines: add --web-allow-remote if that is meant (anyone with the token could then chat as you)")
            }
        }
        if let cipher = options.linkCipher, cipher != "auto", cipher != chaChaPolyOnly {
            throw UsageError(message: "--link-cipher takes auto or chachapoly, got \(cipher)")
        }
        if let size = options.autoGet, parseSize(size) == nil {
            throw UsageError(message: "--auto-get takes a size such as 10M or 1G, got \(size)")
        }
        switch words.first {
        case nil:
            try expectValues(options, peers: .url)
            return .chat(options)
        case "relay":
            try expectNoMore(words, after: 1)
            try expectValues(options, peers: .url)
            if let format = options.logFormat, format != "plain", format != "json" {
                throw UsageError(message: "--log-format takes plain or json, got \(format)")
            }
            if let size = options.maxStore, parseSize(size) == nil {
                throw UsageError(message: "--max-store takes a size such as 500M or 2G, got \(size)")
            }
            if let size = options.maxFiles, size != "0", parseSize(size) == nil {
                throw UsageError(message: "--max-files takes a size such as 500M or 2G (0: none), got \(size)")
            }
            return .relay(options)
        case "help":
            return .help
        case "version":
            return .version
        case "id":
            try expectNoMore(words, after: 1)
            return .id(options)
        case "web-url":
            try expectNoMore(words, after: 1)
            return .webURL(options)
        case "device":
            switch words.dropFirst().first {
            case "add":
                try expectNoMore(words, after: 2)
                try expectValues(options, peers: .hostPort)
                return .deviceAdd(options)
            case "join":
                guard words.count == 3 else { throw UsageError(message: "peernode device join needs the CODE that `peernode device add` printed") }
                try expectValues(options, peers: .hostPort)
                return .deviceJoin(code: words[2], options)
            case "revoke":
                guard words.count == 3 else { throw UsageError(message: "peernode device revoke needs a DEVICE: its name, fingerprint or id") }
                return .deviceRevoke(words[2], options)
            default:
                throw UsageError(message: "unknown device command (expected: peernode device add, device join CODE, device revoke DEVICE)")
            }
        case "network":
            guard words.count >= 2, words[1] == "new" else {
                throw UsageError(message: "unknown network command (expected: peernode network new FILE)")
            }
            guard words.count == 3 else { throw UsageError(message: "peernode network new needs exactly one FILE") }
            return .newNetworkKey(path: words[2])
        case let other?:
            throw UsageError(message: "unknown command \(other)")
        }
    }

    /// Bytes in "123", "500K", "500M", "2G" (powers of 1024); nil if not a size.
    /// `--web`'s value: "8080" → ("127.0.0.1", 8080); "HOST:PORT" as given. Port 0 picks a free one.
    static func webAddress(_ text: String) -> (host: String, port: UInt16)? {
        if let port = UInt16(text) { return ("127.0.0.1", port) }
        guard let (host, port) = WebAccess.split(text) else { return nil }
        return (host, port)
    }

    static func parseSize(_ text: String) -> UInt64? {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = Substring(text.uppercased())
        var factor: UInt64 = 1
        if let last = digits.last, let unit = units[last] {
            factor = unit
            digits = digits.dropLast()
        }
        guard let n = UInt64(digits), n > 0 else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : product
    }

    private static func options_(named name: String) -> OptionSpec? {
        options.first { $0.name == name }
    }

    private static func splitInline(_ arg: String) -> (String, String?) {
        guard let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
        return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
    }

    /// `--max-per-address N`: connections at once from one address.
    static let maxPerAddressRange = 1...65_536
    /// `--push-rate N`: new envelopes a link may push per second.
    static let pushRateRange = 1...1_000_000
    /// `--max-links N`: links the overlay keeps (0: every peer found).
    static let maxLinksRange = 0...1_024

    /// A whole number within `range`, when the option was given.
    private static func expectNumber(_ value: String?, for name: String, in range: ClosedRange<Int>) throws(UsageError) {
        guard let value, Int(value).map(range.contains) != true else { return }
        throw UsageError(message: "\(name) takes a number from \(range.lowerBound) to \(range.upperBound), got \(value)")
    }

    /// How a command takes `--peer`: a node or relay `ws://HOST:PORT`, `device join` the `HOST:PORT` printed.
    enum PeerForm { case url, hostPort }

    /// Values that name an address, a nick or a room, checked before anything
    /// runs: a typo is a usage error (exit 2) and makes no data directory or
    /// identity, as an unknown option does. (They were checked as the node
    /// started: exit 1, after a new data directory was made for a bad nick.)
    private static func expectValues(_ options: Options, peers form: PeerForm) throws(UsageError) {
        for peer in options.peers {
            let (needs, ok) = form == .url ? ("ws://HOST:PORT", PeerAddress.parse(peerURL: peer) != nil) : ("HOST:PORT", PeerAddress.split(hostPort: peer) != nil)
            if !ok { throw UsageError(message: "--peer needs \(needs), got \(peer.debugDescription)") }
        }
        for (name, value) in [("--listen", options.listen), ("--metrics-listen", options.metricsListen)] {
            if let value, PeerAddress.split(hostPort: value) == nil { throw UsageError(message: "\(name) needs HOST:PORT, got \(value.debugDescription)") }
        }
        if let wanted = options.multicast, PeerAddress.split(hostPort: wanted).map({ $0.1 != 0 }) != true {
            throw UsageError(message: "--multicast needs GROUP:PORT (e.g. 239.255.73.73:7733), got \(wanted.debugDescription)")
        }
        for (name, value) in [("--nick", options.nick), ("--name", options.deviceName)] {
            if let value, Nick.checked(value) == nil { throw UsageError(message: "\(name): \(EnvelopeError.badNick(value))") }
        }
        if let room = options.room, RoomName.checked(room) == nil { throw UsageError(message: "--room: \(EnvelopeError.badRoomName(room))") }
    }

    private static func expectNoMore(_ words: [String], after count: Int) throws(UsageError) {
        if words.count > count { throw UsageError(message: "unexpected argument \(words[count])") }
    }
}

/// Where the data directory is: `--data-dir`, else `$XDG_DATA_HOME/peernode`,
/// else `$HOME/.local/share/peernode` (XDG Base Directory Specification).
func resolveDataDirectory(_ options: Options, environment: [String: String]) -> String? {
    if let dir = options.dataDirectory { return dir }
    if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/peernode" }
    if let home = environment["HOME"], !home.isEmpty { return home + "/.local/share/peernode" }
    return nil
}
