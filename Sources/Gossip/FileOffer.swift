import Crypto

/// A file offered in a room or a conversation (docs/PROTOCOL.md §16,
/// "The offer"): the content of an envelope of kind `file`, sealed like any
/// message, so only members read it. The file's bytes are never in it:
/// they are sealed chunk by chunk under `key` and fetched by `root` from
/// whoever holds them.
///
///     version 1 ‖ size 8 ‖ root 32 ‖ plain hash 32 ‖ key 32 ‖
///     name length 1 ‖ name ‖ type length 1 ‖ type ‖ caption (the rest)
///
/// Numbers big-endian. Every field is bounded at decode.
public struct FileOffer: Equatable, Sendable {
    public static let version: UInt8 = 1
    /// Bytes of plaintext in each chunk but the last (which holds the rest, at least 1).
    public static let chunkSize = 64_000
    /// The largest file a node sends or fetches: 4 GiB.
    public static let maximumSize: UInt64 = 4 << 30
    /// UTF-8 bytes of a name (1…), of a type (0…), of a caption (0…).
    public static let maximumName = 255
    public static let maximumType = 100
    public static let maximumCaption = 1_000

    /// Bytes of plaintext, 1 … `maximumSize`.
    public let size: UInt64
    /// The chunk tree's root over the sealed chunks (`FileTree`): what the file is fetched by.
    public let root: [UInt8]
    /// BLAKE2b-256 of the whole plaintext: what a person compares.
    public let plainHash: [UInt8]
    /// The file's key (`FileKey`): in the offer only.
    public let key: [UInt8]
    /// The name as the sender gave it: network text, shown only sanitized, saved only under a safe name.
    public let name: String
    /// A media type (`image/png`), or empty.
    public let type: String
    public let caption: String

    public init(size: UInt64, root: [UInt8], plainHash: [UInt8], key: [UInt8], name: String, type: String, caption: String) {
        self.size = size
        self.root = root
        self.plainHash = plainHash
        self.key = key
        self.name = name
        self.type = type
        self.caption = caption
    }

    /// Chunks of a file of `size` bytes.
    public static func chunks(size: UInt64) -> UInt64 { (size + UInt64(chunkSize) - 1) / UInt64(chunkSize) }
    public var chunks: UInt64 { Self.chunks(size: size) }

    /// Plaintext bytes in chunk `index` of a file of `size` bytes (the last holds the rest).
    public static func plainLength(of index: UInt64, size: UInt64) -> Int {
        let start = index * UInt64(chunkSize)
        return Int(min(UInt64(chunkSize), size - min(size, start)))
    }

    public func plainLength(of index: UInt64) -> Int { Self.plainLength(of: index, size: size) }

    /// Where sealed chunk `index` starts in a chunk file (every sealed chunk but the last is `FileMessage.maximumSealed` bytes).
    public static func sealedOffset(of index: UInt64) -> Int64 { Int64(index) * Int64(chunkSize + FileKey.tagByteCount) }

    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.u8(Self.version)
        w.u64(size)
        w.raw(root)
        w.raw(plainHash)
        w.raw(key)
        let name = Array(self.name.utf8), type = Array(self.type.utf8)
        w.u8(UInt8(min(name.count, Self.maximumName)))
        w.raw(name.prefix(Self.maximumName))
        w.u8(UInt8(min(type.count, Self.maximumType)))
        w.raw(type.prefix(Self.maximumType))
        w.raw(Array(caption.utf8).prefix(Self.maximumCaption))
        return w.bytes
    }

    /// The offer `content` holds; throws for anything but exactly the layout
    /// within its bounds (a name of 1 byte at least, UTF-8 text throughout).
    public static func decode(_ content: [UInt8]) throws(EnvelopeError) -> FileOffer {
        var r = ByteReader(content)
        guard try r.u8("file offer version") == version else { throw .malformed("file offer version") }
        let size = try r.u64("file size")
        guard size >= 1, size <= maximumSize else { throw .malformed("file size \(size) outside 1…\(maximumSize)") }
        let root = Array(try r.take(FileTree.hashSize, "file root"))
        let plainHash = Array(try r.take(FileTree.hashSize, "file hash"))
        let key = Array(try r.take(FileKey.byteCount, "file key"))
        let nameLength = Int(try r.u8("file name length"))
        guard nameLength >= 1 else { throw .malformed("empty file name") }
        let name = try text(r.take(nameLength, "file name"), "file name")
        let typeLength = Int(try r.u8("file type length"))
        guard typeLength <= maximumType else { throw .malformed("file type over \(maximumType) bytes") }
        let type = try text(r.take(typeLength, "file type"), "file type")
        guard r.remaining <= maximumCaption else { throw .malformed("file caption over \(maximumCaption) bytes") }
        let caption = try text(r.take(r.remaining, "file caption"), "file caption")
        return FileOffer(size: size, root: root, plainHash: plainHash, key: key, name: name, type: type, caption: caption)
    }

    private static func text(_ bytes: ArraySlice<UInt8>, _ field: String) throws(EnvelopeError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformed("\(field) is not UTF-8") }
        return text
    }
}
