import ChatText
import Crypto
@testable import PeerNode
import Gossip
import NodeCore
import Foundation
import TestSupport
import Testing

@Suite("Room commands")
struct RoomCommandTests {
    @Test("parsing: /rooms /switch /1../9 /part /who /peers /help CMD; bad arguments are one-line errors, never posts")
    func parsing() throws {
        #expect(ChatInput.parse("/rooms") == .rooms)
        #expect(ChatInput.parse("/switch #random") == .switchRoom("#random"))
        #expect(ChatInput.parse("/3") == .switchRoom("3"))
        #expect(ChatInput.parse("/part") == .part)
        #expect(ChatInput.parse("/who") == .who)
        #expect(ChatInput.parse("/peers") == .peers)
        #expect(ChatInput.parse("/help") == .help)
        if case let .helpOn(text) = ChatInput.parse("/help /rooms") { #expect(text.hasPrefix("/rooms")) } else { Issue.record("no help for /rooms") }
        if case let .helpOn(text) = ChatInput.parse("/help m") { #expect(text.hasPrefix("/msg")) } else { Issue.record("no help for /m") }
        #expect(ChatInput.parse("/help nope") == .error("no command /nope (try /help)"))
        #expect(ChatInput.parse("/rooms now") == .error("/rooms takes no argument"))
        #expect(ChatInput.parse("/switch") == .error("/switch needs a room or a number: /switch #random"))
        // The page's address is printed on a row of its own, the address alone, so a selection takes the whole token.
        let url = "http://127.0.0.1:8080/#token=" + String(repeating: "ab", count: 32)
        let page = TerminalPresenter.lines(.webPage(url: url))
        #expect(page.count == 2 && page[1] == url && page[0].hasPrefix("-- the chat page"))
        #expect(counted(1, "author") == "1 author" && counted(0, "author") == "0 authors" && counted(2, "more author") == "2 more authors")
        // /who: one row per person, naming the devices that posted, and what their presence says.
        let bobKey = try SigningKey.generate().publicKey
        var member = Member(person: Person(key: bobKey, nick: PeerText("bob"), trusted: false, lookAlike: false, forked: false), state: .linked)
        member.devices = ["laptop", "phone\u{1B}[2J"]
        member.presence = Presence.Status(state: .away, reason: "lunch", lastSeen: 1)
        let who = TerminalPresenter.lines(.members(room: .general, [member]))
        #expect(who.count == 2 && who[1] == "   bob·\(bobKey.shortFingerprint) (laptop, phone^[[2J)  away: lunch, linked", "\(who)")
        // IRC reflexes (issue 44): the ones peernode has under another name work; the others say what there is.
        #expect(ChatInput.parse("/names") == .who && ChatInput.parse("/close") == .part)
        #expect(ChatInput.parse("/ignore bob") == .block("bob", true) && ChatInput.parse("/unignore bob") == .block("bob", false))
        #expect(ChatInput.parse("/away lunch, back at 2") == .away("lunch, back at 2") && ChatInput.parse("/away") == .away("")
                && ChatInput.parse("/back") == .away(nil) && ChatInput.parse("/window 3") == .switchRoom("3") && ChatInput.parse("/window") == .rooms && ChatInput.parse("/clear") == .clear
                && ChatInput.parse("/who *") == .online && ChatInput.parse("/online") == .online && ChatInput.parse("/who") == .who)
        for reflex in ["/list", "/topic"] {
            guard case let .error(message) = ChatInput.parse(reflex) else { Issue.record("\(reflex) is no error"); continue }
            #expect(message.hasPrefix(reflex + ": ") && !message.contains("unknown"), "\(message)")
        }
        #expect(ChatInput.parse("/0") == .error("unknown command /0 (try /help)"))
        #expect(ChatInput.parse("/quit see you") == .quit(reason: "see you"))
        #expect(ChatInput.commandNames.contains("/rooms") && ChatInput.commandNames.contains("/j"))
        // /help shows every usage whole (a long one was once cut short).
        for command in ChatInput.commands { #expect(ChatInput.helpText.contains("  " + command.usage + "  "), "\(command.usage)") }
    }

    @Test("a node's rooms: /join, /rooms most recent first with unread and last message, /switch by number and name, /part, /who, /peers")
    func rooms() async throws {
        let dir = TemporaryDirectory()
        let script = """
            hello general
            /join #random
            hello random
            /join #games
            /rooms
            /switch 2
            /who
            /peers
            /switch #games
            /part
            /rooms
            /part
            /help who

            """
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--nick", "alice", "--listen", "127.0.0.1:0"], input: script)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let firstList = try #require(lines.firstIndex(of: "-- rooms (most recent first):"))
        // Most recent message first; a room with no message yet (#games, the current one: *) last.
        #expect(lines[firstList + 1].hasPrefix(" 1. #random") && lines[firstList + 1].contains("hello random"), "\(lines[firstList + 1])")
        #expect(lines[firstList + 2].hasPrefix(" 2. #general") && lines[firstList + 2].contains("hello general"))
        #expect(lines[firstList + 3].hasPrefix("*3. #games"))
        #expect(r.stdout.contains("--- #general: last"), "/switch 2 went to #general")
        #expect(r.stdout.contains("-- #general: 1 member") && r.stdout.contains("alice·") && r.stdout.contains("  you"))
        #expect(r.stdout.contains("-- peers: 0 linked"))
        #expect(r.stdout.contains("-- left #games"))
        let secondList = try #require(lines.lastIndex(of: "-- rooms (most recent first):"))
        #expect(!lines[secondList...].prefix(4).contains { $0.contains("#games") }, "a room left is not listed")
        #expect(r.stdout.contains("error: #general is home; /quit to leave"))
        #expect(r.stdout.contains("  /who"))
    }

    @Test("/search: every word, any case, accents ignored, newest first; FTS syntax in the query is just text; history from before is found")
    func search() async throws {
        let dir = TemporaryDirectory()
        let first = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"],
                                            input: "lunch on friday?\nthe Café is closed\n/join #random\nLunch moved to noon\n")
        #expect(first.status == 0)
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: """
            /search LUNCH
            /search cafe
            /search lunch noon
            /search "unbalanced OR NEAR(
            /search

            """)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let lunch = try #require(lines.firstIndex(of: "-- 2 messages with \"LUNCH\""), "\(r.stdout)")
        #expect(lines[lunch + 1].contains("#general") && lines[lunch + 1].contains("lunch on friday?"))
        #expect(lines[lunch + 2].contains("#random") && lines[lunch + 2].contains("Lunch moved to noon"))
        #expect(r.stdout.contains("-- 1 message with \"cafe\""))
        #expect(r.stdout.contains("-- 1 message with \"lunch noon\""))
        #expect(r.stdout.contains("-- 0 messages with \"\"unbalanced OR NEAR(\""))
        #expect(r.stdout.contains("error: /search needs some words"))
    }

    @Test("the catch-up bar: none below the threshold, then the share fetched of the largest backlog seen")
    func syncBar() {
        var progress = SyncProgress()
        #expect(progress.tag(missing: SyncProgress.threshold - 1) == "")
        #expect(progress.tag(missing: 1_000) == "[sync ░░░░░░░░ 0%] ")
        #expect(progress.tag(missing: 500) == "[sync ▓▓▓▓░░░░ 50%] ")
        #expect(progress.tag(missing: 100) == "[sync ▓▓▓▓▓▓▓░ 90%] ")
        #expect(progress.tag(missing: 0) == "", "done: the bar goes")
        #expect(progress.tag(missing: 100) == "[sync ░░░░░░░░ 0%] ", "a new catch-up starts from its own backlog")
    }

    @Test("/trust marks an identity with ✔ everywhere its label shows, is kept across restarts, and /untrust removes it")
    func trust() async throws {
        let dir = TemporaryDirectory()
        let id = try await PeerNodeProcess.run(["id", "--data-dir", dir.path]).stdout.split(separator: "\n").first.map(String.init) ?? ""
        let first = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--nick", "alice", "--listen", "127.0.0.1:0"],
                                            input: "hello\n/trust \(id)\n/who\n/trust nobody\n")
        #expect(first.stdout.contains("-- trusted: alice·") && first.stdout.contains("✔ (id \(id))"), "\(first.stdout)")
        #expect(first.stdout.contains("✔  you"))
        #expect(first.stdout.contains("error: "), "an unknown identity is an error")
        let second = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery", "--listen", "127.0.0.1:0"], input: "/untrust alice\n/who\n")
        #expect(second.stdout.contains("✔> hello"), "history shows the mark after a restart: \(second.stdout)")
        #expect(second.stdout.contains("-- no longer trusted: alice·"))
        #expect(second.stdout.split(separator: "\n").last { $0.contains("you") }.map { !$0.contains("✔") } == true, "untrusted: no mark")
        #expect(ChatInput.parse("/trust") == .error("/trust needs one identity: /trust alice·k3fq"))
    }

    @Test("invite bodies: exactly the layout with a valid room name, or nothing")
    func inviteBodies() throws {
        let room = RoomID.random()
        let key = [UInt8](repeating: 7, count: 32)
        let invite = Invite(room: room, key: key, name: try RoomName("#team"))
        #expect(Invite.decode(invite.encoded) == invite)
        #expect(Invite.decode(Array(invite.encoded.prefix(68))) == nil, "no name")
        #expect(Invite.decode(Array("XXXX".utf8) + invite.encoded.dropFirst(4)) == nil)
        #expect(Invite.decode(Array(invite.encoded.prefix(68)) + Array("#bad\u{1b}[2J".utf8)) == nil, "a name with control characters")
        #expect(Invite.decode(Array(invite.encoded.prefix(68)) + [0xFF, 0xFE]) == nil, "not UTF-8")
        #expect(ChatInput.parse("/invite bob") == .error("/invite needs someone and a room: /invite bob #team"))
        #expect(ChatInput.parse("/private #team") == .createPrivate("#team"))
    }
}

