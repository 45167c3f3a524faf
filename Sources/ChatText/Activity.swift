/// Whether a message names someone: their nick as a whole word, any case
/// (`alice`, `Alice:`, `@alice` and `alice,` do; `malice` does not).
public enum Mentions {
    public static func names(_ nick: String, in text: String) -> Bool {
        let wanted = nick.lowercased()
        guard !wanted.isEmpty else { return false }
        return text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "_" && $0 != "-" }.contains { $0 == wanted }
    }
}

/// Rooms with messages the person has not seen since they last had the
/// room open, and whether any of those named them: what the prompt's act
/// list shows, in the manner of irssi's `[Act: 2,4*]`. Pure; the node
/// feeds it what it shows and which room is open.
public struct Activity: Sendable, Equatable {
    /// Room name → messages unseen there, and whether one of them named us.
    public private(set) var unseen: [String: Entry] = [:]

    public struct Entry: Sendable, Equatable {
        public var messages: Int
        public var mentioned: Bool
    }

    public init() {}

    /// A message from someone else was shown in `room` while another was open.
    public mutating func arrived(in room: String, mention: Bool) {
        var entry = unseen[room] ?? Entry(messages: 0, mentioned: false)
        entry.messages += 1
        entry.mentioned = entry.mentioned || mention
        unseen[room] = entry
    }

    /// The person opened (or left) `room`: nothing there is news any more.
    public mutating func seen(_ room: String) { unseen[room] = nil }

    public func mentioned(in room: String) -> Bool { unseen[room]?.mentioned == true }

    /// `[Act: 2,4*] `: the places in `order` (the numbers of `/rooms` and
    /// `/switch N`, from 1) of the rooms with news, `*` where one named us,
    /// in the order of those numbers; "" when there is none. Rooms not in
    /// `order` (left since) are not shown.
    public func line(order: [String]) -> String {
        let places = order.enumerated().compactMap { index, room in
            unseen[room].map { "\(index + 1)" + ($0.mentioned ? "*" : "") }
        }
        return places.isEmpty ? "" : "[Act: " + places.joined(separator: ",") + "] "
    }
}
