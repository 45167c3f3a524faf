import Crypto
import Gossip
import Store

/// The store as files use it: each file's row and chunk map, its sealed
/// chunks and its tree's leaves on disk, and erasing them. Every call
/// throws a `RepositoryError` naming what it was doing.
struct FileRepository {
    let store: Store

    func file(_ root: [UInt8]) throws(RepositoryError) -> Store.FileRow? {
        try storeCall("reading a file's chunk map") { try store.file(root) }
    }

    func files() throws(RepositoryError) -> [Store.FileRow] {
        try storeCall("reading the files held") { try store.files() }
    }

    func save(_ row: Store.FileRow) throws(RepositoryError) {
        try storeCall("saving a file's chunk map") { try store.saveFile(row) }
    }

    func recordSaved(_ root: [UInt8], path: String) throws(RepositoryError) {
        try storeCall("keeping where a file was saved") { try store.recordSaved(root, path: path) }
    }

    func fileOffers(in room: RoomID, limit: Int) throws(RepositoryError) -> [StoredEnvelope] {
        try storeCall("reading a room's file offers") { try store.fileOffers(in: room, limit: limit) }
    }

    func createChunkFile(_ root: [UInt8]) throws(RepositoryError) {
        try storeCall("making a file's chunk file") { try store.createChunkFile(root) }
    }

    func write(_ sealed: [UInt8], index: UInt64, of row: Store.FileRow) throws(RepositoryError) {
        try storeCall("writing a file's chunk") { try store.writeChunk(sealed, index: index, of: row) }
    }

    func read(_ indices: [UInt64], of row: Store.FileRow) throws(RepositoryError) -> [[UInt8]?] {
        try storeCall("reading a file's chunks") { try store.readChunks(indices, of: row) }
    }

    func saveLeaves(_ leaves: [[UInt8]], of root: [UInt8]) throws(RepositoryError) {
        try storeCall("saving a file's chunk tree") { try store.saveLeaves(leaves, of: root) }
    }

    func leaves(of root: [UInt8], chunks: UInt64) throws(RepositoryError) -> [[UInt8]]? {
        try storeCall("reading a file's chunk tree") { try store.leaves(of: root, chunks: chunks) }
    }

    func files(offeredBy author: PublicKey, sequence: UInt64) throws(RepositoryError) -> [[UInt8]] {
        try storeCall("reading the files of an offer") { try store.files(offeredBy: author, sequence: sequence) }
    }

    /// Binds `root`'s file to one more offer besides its row's (`Store.bindFile`).
    /// True when bound (false past `Store.maximumFileBindings`).
    @discardableResult
    func bindAlso(_ root: [UInt8], to offer: Dependency) throws(RepositoryError) -> Bool {
        try storeCall("binding a file to an offer") { try store.bindFile(root, author: offer.author, sequence: offer.sequence) }
    }

    /// Whether a tombstone held here erased the envelope at `offer`.
    func isErased(_ offer: Dependency) throws(RepositoryError) -> Bool {
        try storeCall("reading an erasure") { try store.erasedBy(offer.author, offer.sequence) != nil }
    }

    /// Whether an envelope is held at `offer` (read or not).
    func holdsEnvelope(_ offer: Dependency) throws(RepositoryError) -> Bool {
        try storeCall("reading a file's offer") { try store.envelope(by: offer.author, sequence: offer.sequence) != nil }
    }

    /// Forgets a file and moves its chunk file aside to be overwritten (`Files.erase`).
    func detach(_ root: [UInt8]) throws(RepositoryError) -> String? {
        try storeCall("erasing a file's chunks") { try store.detachFile(root) }
    }
}
