import Glibc
import Crypto
import TestSupport
import Testing

@Suite("Key files")
struct KeyFileTests {
    @Test("first use creates a 0600 identity; later loads return the same key")
    func createAndLoad() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("identity.key")
        let (key, created) = try KeyFile.loadOrCreateIdentity(at: path)
        #expect(created)
        #expect(fileMode(path) == 0o600)
        #expect(readFile(path).count == KeyFile.identityFileSize)
        let (again, createdAgain) = try KeyFile.loadOrCreateIdentity(at: path)
        #expect(!createdAgain)
        #expect(again.publicKey == key.publicKey)
        // Same secret: its signatures verify under the stored public key.
        try key.publicKey.verify(signature: again.sign([7], context: .raw), message: [7], context: .raw)
    }

    @Test("a key file group or others can read is refused, saying which file and what to do",
          arguments: [0o640, 0o604, 0o644, 0o660, 0o602])
    func tooOpen(mode: Int) throws {
        let dir = TemporaryDirectory()
        let path = dir.file("identity.key")
        _ = try KeyFile.loadOrCreateIdentity(at: path)
        chmod(path, mode_t(mode))
        #expect(throws: CryptoError.keyFile(path: path, problem: .tooOpen(mode: UInt32(mode)))) {
            try KeyFile.loadIdentity(at: path)
        }
        let message = CryptoError.keyFile(path: path, problem: .tooOpen(mode: UInt32(mode))).description
        #expect(message.contains(path) && message.contains("chmod 600"))
        // It is not replaced by a new identity either.
        #expect(throws: CryptoError.self) { try KeyFile.loadOrCreateIdentity(at: path) }
    }

    @Test("truncated at every length, one byte too long, wrong magic, corrupt: all refused")
    func damaged() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("identity.key")
        _ = try KeyFile.loadOrCreateIdentity(at: path)
        let good = readFile(path)
        for length in 8..<good.count {
            writeFile(path, Array(good[0..<length]))
            #expect(throws: CryptoError.keyFile(path: path, problem: .truncated(actual: length, expected: good.count))) {
                try KeyFile.loadIdentity(at: path)
            }
        }
        writeFile(path, [])
        #expect(throws: CryptoError.keyFile(path: path, problem: .truncated(actual: 0, expected: good.count))) {
            try KeyFile.loadIdentity(at: path)
        }
        writeFile(path, good + [0])
        #expect(throws: CryptoError.keyFile(path: path, problem: .tooLong(expected: good.count))) {
            try KeyFile.loadIdentity(at: path)
        }
        var wrongMagic = good
        wrongMagic[0] = UInt8(ascii: "X")
        writeFile(path, wrongMagic)
        #expect(throws: CryptoError.keyFile(path: path, problem: .wrongFormat)) { try KeyFile.loadIdentity(at: path) }
        var corrupt = good
        corrupt[good.count - 1] ^= 1
        writeFile(path, corrupt)
        #expect(throws: CryptoError.keyFile(path: path, problem: .corrupt)) { try KeyFile.loadIdentity(at: path) }
        // A damaged file is never overwritten by a fresh identity.
        #expect(throws: CryptoError.self) { try KeyFile.loadOrCreateIdentity(at: path) }
        #expect(readFile(path) == corrupt)
    }

    @Test("a directory or a symlink in place of the key file is refused")
    func notRegular() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("identity.key")
        mkdir(path, 0o700)
        #expect(throws: CryptoError.keyFile(path: path, problem: .notRegularFile)) { try KeyFile.loadIdentity(at: path) }
        let link = dir.file("link.key")
        _ = try KeyFile.loadOrCreateIdentity(at: dir.file("real.key"))
        symlink(dir.file("real.key"), link)
        #expect(throws: CryptoError.keyFile(path: link, problem: .io(operation: "opening", errno: ELOOP))) {
            try KeyFile.loadIdentity(at: link)
        }
    }

    @Test("network key files: 0600, round trip, never overwritten, identity file refused")
    func networkKeyFile() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("net.key")
        let key = NetworkKey.generate()
        try KeyFile.writeNetworkKey(key, to: path)
        #expect(fileMode(path) == 0o600)
        #expect(try KeyFile.loadNetworkKey(at: path).isSame(as: key))
        #expect(throws: CryptoError.keyFile(path: path, problem: .alreadyExists)) {
            try KeyFile.writeNetworkKey(NetworkKey.generate(), to: path)
        }
        #expect(try KeyFile.loadNetworkKey(at: path).isSame(as: key))
        let idPath = dir.file("identity.key")
        _ = try KeyFile.loadOrCreateIdentity(at: idPath)
        #expect(throws: CryptoError.keyFile(path: idPath, problem: .wrongFormat)) { try KeyFile.loadNetworkKey(at: idPath) }
        #expect(throws: CryptoError.keyFile(path: dir.file("none"), problem: .missing)) {
            try KeyFile.loadNetworkKey(at: dir.file("none"))
        }
    }
}
