import Crypto
import Foundation
import ChatText
import Gossip
import Store

/// Why an invite is not even offered to the user: it names a room that
/// cannot be a private room (docs/PROTOCOL.md §14).
enum InviteRefusal: Equatable, CustomStringConvertible {
    /// Its room id is a public room's (the one its name derives, or one we know).
    case publicRoom
    /// Its room id is a direct conversation's.
    case directRoom
    /// Its key is not a room key.
    case badKey

    var description: String {
        switch self {
        case .publicRoom: return "it names a public room's id (accepting it would have replaced that room's key)"
        case .directRoom: return "it names a direct conversation's id (accepting it would have replaced that conversation's key)"
        case .badKey: return "its key is not a room key"
        }
    }
}
