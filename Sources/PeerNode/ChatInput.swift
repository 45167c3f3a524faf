import Gossip

/// One line typed at the chat prompt, parsed. A line that starts with `/` is
/// a command and is never posted by accident; `//text` posts `/text`.
enum ChatInput: Equatable {
    case message(String)
    case action(String)
    case nick(String)
    case join(String)
    /// `/msg NICK-OR-ID TEXT`: a direct message.
    case direct(to: String, text: String)
    /// `/block WHO` and `/unblock WHO`.
    case block(String, Bool)
    case history(Int)
    /// `/stats`: the node's counters (links, clock exchanges, refusals by reason).
    case stats
    case help
    case quit
    case empty
    case error(String)

    static let defaultHistory = 20
    /// `/history N` shows at most this many lines.
    static let maximumHistory = 10_000

    static let helpText = """
        commands:
          /join #room       switch to a room (created on first use)
          /msg WHO TEXT     a direct message; WHO is a nick, nick·fp or a 64-hex id (/m)
          /block WHO        refuse WHO's links and hide their messages (/unblock WHO undoes it)
          /me TEXT          an action: * alice waves
          /nick NAME        change the nick shown next to your fingerprint
          /history [N]      show the last N messages of the room (default 20)
          /stats            the node's counters: links, clock exchanges, refusals by reason
          /help             this list
          /quit             leave
          //text            post a line that starts with /
        """

    /// Every command word, for Tab completion.
    static let commandNames = ["/join", "/j", "/msg", "/m", "/block", "/unblock", "/me", "/nick", "/history", "/stats", "/help", "/quit", "/exit"]

    static func parse(_ raw: String) -> ChatInput {
        let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
        if line.trimmingCharacters(in: .whitespaces).isEmpty { return .empty }
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
        case "block", "unblock":
            guard !argument.isEmpty, !argument.contains(" ") else { return .error("/\(name) needs one identity: /\(name) alice·k3fq") }
            return .block(argument, name == "block")
        case "join", "j":
            return argument.isEmpty ? .error("/join needs a room: /join #random") : .join(argument)
        case "history":
            if argument.isEmpty { return .history(defaultHistory) }
            guard let n = Int(argument), n > 0, n <= maximumHistory else {
                return .error("/history takes a number from 1 to \(maximumHistory)")
            }
            return .history(n)
        case "stats":
            return argument.isEmpty ? .stats : .error("/stats takes no argument")
        case "help":
            return .help
        case "quit", "exit":
            return .quit
        default:
            return .error("unknown command /\(name) (try /help)")
        }
    }
}

import Foundation
