import Crypto
import Gossip
import NetworkText
import Store

/// `/files`, and the API's `files`: the file offers that stand in one room
/// or conversation (the newest `Files.maximumListed`, oldest first), each
/// with what this node holds of it. The terminal reads it as lines, a
/// script or the page as a `files` head and one `file_listed` row each.
struct FileListing {
    /// How much of a file this node holds.
    enum State: Equatable {
        case notFetched
        /// Part of it (`bytes` of plaintext's worth of chunks).
        case fetching(bytes: UInt64)
        case held

        var name: String {
            switch self {
            case .notFetched: "not_fetched"
            case .fetching: "fetching"
            case .held: "held"
            }
        }
    }

    struct Row {
        /// Its number in the room (`/get N`); nil where it has none.
        let number: Int?
        /// The envelope that offers it.
        let envelope: Envelope
        let offer: FileOffer
        /// Its author (the account, for a device's offer).
        let from: Person
        let state: State
        /// Where the last `/get` saved it, and whether a file is there still.
        let saved: (path: String, present: Bool)?
        /// The folder a `/get` under way saves it into.
        let saving: String?
    }

    /// The room's name, or "your conversation with …", as the terminal says it.
    let place: String
    /// The room (`room`) or the other party (`with`), as the JSON names them.
    let room: RoomName?
    let with: PublicKey?
    let rows: [Row]
    /// Older offers were left out (these are the newest `Files.maximumListed`).
    let more: Bool
}

extension Files {
    /// The listing of `room`'s standing offers (`offers(in:)`), with each
    /// file's row read once: what is held of it and where it was saved.
    func listing(of room: RoomID, place: String, name: RoomName?, with: PublicKey?, people: People) throws -> FileListing {
        let byRoot = Dictionary(try repository.files().map { ($0.root, $0) }, uniquingKeysWith: { a, _ in a })
        let (offers, more) = try offers(in: room)
        let rows = offers.reversed().map { stored, offer in
            let row = byRoot[offer.root]
            let state: FileListing.State = row.map(live).map { $0.complete ? .held : .fetching(bytes: held($0)) } ?? .notFetched
            return FileListing.Row(number: stored.number, envelope: stored.envelope, offer: offer, from: people[stored.envelope.author], state: state,
                                   saved: row?.saved.map { ($0, Self.regularFileSize($0) != nil) }, saving: savingInto(offer.root))
        }
        return FileListing(place: place, room: name, with: with, rows: rows, more: more)
    }
}

extension FileListing {
    /// `/files` at a terminal: a line per standing offer, oldest first:
    /// its number, name, size and author, what is held of it, where the
    /// last `/get` saved it (or that it is gone from there) and the folder a
    /// `/get` under way saves into.
    var lines: [String] {
        let renderer = Renderer(people: People())
        var lines = rows.map { row in
            var state = switch row.state {
            case .notFetched: "not fetched"
            case let .fetching(bytes): "\(FileSize.text(bytes)) fetched"
            case .held: "held"
            }
            if let (path, present) = row.saved {
                let shown = TerminalText.sanitize(path)
                state += present ? ", saved to " + shown : ", saved to \(shown) but gone from there" + (row.number.map { " (/get \($0) saves it again)" } ?? "")
            }
            // A /get under way says where it saves (a second /get may have moved it).
            if let saving = row.saving {
                state += ", saving into " + TerminalText.sanitize(saving) + (row.number.map { " (/cancel \($0) stops it)" } ?? "")
            }
            return "  \(row.number.map { "(\($0)) " } ?? "")\(TerminalText.sanitize(row.offer.name)) \(FileSize.text(row.offer.size)) from "
                + renderer.label(row.from) + ": \(state)"
        }
        guard !lines.isEmpty else { return ["-- no files offered in \(place)"] }
        if more { lines.insert("  (older ones not listed: these are the newest \(Files.maximumListed))", at: 0) }
        return ["-- files offered in \(place):"] + lines
    }
}
