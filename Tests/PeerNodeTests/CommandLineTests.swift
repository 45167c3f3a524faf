import ChatText
import Gossip
@testable import PeerNode
import Testing

@Suite("Command line")
struct CommandLineTests {
    @Test("no arguments starts a chat node with defaults")
    func defaults() throws {
        #expect(try CommandLineSpec.parse([]) == .chat(Options()))
    }

    @Test("options take a separate or an inline value")
    func options() throws {
        var expected = Options()
        expected.dataDirectory = "/d"
        expected.nick = "al"
        expected.networkName = "office"
        #expect(try CommandLineSpec.parse(["--data-dir", "/d", "--nick=al", "--network", "office"]) == .chat(expected))
        var idOptions = Options()
        idOptions.dataDirectory = "/x"
        #expect(try CommandLineSpec.parse(["id", "--data-dir", "/x"]) == .id(idOptions))
        #expect(try CommandLineSpec.parse(["--data-dir=/x", "id"]) == .id(idOptions))
    }

    @Test("help and version in every spelling")
    func help() throws {
        for args in [["help"], ["--help"], ["-h"], ["id", "--help"]] {
            #expect(try CommandLineSpec.parse(args) == .help)
        }
        #expect(try CommandLineSpec.parse(["--version"]) == .version)
        #expect(try CommandLineSpec.parse(["version"]) == .version)
        let usage = CommandLineSpec.usage
        for word in ["peernode id", "network new", "--data-dir", "--network-key-file", "--nick"] {
            #expect(usage.contains(word))
        }
    }

    @Test("network new FILE")
    func networkNew() throws {
        #expect(try CommandLineSpec.parse(["network", "new", "k.key"]) == .newNetworkKey(path: "k.key"))
        #expect(throws: UsageError.self) { try CommandLineSpec.parse(["network", "new"]) }
        #expect(throws: UsageError.self) { try CommandLineSpec.parse(["network", "old", "x"]) }
    }

    @Test("unknown options and commands, missing values: one-line errors")
    func errors() throws {
        #expect(throws: UsageError(message: "unknown option --bogus")) { try CommandLineSpec.parse(["--bogus"]) }
        #expect(throws: UsageError(message: "unknown command frobnicate")) { try CommandLineSpec.parse(["frobnicate"]) }
        #expect(throws: UsageError(message: "option --data-dir needs DIR")) { try CommandLineSpec.parse(["--data-dir"]) }
        #expect(throws: UsageError(message: "option --nick needs a non-empty NAME")) { try CommandLineSpec.parse(["--nick="]) }
        #expect(throws: UsageError(message: "unexpected argument extra")) { try CommandLineSpec.parse(["id", "extra"]) }
    }

    @Test("data directory: --data-dir, then XDG_DATA_HOME, then HOME")
    func dataDirectory() {
        var o = Options()
        #expect(resolveDataDirectory(o, environment: ["HOME": "/home/a"]) == "/home/a/.local/share/peernode")
        #expect(resolveDataDirectory(o, environment: ["HOME": "/home/a", "XDG_DATA_HOME": "/xdg"]) == "/xdg/peernode")
        // The XDG spec ignores relative paths.
        #expect(resolveDataDirectory(o, environment: ["HOME": "/home/a", "XDG_DATA_HOME": "rel"]) == "/home/a/.local/share/peernode")
        #expect(resolveDataDirectory(o, environment: [:]) == nil)
        o.dataDirectory = "/d"
        #expect(resolveDataDirectory(o, environment: ["XDG_DATA_HOME": "/xdg"]) == "/d")
    }
}

@Suite("Chat input")
struct ChatInputTests {
    @Test("plain lines are messages; commands never post by accident")
    func parse() {
        #expect(ChatInput.parse("hello") == .message("hello"))
        #expect(ChatInput.parse("  ") == .empty)
        // Blank is what Foundation calls white space (tabs, no-break and ideographic spaces…), as its trimming had it.
        #expect(ChatInput.parse("\t \u{A0}\u{3000}\r") == .empty)
        #expect(ChatInput.parse("") == .empty)
        for line in [" \u{200B} ", "\u{2028}", "\u{85}", " . ", "\u{FEFF}", "\u{1680}"] {
            #expect((ChatInput.parse(line) == .empty) == line.trimmingCharacters(in: .whitespaces).isEmpty, "\(line.unicodeScalars.map(\.value))")
        }
        #expect(ChatInput.parse("//etc/passwd is a path") == .message("/etc/passwd is a path"))
        #expect(ChatInput.parse("/me waves") == .action("waves"))
        #expect(ChatInput.parse("/me") == .error("/me needs some text: /me waves"))
        #expect(ChatInput.parse("/nick bob") == .nick("bob"))
        #expect(ChatInput.parse("/j #random") == .join("#random"))
        #expect(ChatInput.parse("/history") == .history(ChatInput.defaultHistory))
        #expect(ChatInput.parse("/history 5") == .history(5))
        #expect(ChatInput.parse("/history \(ChatInput.maximumHistory)") == .history(ChatInput.maximumHistory))
        #expect(ChatInput.parse("/history \(ChatInput.maximumHistory + 1)") == .error("/history takes a number from 1 to \(ChatInput.maximumHistory)"))
        #expect(ChatInput.parse("/history -1") == .error("/history takes a number from 1 to \(ChatInput.maximumHistory)"))
        #expect(ChatInput.parse("/quit") == .quit(reason: ""))
        #expect(ChatInput.parse("/frob x") == .error("unknown command /frob (try /help)"))
        #expect(ChatInput.parse("/") == .error("unknown command / (try /help)"))
    }
}

@Suite("Chat input: direct messages and network options")
struct DirectInputTests {
    @Test("/msg and /m take a recipient and text; without both it is an error, never a post")
    func msg() {
        #expect(ChatInput.parse("/msg alice hello there") == .direct(to: "alice", text: "hello there"))
        #expect(ChatInput.parse("/m bob hi") == .direct(to: "bob", text: "hi"))
        #expect(ChatInput.parse("/msg alice") == .error("/msg needs a recipient and text: /msg alice hello"))
        #expect(ChatInput.parse("/msg") == .error("/msg needs a recipient and text: /msg alice hello"))
    }

    @Test("/query and /q take one person, or nothing to close the conversation; more is an error, never a post")
    func query() {
        #expect(ChatInput.parse("/query bob") == .query("bob"))
        #expect(ChatInput.parse("/q bob·k3fq") == .query("bob·k3fq"))
        #expect(ChatInput.parse("/query") == .query(nil))
        #expect(ChatInput.parse("/query bob hello") == .error("/query takes one person: /query alice (or nothing, to close it)"))
        #expect(ChatInput.commandNames.contains("/query") && ChatInput.commandNames.contains("/q"))
    }

    @Test("--listen, repeated --peer, --json, --no-discovery")
    func options() throws {
        var o = Options()
        o.listen = "127.0.0.1:0"
        o.peers = ["ws://a:1", "ws://b:2"]
        o.json = true
        o.discovery = false
        #expect(try CommandLineSpec.parse(["--listen", "127.0.0.1:0", "--peer", "ws://a:1", "--peer=ws://b:2", "--json", "--no-discovery"]) == .chat(o))
        #expect(PeerAddress.parse(peerURL: "ws://10.0.0.1:7733") ?? ("", 0) == ("10.0.0.1", 7733))
        #expect(PeerAddress.parse(peerURL: "ws://[::1]:7733/peernode/1") ?? ("", 0) == ("::1", 7733))
        #expect(PeerAddress.parse(peerURL: "http://x:1") == nil)
        #expect(PeerAddress.parse(peerURL: "ws://x") == nil)
        // A bracket that does not enclose the whole host, a space, a slash or a control character: not a host.
        for bad in ["ws://[::1:7733", "ws://::1]:7733", "ws://[]:7733", "ws://a b:7733", "ws://a/b:7733", "ws://a\u{1B}b:7733", "ws://[a]b]:1"] {
            #expect(PeerAddress.parse(peerURL: bad) == nil, "\(bad.debugDescription)")
        }
        #expect(PeerAddress.split(hostPort: "fe80::1%eth0:7733") ?? ("", 0) == ("fe80::1%eth0", 7733))
        #expect(PeerAddress.split(hostPort: "[fe80::1]:0") ?? ("", 1) == ("fe80::1", 0))
    }

    @Test("a value that is not an address, a nick or a room is a usage error before anything runs: --peer, --listen, --metrics-listen, --multicast (port 0 too), --nick, --name, --room")
    func badValues() throws {
        let refused: [([String], String)] = [
            (["--peer", "http://x:1"], "--peer needs ws://HOST:PORT"),
            (["--peer", "ws://[::1"], "--peer needs ws://HOST:PORT"),
            (["relay", "--peer", "x:1"], "--peer needs ws://HOST:PORT"),
            (["device", "join", "12345678", "--peer", "ws://x:1"], "--peer needs HOST:PORT"),
            (["--listen", ":99999"], "--listen needs HOST:PORT"),
            (["relay", "--metrics-listen", "9100"], "--metrics-listen needs HOST:PORT"),
            (["--multicast", "239.1.1.1"], "--multicast needs GROUP:PORT"),
            (["--multicast", "239.1.1.1:0"], "--multicast needs GROUP:PORT"),
            (["--nick", "a b"], "--nick: not a valid nick"),
            (["--nick", String(repeating: "n", count: Nick.maximumLength + 1)], "--nick: not a valid nick"),
            (["device", "add", "--name", "my laptop"], "--name: not a valid nick"),
            (["--room", "#a b"], "--room: not a valid room name"),
        ]
        for (args, words) in refused {
            #expect(throws: UsageError.self, "\(args)") { try CommandLineSpec.parse(args) }
            do { _ = try CommandLineSpec.parse(args) } catch { #expect(error.message.hasPrefix(words), "\(args): \(error.message)") }
        }
        // At the limits: accepted.
        #expect(throws: Never.self) { try CommandLineSpec.parse(["--nick", String(repeating: "n", count: Nick.maximumLength), "--multicast", "239.1.1.1:1", "--listen", "[::]:0"]) }
        #expect(throws: Never.self) { try CommandLineSpec.parse(["device", "join", "12345678", "--peer", "10.0.0.2:7735"]) }
    }
}

@Suite("Chat input: blocking")
struct BlockInputTests {
    @Test("/block and /unblock take one identity")
    func block() {
        #expect(ChatInput.parse("/block alice·k3fq") == .block("alice·k3fq", true))
        #expect(ChatInput.parse("/unblock alice") == .block("alice", false))
        #expect(ChatInput.parse("/block") == .error("/block needs one identity: /block alice·k3fq"))
        #expect(ChatInput.parse("/block a b") == .error("/block needs one identity: /block alice·k3fq"))
    }

    @Test("relay: its options, a bad --log-format or --max-store is a usage error; sizes at their limits")
    func relayCommand() throws {
        var o = Options()
        o.logFormat = "json"
        o.maxStore = "2G"
        o.listen = "0.0.0.0:7733"
        #expect(try CommandLineSpec.parse(["relay", "--log-format", "json", "--max-store", "2G", "--listen", "0.0.0.0:7733"]) == .relay(o))
        #expect(throws: UsageError(message: "--log-format takes plain or json, got xml")) { try CommandLineSpec.parse(["relay", "--log-format", "xml"]) }
        #expect(throws: UsageError(message: "--max-store takes a size such as 500M or 2G, got lots")) { try CommandLineSpec.parse(["relay", "--max-store", "lots"]) }
        #expect(throws: UsageError(message: "unexpected argument extra")) { try CommandLineSpec.parse(["relay", "extra"]) }
        #expect(CommandLineSpec.parseSize("1") == 1)
        #expect(CommandLineSpec.parseSize("500m") == 500 << 20)
        #expect(CommandLineSpec.parseSize("16777215T") == 16_777_215 << 40, "the largest that fits")
        #expect(CommandLineSpec.parseSize("16777216T") == nil, "one past overflows")
        #expect(CommandLineSpec.parseSize("0") == nil)
        #expect(CommandLineSpec.parseSize("") == nil)
    }

    /// A numeric option: `good` values parse into `field`, `bad` ones give the range's usage error.
    func checkNumericOption(_ name: String, _ field: WritableKeyPath<Options, String?>, good: [String], bad: [String], message: String) throws {
        for value in good {
            var o = Options()
            o[keyPath: field] = value
            #expect(try CommandLineSpec.parse(["relay", name, value]) == .relay(o))
        }
        for value in bad {
            #expect(throws: UsageError(message: "\(name) takes a number from \(message), got \(value)")) {
                try CommandLineSpec.parse([name, value])
            }
        }
    }

    @Test("--max-links: 0 (the full mesh) and 1024 accepted, 1025 and words refused")
    func maxLinks() throws {
        try checkNumericOption("--max-links", \.maxLinks, good: ["0", "6", "1024"], bad: ["1025", "-1", "all"], message: "0 to 1024")
    }

    @Test("--push-rate: 1 and 1000000 accepted, 0 and 1000001 and words refused")
    func pushRate() throws {
        try checkNumericOption("--push-rate", \.pushRate, good: ["1", "1000000"], bad: ["0", "1000001", "many", "-5"], message: "1 to 1000000")
    }

    @Test("--link-cipher: auto and chachapoly accepted, anything else refused with what it takes")
    func linkCipher() throws {
        for good in ["auto", "chachapoly"] {
            guard case let .chat(options) = try CommandLineSpec.parse(["--link-cipher", good]) else { Issue.record("not a chat"); continue }
            #expect(options.linkCipher == good)
        }
        for bad in ["aesgcm", "AES", "none"] {
            #expect(throws: UsageError(message: "--link-cipher takes auto or chachapoly, got \(bad)")) { try CommandLineSpec.parse(["--link-cipher", bad]) }
        }
    }

    @Test("--max-per-address: 1 and 65536 accepted, 0 and 65537 and words refused")
    func maxPerAddress() throws {
        try checkNumericOption("--max-per-address", \.maxPerAddress, good: ["1", "65536"], bad: ["0", "65537", "lots", "-1"], message: "1 to 65536")
    }
}


@Suite("Typed lines that could change the wrong thing")
struct EditParsingTests {
    @Test("/edit N alone is refused with what it needs; /edit N TEXT edits message N; /edit TEXT edits the last; /edit alone is refused")
    func editNeedsText() {
        #expect(ChatInput.parse("/edit 1") == .error("/edit 1 needs the new text after the number: /edit 1 the new words"))
        #expect(ChatInput.parse("/edit 12 ") == .error("/edit 12 needs the new text after the number: /edit 12 the new words"))
        #expect(ChatInput.parse("/edit 3 lunch at one") == .edit(number: 3, text: "lunch at one"))
        #expect(ChatInput.parse("/edit lunch at one") == .edit(number: nil, text: "lunch at one"))
        #expect(ChatInput.parse("/edit 0") == .edit(number: nil, text: "0"), "0 is no message number: it is text")
        #expect(ChatInput.parse("/edit") == .error("/edit needs the new text: /edit hello, world"))
    }
}
