import Gossip

/// Every way opening or using the store can fail.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Another process (or another Store in this one) holds the directory's lock.
    case dataDirectoryInUse(path: String)
    /// The database file exists but is not a peernode database; it is left untouched.
    case notAPeernodeDatabase(path: String)
    /// The file is a database, but damaged (SQLite says malformed); left untouched.
    case damagedDatabase(path: String)
    /// Written by a newer peernode whose schema this build does not know.
    case newerSchema(path: String, found: Int, supported: Int)
    /// SQLite would not switch to write-ahead logging.
    case walUnavailable(path: String, mode: String)
    case directory(path: String, operation: String, errno: Int32)
    case sqlite(SQLiteError)
    case envelope(EnvelopeError)
    /// A stored row that fails to decode: the file was changed behind our back.
    case corruptRow(String)

    public var description: String {
        switch self {
        case let .dataDirectoryInUse(path):
            return "data directory \(path) in use: another peernode is running with it "
                + "(stop it, or choose another directory with --data-dir)"
        case let .notAPeernodeDatabase(path):
            return "\(path) is not a peernode database; it was left untouched "
                + "(move it away, or choose another directory with --data-dir)"
        case let .damagedDatabase(path):
            return "\(path) is damaged (SQLite: database disk image is malformed); it was left untouched. "
                + "Restore it from a backup, or move it away and start again linked to your peers: "
                + "they send back what they hold (wait for them before you post)"
        case let .newerSchema(path, found, supported):
            return "\(path) has schema version \(found), but this peernode knows versions up to \(supported): "
                + "run a newer peernode"
        case let .walUnavailable(path, mode):
            return "\(path): SQLite would not use write-ahead logging (journal mode is \(mode))"
        case let .directory(path, operation, errno):
            let hint = errno == EROFS || errno == EACCES || errno == EPERM ? " (peernode needs to write in its data directory: choose another with --data-dir)" : ""
            return "\(operation) \(path) failed: \(String(cString: strerror(errno)))" + hint
        case let .sqlite(e): return e.description
        case let .envelope(e): return e.description
        case let .corruptRow(what): return "corrupt row in the database: \(what)"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
