import ChatText
import Crypto
import Foundation
import Gossip
import Store

/// One command from an API client (docs/API.md, "Commands"): a JSON object
/// with `cmd`, the command's fields, and an optional `ref` echoed in its
/// answer. Parsed into what the typed line of the same command parses to,
/// so both run the same code. Pure.
struct WebCommand {
    /// A conversation a command names: a room by `room`, or a direct
    /// conversation by `with` (a 64-hex id, `nick·fp`, or a nick only one
    /// author uses).
    enum Target: Equatable {
        case room(RoomName)
        case direct(String)
    }

    enum Action {
        /// A message or `/me` in a room (the open one when nil).
        case post(text: String, kind: Kind, room: RoomName?)
        /// A direct message (answered with its id, like a post).
        case direct(to: String, text: String, kind: Kind)
        /// A page of a conversation's history (the open room when nil), before `cursor`.
        case history(Target?, limit: Int, before: HistoryCursor?)
        /// Everything in the conversation is read.
        case read(Target)
        /// Rooms joined, left and made, without changing the terminal's open room.
        case join(RoomName), part(RoomName), createPrivate(RoomName)
        /// The rooms and conversations with unread counts and last messages.
        case rooms
        case search(String)
        /// Messages that named us (`/mentions`).
        case mentions
        /// Who has posted in a room (the open one when nil).
        case who(RoomName?)
        /// A message named by its id: a new text for one of ours, ours
        /// erased for everyone, a reaction given or taken back, a reply.
        case edit(MessageID, text: String)
        case delete(MessageID)
        /// Every version of a message, as `version` events.
        case versions(MessageID)
        case react(MessageID, reaction: String)
        case reply(MessageID, text: String)
        /// "I am typing" in a conversation (the open room when nil).
        case typing(Target?)
        /// Fetch the file a message offers (into the download folder).
        case getFile(MessageID)
        case cancelFile(MessageID)
        /// The files offered in a conversation (the open room when nil), as `/files` lists them.
        case files(Target?)
        /// A file from the page: its name, size and caption, for a conversation
        /// (the open room when nil); its bytes follow as binary messages.
        case sendFile(name: String, size: UInt64, caption: String, Target?)
        /// Everything else: as the typed command.
        case input(ChatInput)
    }

    struct Failure: Error, Equatable {
        let ref: String?
        let message: String
    }

    let name: String
    let ref: String?
    let action: Action

    /// Commands and the fields each takes (strings; `limit` a number or a
    /// string of digits), for the errors and docs/API.md.
    static let fields: [String: [String]] = [
        "post": ["text", "room", "kind"],
        "msg": ["to", "text", "kind"],
        "history": ["room", "with", "limit", "before"],
        "read": ["room", "with"],
        "join": ["room"], "part": ["room"], "private": ["room"],
        "nick": ["nick"],
        "rooms": [], "search": ["text"], "mentions": [],
        "who": ["room"],
        "away": ["reason"], "back": [], "online": [],
        "peers": [], "sync": [], "stats": [], "invites": [],
        "accept": ["room"], "decline": ["room"],
        "invite": ["who", "room"],
        "edit": ["id", "text"], "delete": ["id"], "versions": ["id"], "react": ["id", "reaction"], "reply": ["id", "text"],
        "typing": ["room", "with"],
        "get": ["id"], "cancel": ["id"], "files": ["room", "with"], "send_file": ["name", "size", "caption", "room", "with"],
    ]

    /// Messages in one history page: by default, and at most.
    static let defaultHistoryPage = 50
    static let maximumHistoryPage = 500

    /// A history cursor as the API writes it: "CAUSALTIME:ID" (opaque to clients).
    static func cursorText(_ c: HistoryCursor) -> String { "\(c.causalTime):\(c.id.hex)" }

    static func cursor(_ text: String) -> HistoryCursor? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let time = Int64(parts[0]), let id = messageID(hex: String(parts[1])) else { return nil }
        return HistoryCursor(causalTime: time, id: id)
    }

    /// A message id from its 64 hex characters; nil for anything else.
    static func messageID(hex: String) -> MessageID? {
        Hex.bytes(hex).flatMap(MessageID.checked)
    }

    static func parse(_ text: String) throws(Failure) -> WebCommand {
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) } catch {
            throw Failure(ref: nil, message: "not JSON: \(error.localizedDescription)")
        }
        guard let object = parsed as? [String: Any] else {
            throw Failure(ref: nil, message: "not a JSON object")
        }
        var ref: String?
        if let r = object["ref"] {
            guard let s = r as? String, s.utf8.count <= WebService.maximumRefLength else {
                throw Failure(ref: nil, message: "ref must be a string of at most \(WebService.maximumRefLength) bytes")
            }
            ref = s
        }
        guard let name = object["cmd"] as? String else { throw Failure(ref: ref, message: "no cmd (a string)") }
        guard let allowed = fields[name] else {
            throw Failure(ref: ref, message: "unknown cmd \(WebAccess.quoted(name)); known: \(fields.keys.sorted().joined(separator: ", "))")
        }
        for key in object.keys where key != "cmd" && key != "ref" && !allowed.contains(key) {
            throw Failure(ref: ref, message: "\(name) takes no field \(WebAccess.quoted(key))")
        }
        func string(_ key: String, required: Bool = true) throws(Failure) -> String? {
            guard let value = object[key] else {
                if required { throw Failure(ref: ref, message: "\(name) needs \(key) (a string)") }
                return nil
            }
            guard let s = value as? String else { throw Failure(ref: ref, message: "\(key) must be a string") }
            return s
        }
        func need(_ key: String) throws(Failure) -> String { try string(key) ?? "" }
        func room(required: Bool = false) throws(Failure) -> RoomName? {
            guard let name = try string("room", required: required) else { return nil }
            do { return try RoomName(name) } catch { throw Failure(ref: ref, message: "\(error)") }
        }
        func target() throws(Failure) -> Target? {
            let named = try room(), with = try string("with", required: false)
            switch (named, with) {
            case (nil, nil): return nil
            case let (r?, nil): return .room(r)
            case let (nil, w?):
                guard !w.isEmpty else { throw Failure(ref: ref, message: "with names someone: an id, nick·fp or nick") }
                return .direct(w)
            case (.some, .some): throw Failure(ref: ref, message: "\(name) takes room or with, not both")
            }
        }
        func messageID() throws(Failure) -> MessageID {
            guard let id = WebCommand.messageID(hex: try need("id")) else {
                throw Failure(ref: ref, message: "id names a message: its 64-hex id, as in a message event")
            }
            return id
        }
        /// `kind`: "text" (the default) or "action" (`/me`).
        func kind() throws(Failure) -> Kind {
            switch try string("kind", required: false) ?? "text" {
            case "text": return .text
            case "action": return .action
            case let other: throw Failure(ref: ref, message: "kind is text or action, not \(WebAccess.quoted(other))")
            }
        }
        let action: Action
        switch name {
        case "post":
            let text = try need("text")
            guard !text.isEmpty else { throw Failure(ref: ref, message: "post needs a non-empty text") }
            action = .post(text: text, kind: try kind(), room: try room())
        case "msg":
            let to = try need("to"), text = try need("text")
            guard !to.isEmpty, !text.isEmpty else { throw Failure(ref: ref, message: "msg needs a non-empty to and text") }
            action = .direct(to: to, text: text, kind: try kind())
        case "history":
            let target = try target()
            var limit = defaultHistoryPage
            if let value = object["limit"] {
                // A JSON number (50, 50.0) or a string of digits ("50"); not true, 50.5 or 1e300.
                // JSON's true and false are numbers of type "c" here, and 1 `is Bool` too.
                let isBool = (value as? NSNumber).map { String(cString: $0.objCType) == "c" } ?? false
                let n = isBool ? nil : (value as? Int) ?? (value as? String).flatMap { Int($0) }
                guard let n, n >= 1, n <= maximumHistoryPage else {
                    throw Failure(ref: ref, message: "limit is a number from 1 to \(maximumHistoryPage)")
                }
                limit = n
            }
            var before: HistoryCursor?
            if let text = try string("before", required: false) {
                guard let c = cursor(text) else { throw Failure(ref: ref, message: "before is a cursor from an earlier history answer") }
                before = c
            }
            action = .history(target, limit: limit, before: before)
        case "read":
            guard let target = try target() else { throw Failure(ref: ref, message: "read needs room or with") }
            action = .read(target)
        case "join": action = .join(try room(required: true) ?? .general)
        case "part": action = .part(try room(required: true) ?? .general)
        case "private": action = .createPrivate(try room(required: true) ?? .general)
        case "nick": action = .input(.nick(try need("nick")))
        case "rooms": action = .rooms
        case "search":
            let text = try need("text")
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw Failure(ref: ref, message: "search needs some words") }
            let words = ChatInput.searchWords(text)
            guard words <= ChatInput.maximumSearchWords else {
                throw Failure(ref: ref, message: "search takes at most \(ChatInput.maximumSearchWords) words, got \(words)")
            }
            action = .search(text)
        case "mentions": action = .mentions
        case "edit", "reply":
            let id = try messageID(), text = try need("text")
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw Failure(ref: ref, message: "\(name) needs a non-empty text") }
            action = name == "edit" ? .edit(id, text: text) : .reply(id, text: text)
        case "delete": action = .delete(try messageID())
        case "versions": action = .versions(try messageID())
        case "react": action = .react(try messageID(), reaction: try need("reaction"))
        case "typing": action = .typing(try target())
        case "get": action = .getFile(try messageID())
        case "cancel": action = .cancelFile(try messageID())
        case "files": action = .files(try target())
        case "send_file":
            let fileName = try need("name")
            guard let size = UInt64(try need("size")), size <= WebService.maximumUploadBytes else {
                throw Failure(ref: ref, message: "size is the file's bytes, 1 to \(WebService.maximumUploadBytes) (\(FileSize.text(WebService.maximumUploadBytes)), the largest file)")
            }
            // Said as the terminal's /send says it: a person dropped an empty file.
            guard size >= 1 else { throw Failure(ref: ref, message: NodeError.fileEmpty(path: fileName).description) }
            guard !fileName.isEmpty, fileName.utf8.count <= FileOffer.maximumName else { throw Failure(ref: ref, message: "name is 1 to \(FileOffer.maximumName) bytes") }
            action = .sendFile(name: fileName, size: size, caption: try string("caption", required: false) ?? "", try target())
        case "who": action = .who(try room())
        case "peers": action = .input(.peers)
        case "sync": action = .input(.sync)
        case "stats": action = .input(.stats)
        case "invites": action = .input(.invites)
        case "accept": action = .input(.answerInvite(room: try need("room"), accept: true))
        case "decline": action = .input(.answerInvite(room: try need("room"), accept: false))
        case "invite": action = .input(.invite(who: try need("who"), room: try need("room")))
        case "away": action = .input(.away(try string("reason", required: false) ?? ""))
        case "back": action = .input(.away(nil))
        case "online": action = .input(.online)
        default: throw Failure(ref: ref, message: "unknown cmd \(WebAccess.quoted(name))")
        }
        return WebCommand(name: name, ref: ref, action: action)
    }
}
