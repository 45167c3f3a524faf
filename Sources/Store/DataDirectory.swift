#if canImport(Glibc)
import Glibc
#endif

/// The node's data directory: created 0700 when missing, and locked for the
/// life of this value (`flock` on `lock`), so a second peernode using the same
/// directory gets "data directory in use" instead of sharing the database.
public final class DataDirectory {
    /// Permission bits of a directory this module creates.
    public static let mode: mode_t = 0o700
    public static let lockFileName = "lock"
    public static let databaseFileName = "peernode.db"
    public static let identityFileName = "identity.key"

    public let path: String
    private let lockDescriptor: Int32

    public init(path: String) throws(StoreError) {
        try Self.createDirectories(path)
        self.path = path
        let lockPath = path + "/" + Self.lockFileName
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .directory(path: lockPath, operation: "opening", errno: errno) }
        var rc: Int32
        repeat { rc = flock(fd, LOCK_EX | LOCK_NB) } while rc != 0 && errno == EINTR
        guard rc == 0 else {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK { throw .dataDirectoryInUse(path: path) }
            throw .directory(path: lockPath, operation: "locking", errno: e)
        }
        lockDescriptor = fd
    }

    deinit {
        // Unlock explicitly: a child forked meanwhile shares the open file
        // description until it execs, and would otherwise keep the lock.
        flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    /// `mkdir -p` with mode 0700 for every directory it creates.
    public static func createDirectories(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 {
                let e = errno
                guard e == EEXIST else { throw .directory(path: prefix, operation: "creating", errno: e) }
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw .directory(path: path, operation: "using as a directory", errno: ENOTDIR)
        }
    }
}
