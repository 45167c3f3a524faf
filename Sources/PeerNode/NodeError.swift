import ChatText
import Crypto
import Gossip

/// Every failure the node program reports, by cause: at start
/// (`peernode: <description>`, exit 1) or as the answer to a command
/// (`error: <description>` at the terminal, `{"type":"error"}` in --json).
/// The description is the text the user reads; the case is what code and
/// tests match. (The command-line parser keeps its own `UsageError`, thrown
/// before there is a node.)
enum NodeError: Error, CustomStringConvertible, Equatable {
    // Start-up.
    case noDataDirectory
    case noSuchDataDirectory(String)
    case networkGivenTwice
    /// An address option that is not what it needs (`--listen`, `--peer`, `--multicast`, `--metrics-listen`).
    case badAddress(option: String, needs: String, got: String)
    /// A port that could not be bound; `serving` says for what ("listen", "serve metrics").
    case cannotBind(serving: String, address: String, reason: String)
    case cannotOpenLog(path: String, reason: String)

    // Commands.
    /// `/edit` or `/delete` without a number, and no message of ours in the room.
    case noOwnMessage(String)
    /// `/react` without a number, and no message in the room.
    case noMessageIn(String)
    case conversationWithYourself
    /// `/edit N` or `/delete N` for a number the room has no message at.
    case noMessageNumbered(Int)
    case notYourMessage(Int)
    /// The API named a message by an id this node holds no message at.
    case noMessageWithID(MessageID)
    case notYourMessageID
    /// Signed before envelope version 3: its signature covers the body, which cannot go.
    case cannotErase(version: UInt8)
    case alreadyDeleted
    case tooManyEdits(limit: Int)
    case badReaction(limit: Int)
    case editTooLong(limit: Int)
    case messageToSelf
    case notSealable(PublicKey)
    case noRoomKey(RoomName)
    case receiptRoomNotWritable
    case nobodyKnownAs(String)
    case ambiguous(String, candidates: [PublicKey])
    case alreadyPrivate(RoomName)
    case publicRoomNamed(RoomName)
    case notYourPrivateRoom(RoomName)
    /// `/accept` or `/decline` without a name, and none is waiting.
    case noInviteWaiting
    /// `/accept` or `/decline` without a name, and this many (more than one) are waiting.
    case invitesWaiting(Int)
    case noInviteTo(String)
    /// `/accept` or `/decline` of a private room we are in already (accepted here, or on another device of ours).
    case alreadyInPrivateRoom(RoomName)
    case inviteRefused(InviteRefusal)
    case noRoomNumbered(Int)
    case notIn(RoomName)
    case generalIsHome
    /// A command as typed that `ChatInput` could not read (its own words).
    case badCommand(String)
    /// Only an account's own key can link devices; this node is a device of `account`.
    case notAccountKey(PublicKey)
    /// This identity belongs to an account already, or has devices of its own.
    case alreadyInAccount(PublicKey)
    /// No device of our account goes by that id, fingerprint or name.
    case noDevice(String)
    case cannotRevokeAccountKey
    /// Membership of a private room (docs/PROTOCOL.md §14).
    case notAMember
    case roleTooLow(needs: String)
    case banned(PublicKey)
    case notInRoom(PublicKey)
    /// A concurrent change left the room's key with someone removed.
    case waitingForNewKey(RoomName)
    /// The room has membership events (its invite said so), but its
    /// founding one has not reached this node yet.
    case membershipNotArrived(RoomName)
    /// Files (docs/PROTOCOL.md §16).
    case fileUnreadable(path: String, reason: String)
    case fileTooLarge(path: String, size: UInt64)
    case fileEmpty(path: String)
    case noFileHere(String)
    case whichFetch(String, numbers: [Int])
    case notAFile(Int)
    case fileNotSaved(path: String, reason: String)
    /// `/cancel` of a file no `/get` is fetching; `whole`: it is held whole already.
    case notBeingFetched(Int, whole: Bool)
    case noDownloadFolder

    var description: String {
        switch self {
        case let .noOwnMessage(place): "no message of yours in \(place) to change"
        case let .noMessageIn(place): "no message in \(place) yet"
        case .conversationWithYourself: "that is you (or another device of your account): /query needs someone else"
        case let .noMessageNumbered(n): "no message numbered \(n) here (/history shows the numbers)"
        case let .notYourMessage(n): "message \(n) is not yours: only its author can change it"
        case let .noMessageWithID(id): "no message \(id.hex) here that you can read"
        case .notYourMessageID: "that message is not yours: only its author can change it"
        case let .cannotErase(version):
            "that message was sent as envelope version \(version), whose signature covers its text: it cannot be erased (only messages from version 3 on can)"
        case .alreadyDeleted: "that message was deleted"
        case let .tooManyEdits(limit): "that message has had \(limit) edits, the most one message takes"
        case let .badReaction(limit): "a reaction is one word of at most \(limit) bytes (an emoji, say): /react 👍"
        case let .editTooLong(limit): "an edit replaces one message, at most \(limit) bytes; post the rest as a new message"
        case .noDataDirectory: "no data directory: set HOME or XDG_DATA_HOME, or pass --data-dir DIR"
        case let .noSuchDataDirectory(path): "no data directory at \(TerminalText.sanitize(path)): peernode id prints the identity of one that exists (a node started with --data-dir \(TerminalText.sanitize(path)) makes it)"
        case .networkGivenTwice: "give --network or --network-key-file, not both"
        case let .badAddress(option, needs, got): "\(option) needs \(needs), got \(got)"
        case let .cannotBind(serving, address, reason): "cannot \(serving) on \(address): \(reason)"
        case let .cannotOpenLog(path, reason): "cannot open the log file \(path): \(reason)"
        case let .notSealable(peer): "\(peer.shortFingerprint) is not a key a message can be sealed to"
        case .messageToSelf: "that is you: for notes to yourself, make a room of your own (/private #notes); your other devices read it too"
        case let .noRoomKey(room): "no key for \(room.value)"
        case .receiptRoomNotWritable: "a receipt for a room this node cannot write to"
        case let .nobodyKnownAs(who): "nobody known as \(who): use a nick, nick·fingerprint or a 64-hex id"
        case let .ambiguous(who, candidates):
            "\(who) is ambiguous: \(candidates.map { "\(who)·\($0.shortFingerprint)" }.joined(separator: ", "))"
        case let .alreadyPrivate(name): "\(name.value) is already one of your private rooms"
        case let .publicRoomNamed(name): "\(name.value) is a public room you are in; choose another name for a private room"
        case let .notYourPrivateRoom(name):
            "\(name.value) is not a private room of yours: /invite, /members, /kick, /ban, /op and /leave act on those (/private NAME makes one)"
        case .noInviteWaiting: "no invite is waiting"
        case let .invitesWaiting(count): "\(count) invites are waiting: name one (/invites lists them)"
        case let .noInviteTo(name): "no invite to \(TerminalText.sanitize(name)) is waiting (/invites lists them)"
        case let .alreadyInPrivateRoom(name):
            "you are in \(name.value) already (an invite accepted on one of your devices is accepted on all of them; /leave leaves it for good)"
        case let .inviteRefused(refusal): "this invite cannot be accepted: \(refusal)"
        case let .noRoomNumbered(n): "no room \(n) (see /rooms)"
        case let .notIn(room): "not in \(room.value) (/join \(room.value) first)"
        case .generalIsHome: "#general is home; /quit to leave"
        case let .badCommand(message): message
        case let .notAccountKey(account):
            "this machine is a device of account \(account.shortFingerprint) (\(account.hex)): link new devices from the account's first machine"
        case let .noDevice(who): "no device of your account is called \(TerminalText.sanitize(who)) (/devices lists them)"
        case .notAMember: "you are no longer a member of this room"
        case let .roleTooLow(needs): "only \(needs) can do that in this room (/members shows the roles)"
        case let .banned(key): "\(key.shortFingerprint) is banned from this room"
        case let .notInRoom(key): "\(key.shortFingerprint) is not a member of this room (/members lists them)"
        case let .membershipNotArrived(room): "\(room.value)'s membership has not reached this node yet (its founding event is missing); try again once it has caught up (/sync)"
        case let .waitingForNewKey(room): "\(room.value) is waiting for a new key (a concurrent change left the last one with someone removed); try again in a moment"
        case let .fileUnreadable(path, reason): "cannot read \(TerminalText.sanitize(path)): \(reason)"
        case let .fileTooLarge(path, size):
            "\(TerminalText.sanitize(path)) is \(size) bytes (\(FileSize.text(size))): files up to 4 GiB (\(FileOffer.maximumSize) bytes) can be sent"
        case let .fileEmpty(path): "\(TerminalText.sanitize(path)) is empty: there is nothing to send"
        case let .notAFile(n): "message \(n) offers no file (/files lists those here)"
        case let .whichFetch(place, numbers) where numbers.isEmpty: "no file is being fetched in \(TerminalText.sanitize(place))"
        case let .whichFetch(place, numbers):
            "\(numbers.count) files are being fetched in \(TerminalText.sanitize(place)): " + numbers.map { "/cancel \($0)" }.joined(separator: " or ")
        case let .noFileHere(place): "no file is offered in \(TerminalText.sanitize(place)) yet: /get N fetches the one offered as message N"
        case let .fileNotSaved(path, reason): "cannot save to \(TerminalText.sanitize(path)): \(reason)"
        case let .notBeingFetched(n, whole):
            whole ? "/cancel \(n): it is fetched already (/delete \(n) takes back a file you sent, for everyone)" : "/cancel \(n): it is not being fetched"
        case .noDownloadFolder: "no download folder: set HOME or XDG_DOWNLOAD_DIR, or give one: /get N DIR"
        case .cannotRevokeAccountKey: "the account key is the account: it cannot be revoked by its devices"
        case let .alreadyInAccount(account):
            "this identity already belongs to account \(account.shortFingerprint) (\(account.hex)) or has devices: join with a new --data-dir"
        }
    }
}
