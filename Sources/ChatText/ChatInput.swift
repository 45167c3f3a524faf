import Foundation

/// One line typed at the chat prompt, parsed. A line that starts with `/` is
/// a command and is never posted by accident; `//text` posts `/text`.
public enum ChatInput: Equatable, Sendable {
    case message(String)
    case action(String)
    case nick(String)
    case join(String)
    /// `/msg NICK-OR-ID TEXT`: a direct message.
    case direct(to: String, text: String)
    /// `/query WHO`: open the direct conversation with WHO in place of the
    /// room (plain lines go there); `/query` alone closes it.
    case query(String?)
    /// `/block WHO` and `/unblock WHO`.
    case block(String, Bool)
    case history(Int)
    /// `/edit [N] TEXT`: a new text for our message numbered N in `/history` (else our last).
    case edit(number: Int?, text: String)
    /// `/delete [N]`: our message numbered N (else our last) erased for everyone.
    case delete(Int?)
    /// `/react [N] REACTION`: on message N in `/history` (else the last); again takes it back.
    case react(number: Int?, reaction: String)
    /// `/reactions [N]`: who gave which reaction to message N (else the last).
    case reactions(Int?)
    /// `/versions [N]`: every version of message N (else the last), oldest first.
    case versions(Int?)
    /// `/reply N TEXT`: a text answering message N in `/history`.
    case reply(number: Int, text: String)
    /// `/typing`: say we are typing in the open room (the terminal does it
    /// by itself as keys come; for scripts).
    case typing
    /// `/stats`: the node's counters (links, clock exchanges, refusals by reason).
    case stats
    case rooms
    /// `/switch ROOM|N`, `/1`…`/9`.
    case switchRoom(String)
    case part
    case who
    /// `/who *` (or `/online`): everyone online on the network, from presence.
    case online
    case peers
    /// `/sync`: does this node hold everything its peers announced?
    case sync
    /// `/help CMD`.
    case helpOn(String)
    /// `/search TEXT`.
    case search(String)
    /// `/mentions`: messages that named us, newest last.
    case mentions
    /// `/set receipts on|off`.
    case set(String, String)
    /// `/trust WHO` and `/untrust WHO`.
    case trust(String, Bool)
    /// `/private #room`: a new private room.
    case createPrivate(String)
    /// `/invite WHO #room`.
    case invite(who: String, room: String)
    /// `/accept [#room]` and `/decline [#room]`: answer a waiting invite
    /// (without a room: the only one waiting).
    case answerInvite(room: String, accept: Bool)
    /// `/invites`: the invites waiting for an answer.
    case invites
    /// `/devices [WHO]`, `/whois WHO`: an account's devices (ours without WHO).
    case devices(String?)
    /// `/device add`: a code for a new device of our account, served by the running node.
    case deviceAdd
    /// `/revoke DEVICE`: one of our account's devices, by id, fingerprint or name.
    case revoke(String)
    /// A private room's membership (the open room): `/kick`, `/ban`, `/op`, `/deop`, `/members`, `/leave`.
    case kick(String)
    case ban(String)
    case op(String, Bool)
    case members
    case leaveRoom
    /// `/send PATH [CAPTION]`: offer a file in the open room or conversation
    /// (a PATH with spaces in double quotes).
    case send(path: String, caption: String)
    /// `/get N [DIR]`: fetch the file offered as message N, into DIR (else
    /// the download folder); `/get` alone (nil): the file offered last here.
    case get(number: Int?, folder: String?)
    /// `/files`: the files offered in the open room or conversation, and their state.
    case files
    /// `/cancel N`: stop the `/get` of the file offered as message N; what
    /// came of it is erased. Alone (nil): the one fetch under way here.
    case cancel(number: Int?)
    case help
    /// With a reason, it is posted (as an action) to the current room first.
    case quit(reason: String)
    /// `/away [reason]` (nil: `/back`): what our presence says.
    case away(String?)
    /// `/clear`: the terminal's screen cleared (Ctrl-L).
    case clear
    case empty
    case error(String)

    public static let defaultHistory = 20
    /// `/history N` shows at most this many lines.
    public static let maximumHistory = 10_000
    /// Words one `/search` may hold (the page's search too): the full-text
    /// index's cost grows with their square (3,000 words 54 ms, 100,000 more
    /// than 30 s with the node's loop held); more is refused, saying so.
    public static let maximumSearchWords = 64

    /// The words of a search query, as the index splits them (any white space).
    public static func searchWords(_ query: String) -> Int { query.split(whereSeparator: { $0.isWhitespace }).count }

    /// Every command: the words that call it, its usage and what it does.
    /// `/help`, `/help CMD` and Tab completion all come from this table.
    public static let commands: [(names: [String], usage: String, help: String)] = [
        (["edit"], "/edit [N] TEXT", "replace the text of your last message (or of message N in /history) for everyone; shown (edited)"),
        (["delete"], "/delete [N]", "take back your last message (or message N in /history): its text is erased on every node"),
        (["reply"], "/reply N TEXT", "answer message N in /history: shown with a one-line quote of it"),
        (["react"], "/react [N] EMOJI", "react to message N in /history (or the last one), shown as counts; the same again takes it back"),
        (["reactions"], "/reactions [N]", "who reacted to message N (or the last one), and with what"),
        (["versions"], "/versions [N]", "what message N (or the last one) said before each edit, oldest first"),
        (["send"], "/send PATH [caption]", "offer a file here: others fetch it with /get N, verified chunk by chunk, from whoever holds it (a PATH with spaces in \"quotes\", or as a shell takes it)"),
        (["get"], "/get [N [DIR]]", "fetch the file offered as message N (alone: the last file offered here) into DIR (default: your download folder); never overwrites, says where it went"),
        (["files"], "/files", "the files offered in this room or conversation: size, from whom, fetched or not"),
        (["cancel"], "/cancel [N]", "stop fetching the file offered as message N (alone: the one being fetched here): what came of it is erased (/get N starts it again)"),
        (["typing"], "/typing", "tell the room you are typing (the prompt does it as you type; for scripts): shown to the others for a few seconds"),
        (["members"], "/members", "who is in this private room, with their roles (owner, admin, member), and who is banned"),
        (["kick"], "/kick WHO", "remove WHO from this private room: the room gets a new key they never see (owner and admins)"),
        (["ban"], "/ban WHO", "remove WHO and refuse them for good: no invite lets them back (owner and admins)"),
        (["op", "deop"], "/op WHO", "make WHO an admin of this private room (the owner only); /deop WHO makes them a member again"),
        (["leave"], "/leave", "leave this private room for good: the others get a new key (/part only stops showing it)"),
        (["join", "j"], "/join #room", "switch to a room (created on first use); /j for short"),
        (["part", "close"], "/part", "leave the current room (back to #general); in a /query, close it (/close is the same)"),
        (["private"], "/private #room", "make a private room: only those you /invite can read it"),
        (["invite"], "/invite WHO #room", "let WHO into one of your private rooms (sent as a direct message)"),
        (["invites"], "/invites", "invites to private rooms waiting for your answer"),
        (["accept", "decline"], "/accept [#room]", "join the private room you were invited to (/decline [#room] refuses it); nothing joins you without this"),
        (["rooms"], "/rooms", "your rooms, most recent first, with unread counts and the last message"),
        (["switch", "window"], "/switch ROOM|N", "open a window: a room by name, or a room or conversation by its number in /rooms (also /window N, /1../9, Alt-1..9)"),
        (["msg", "m"], "/msg WHO TEXT", "a direct message; WHO is a nick, nick·fp or a 64-hex id; /m for short"),
        (["query", "q"], "/query [WHO]", "open your direct conversation with WHO in place of the room: lines go to WHO, /history, /edit, /reply… act on it; /query or /part closes it"),
        (["me"], "/me TEXT", "an action: * alice waves"),
        (["nick"], "/nick NAME", "change the nick shown next to your fingerprint"),
        (["who", "names"], "/who", "who has posted in this room: online, away or last seen, and linked or not (/names is the same)"),
        (["online"], "/who *", "everyone online on the network now, in any room (also /online)"),
        (["peers"], "/peers", "linked and discovered nodes: fingerprint, address, since, round trip, sync state"),
        (["sync"], "/sync", "whether this node holds everything its peers have announced, and what is missing from whom"),
        (["history"], "/history [N]", "the last N messages of the room (default 20)"),
        (["search"], "/search TEXT", "messages you can read that contain every word of TEXT, newest first"),
        (["mentions"], "/mentions", "messages that named you (your nick as a word), the newest 50, the newest last; [Act: 2,4*] before the prompt lists rooms with news, * where you were named"),
        (["whois"], "/whois WHO", "who WHO is: id, fingerprint and the account's devices (name, id, last seen)"),
        (["devices"], "/devices [WHO]", "the devices of your account (or of WHO's): name, id, when each was last seen; `peernode device add` links one"),
        (["device"], "/device add", "link a new machine to your account: shows a code for `peernode device join CODE` there (10 minutes, 3 tries)"),
        (["revoke"], "/revoke DEVICE", "revoke one of your devices (a lost laptop; its name, fingerprint or id from /devices): everyone refuses what it signs from now on"),
        (["trust", "untrust"], "/trust WHO", "mark WHO as verified (you compared the fingerprint with them): shown with ✔; /untrust WHO undoes it"),
        (["block", "unblock", "ignore", "unignore"], "/block WHO", "refuse WHO's links and hide their messages; /unblock WHO undoes it (/ignore and /unignore are the same)"),
        (["set"], "/set receipts on|off", "send read receipts when you read a room (on by default at a terminal)"),
        (["stats"], "/stats", "the node's counters: links, clock exchanges, refusals by reason"),
        (["help"], "/help [CMD]", "this list, or one command"),
        (["quit", "exit"], "/quit [reason]", "leave; everyone online sees you quit, with the reason (Ctrl-D or Ctrl-C on an empty line leave too; Ctrl-C clears a typed line)"),
        (["clear"], "/clear", "clear the screen (also Ctrl-L); /history N shows the last N messages again"),
        (["away"], "/away [reason]", "say you are away (in /who and on the page, network-wide); /back says you are here again"),
    ]

    /// A path (in quotes, or with `\` before its spaces, when it has any) and the text after it.
    static func pathAndRest(_ text: String) -> (path: String, rest: String)? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // In "double" or 'single' quotes (a terminal that pastes a dropped file quotes it so).
        if let quote = quoteOpening(trimmed) {
            let body = trimmed.dropFirst()
            guard let end = body.firstIndex(of: quote), end != body.startIndex else { return nil }
            return (String(body[..<end]), String(body[body.index(after: end)...]).trimmingCharacters(in: .whitespaces))
        }
        let (path, end) = unescaped(trimmed[...], stoppingAtSpace: true)
        guard !path.isEmpty else { return nil }
        return (path, String(trimmed[end...]).trimmingCharacters(in: .whitespaces))
    }

    /// The paths a line holds when it is nothing but paths that start with
    /// `/` or `~`, one after another, each quoted or with its spaces
    /// escaped, as a terminal pastes several files dropped on it
    /// (`'/a/q3 report.pdf' '/a/notes.txt' `); nil for anything else.
    public static func droppedPaths(_ line: String) -> [String]? {
        var rest = line.trimmingCharacters(in: .whitespaces)
        var paths: [String] = []
        while !rest.isEmpty {
            // Each word takes at least one character, so this ends.
            guard let (path, after) = pathAndRest(rest), path.hasPrefix("/") || path.hasPrefix("~") else { return nil }
            paths.append(path)
            rest = after
        }
        return paths.isEmpty ? nil : paths
    }

    /// A path that is all the rest of a line (`/get N DIR`): quoted or
    /// escaped as `pathAndRest` takes it, and bare spaces kept (nothing can
    /// follow it). Nil for text after a closing quote.
    static func wholePath(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let (first, rest) = pathAndRest(trimmed) else { return nil }
        if rest.isEmpty { return first }
        return quoteOpening(trimmed) == nil ? unescaped(trimmed[...], stoppingAtSpace: false).text : nil
    }

    /// The quote `text` opens with, if it does (`"` or `'`).
    private static func quoteOpening(_ text: String) -> Character? {
        text.first.flatMap { $0 == "\"" || $0 == "'" ? $0 : nil }
    }

    /// `text` as a shell reads a bare word: a backslash keeps the character
    /// after it (`my\ docs`); up to the first bare space when
    /// `stoppingAtSpace`. The text, and where it stopped.
    private static func unescaped(_ text: Substring, stoppingAtSpace: Bool) -> (text: String, end: Substring.Index) {
        var out = "", escaped = false
        var end = text.startIndex
        while end < text.endIndex {
            let c = text[end]
            if escaped || c != "\\" {
                if !escaped, stoppingAtSpace, c == " " { break }
                out.append(c)
                escaped = false
            } else {
                escaped = true
            }
            end = text.index(after: end)
        }
        return (escaped ? out + "\\" : out, end)
    }

    public static var helpText: String {
        // As wide as the longest usage, so none is cut short.
        let width = (commands.map(\.usage.count).max() ?? 16) + 2
        return (["commands:"] + commands.map { "  " + $0.usage.padding(toLength: width, withPad: " ", startingAt: 0) + $0.help }
            + ["  " + "//text".padding(toLength: width, withPad: " ", startingAt: 0) + "post a line that starts with /"]).joined(separator: "\n")
    }

    /// Every command word, for Tab completion.
    public static let commandNames = commands.flatMap { $0.names.map { "/" + $0 } }

    /// What an IRC user's commands that peernode does not have yet are answered.
    static let reflexes: [String: String] = [
        "list": "/list: there is no list of public rooms yet; /rooms lists yours, /join #name joins one",
        "topic": "/topic: rooms have no topics; say what a room is for in a message there (/history shows it to whoever joins), and /rooms shows each room's last message",
    ]

    public static func parse(_ raw: String) -> ChatInput {
        let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
        // Scalar by scalar: Foundation's trimming bridged every typed line through NSString (10 µs of a post).
        if line.unicodeScalars.allSatisfy({ CharacterSet.whitespaces.contains($0) }) { return .empty }
        if line.hasPrefix("//") { return .message(String(line.dropFirst())) }
        guard line.hasPrefix("/") else { return .message(line) }
        let body = line.dropFirst()
        let name = body.prefix { $0 != " " }
        let argument = body.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
        switch name {
        case "me":
            return argument.isEmpty ? .error("/me needs some text: /me waves") : .action(argument)
        case "nick":
            return argument.isEmpty ? .error("/nick needs a name: /nick alice") : .nick(argument)
        case "msg", "m":
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
                return .error("/msg needs a recipient and text: /msg alice hello")
            }
            return .direct(to: parts[0], text: parts[1])
        case "query", "q":
            guard !argument.contains(" ") else { return .error("/query takes one person: /query alice (or nothing, to close it)") }
            return .query(argument.isEmpty ? nil : argument)
        case "private":
            return argument.isEmpty || argument.contains(" ") ? .error("/private needs a room name: /private #team") : .createPrivate(argument)
        case "invite":
            let parts = argument.split(separator: " ").map(String.init)
            guard parts.count == 2 else { return .error("/invite needs someone and a room: /invite bob #team") }
            return .invite(who: parts[0], room: parts[1])
        case "accept", "decline":
            guard !argument.contains(" ") else { return .error("/\(name) takes at most one room: /\(name) #team") }
            return .answerInvite(room: argument, accept: name == "accept")
        case "trust", "untrust":
            guard !argument.isEmpty, !argument.contains(" ") else { return .error("/\(name) needs one identity: /\(name) alice·k3fq") }
            return .trust(argument, name == "trust")
        case "block", "unblock", "ignore", "unignore":
            guard !argument.isEmpty, !argument.contains(" ") else { return .error("/\(name) needs one identity: /\(name) alice·k3fq") }
            return .block(argument, name == "block" || name == "ignore")
        case "join", "j":
            return argument.isEmpty ? .error("/join needs a room: /join #random") : .join(argument)
        case "edit":
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2, let n = Int(parts[0]), n > 0, !parts[1].trimmingCharacters(in: .whitespaces).isEmpty {
                return .edit(number: n, text: parts[1])
            }
            guard !argument.trimmingCharacters(in: .whitespaces).isEmpty else { return .error("/edit needs the new text: /edit hello, world") }
            // `/edit 3` alone names a message and no text: refused, never the last message rewritten to "3" for everyone.
            if parts.count == 1, let n = Int(parts[0]), n > 0 {
                return .error("/edit \(n) needs the new text after the number: /edit \(n) the new words")
            }
            return .edit(number: nil, text: argument)
        case "delete":
            if argument.isEmpty { return .delete(nil) }
            guard let n = Int(argument), n > 0 else { return .error("/delete takes a message number from /history, or nothing for your last message") }
            return .delete(n)
        case "reply":
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let n = Int(parts[0]), n > 0, !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
                return .error("/reply needs a message number from /history and a text: /reply 3 sounds good")
            }
            return .reply(number: n, text: parts[1])
        case "react":
            let parts = argument.split(separator: " ").map(String.init)
            if parts.count == 1 { return .react(number: nil, reaction: parts[0]) }
            guard parts.count == 2, let n = Int(parts[0]), n > 0 else {
                return .error("/react needs a reaction, after a message number from /history if not the last: /react 3 👍")
            }
            return .react(number: n, reaction: parts[1])
        case "send":
            guard let (path, caption) = Self.pathAndRest(argument) else {
                return .error("/send needs a file: /send report.pdf the numbers for Q3 (a path with spaces in \"quotes\")")
            }
            return .send(path: path, caption: caption)
        case "get":
            // Alone: the file offered last in the open room or conversation.
            if argument.isEmpty { return .get(number: nil, folder: nil) }
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            guard let first = parts.first, let n = Int(first), n > 0 else {
                return .error("/get takes the file's message number (shown as /get N beside it), or nothing for the last file here: /get 14 [DIR]")
            }
            guard parts.count > 1 else { return .get(number: n, folder: nil) }
            guard let folder = Self.wholePath(parts[1]) else {
                return .error("/get takes one folder after the number: /get 14 \"my downloads\"")
            }
            return .get(number: n, folder: folder)
        case "files":
            return argument.isEmpty ? .files : .error("/files takes no argument")
        case "cancel":
            // Alone: the one fetch under way in the open room or conversation.
            if argument.isEmpty { return .cancel(number: nil) }
            guard let n = Int(argument), n > 0 else { return .error("/cancel takes the number of the file being fetched (the N of its /get N), or nothing for the one fetched here: /cancel 14") }
            return .cancel(number: n)
        case "reactions", "versions":
            let number = argument.isEmpty ? nil : Int(argument)
            guard argument.isEmpty || (number ?? 0) > 0 else { return .error("/\(name) takes a message number from /history, or nothing for the last message") }
            return name == "reactions" ? .reactions(number) : .versions(number)
        case "history":
            if argument.isEmpty { return .history(defaultHistory) }
            guard let n = Int(argument), n > 0, n <= maximumHistory else {
                return .error("/history takes a number from 1 to \(maximumHistory)")
            }
            return .history(n)
        case "stats":
            return argument.isEmpty ? .stats : .error("/stats takes no argument")
        case "help":
            guard !argument.isEmpty else { return .help }
            let wanted = argument.hasPrefix("/") ? String(argument.dropFirst()) : argument
            guard let entry = commands.first(where: { $0.names.contains(wanted) }) else { return .error("no command /\(wanted) (try /help)") }
            return .helpOn(entry.usage + "  " + entry.help)
        case "who" where argument == "*", "online" where argument.isEmpty:
            return .online
        case "rooms", "who", "names", "peers", "part", "close", "sync", "invites", "mentions", "typing":
            guard argument.isEmpty else { return .error("/\(name) takes no argument") }
            return ["rooms": .rooms, "who": .who, "names": .who, "peers": .peers, "part": .part, "close": .part, "sync": .sync,
                    "invites": .invites, "mentions": .mentions, "typing": .typing][String(name)] ?? .empty
        case "devices":
            return .devices(argument.isEmpty ? nil : argument)
        case "device":
            guard argument == "add" else { return .error("/device add is the one device command here (/devices lists them, /revoke removes one)") }
            return .deviceAdd
        case "revoke":
            return argument.isEmpty ? .error("/revoke needs a device: its name, fingerprint or id from /devices") : .revoke(argument)
        case "kick", "ban":
            guard !argument.isEmpty, !argument.contains(" ") else { return .error("/\(name) needs someone: /\(name) bob") }
            return name == "kick" ? .kick(argument) : .ban(argument)
        case "op", "deop":
            guard !argument.isEmpty, !argument.contains(" ") else { return .error("/\(name) needs someone: /\(name) bob") }
            return .op(argument, name == "op")
        case "members", "leave":
            guard argument.isEmpty else { return .error("/\(name) takes no argument") }
            return name == "members" ? .members : .leaveRoom
        case "whois":
            return argument.isEmpty ? .error("/whois needs someone: /whois alice") : .devices(argument)
        case "set":
            let parts = argument.split(separator: " ").map(String.init)
            guard parts.count == 2, parts[0] == "receipts", parts[1] == "on" || parts[1] == "off" else {
                return .error("/set knows: /set receipts on|off")
            }
            return .set(parts[0], parts[1])
        case "search":
            if argument.isEmpty { return .error("/search needs some words: /search lunch friday") }
            let words = searchWords(argument)
            return words > maximumSearchWords ? .error("/search takes at most \(maximumSearchWords) words, got \(words)") : .search(argument)
        case "switch":
            return argument.isEmpty || argument.contains(" ") ? .error("/switch needs a room or a number: /switch #random") : .switchRoom(argument)
        case "window":
            // irssi's: /window N opens window N; /window alone lists them.
            if argument.isEmpty { return .rooms }
            guard let n = Int(argument), n > 0 else { return .error("/window takes a window's number from /rooms: /window 2") }
            return .switchRoom(String(n))
        case "1", "2", "3", "4", "5", "6", "7", "8", "9":
            return argument.isEmpty ? .switchRoom(String(name)) : .error("/\(name) takes no argument")
        case "quit", "exit":
            return .quit(reason: argument)
        case "away":
            return .away(argument.trimmingCharacters(in: .whitespaces))
        case "back":
            return argument.isEmpty ? .away(nil) : .error("/back takes no argument")
        case "clear":
            return argument.isEmpty ? .clear : .error("/clear takes no argument")
        case "list", "topic":
            // IRC reflexes with no peernode command yet: say what there is instead of "unknown".
            return .error(Self.reflexes[String(name)] ?? "unknown command /\(name) (try /help)")
        default:
            return .error("unknown command /\(name) (try /help)")
        }
    }
}

