import Foundation

/// One JSON object per line on stdout (`--json`): the contract scripts and
/// bots rely on (README, "Scripting"). Strings are escaped by
/// JSONSerialization, control characters included.
enum JSONEvents {
    static func line(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return #"{"type":"error","error":"could not encode an event"}"#
        }
        return String(decoding: data, as: UTF8.self)
    }
}
