import CSodium
import Crypto
import Foundation
import Gossip
import Reactor
#if canImport(Glibc)
import Glibc
#endif

/// The ceiling of a file transfer on this machine, stage by stage (issue
/// 39): what each primitive a chunk passes through costs per MB, measured
/// here, and the rate one core reaches when it does only those. The
/// receiver's path per chunk: the link's ChaCha20-Poly1305 open (Noise), the
/// leaf's BLAKE2b over the sealed chunk, its write, the file key's
/// XChaCha20-Poly1305 open, the plaintext's BLAKE2b and its write (each
/// chunk opened as it comes, `FileOpener`). The sender's: the read and the link's seal per
/// chunk served (the file's own seal and tree are paid once, at /send).
func runFileCeiling(directory: String) throws {
    let chunk = FileOffer.chunkSize
    let rounds = 2_000
    let plain = [UInt8](repeating: 0x5A, count: chunk)
    var sealed = [UInt8](repeating: 0, count: chunk + 16)
    let key = [UInt8](repeating: 7, count: 32)
    var nonce = [UInt8](repeating: 0, count: 12)

    func perMB(_ body: () -> Void) -> Double {
        let started = monotonicNow()
        for _ in 0..<rounds { body() }
        return (monotonicNow() - started) / (Double(rounds * chunk) / 1e6) * 1000
    }

    let chacha = perMB {
        nonce[4] &+= 1
        var written: UInt64 = 0
        _ = crypto_aead_chacha20poly1305_ietf_encrypt(&sealed, &written, plain, UInt64(chunk), nil, 0, nil, nonce, key)
    }
    let blake = perMB { _ = BLAKE2b.hash(sealed) }
    let fileKey = FileKey.generate()
    let fileSealed = plain.withUnsafeBytes { fileKey.seal(chunk: $0, index: 1) }
    let xchacha = perMB { _ = try? fileKey.open(chunk: fileSealed, index: 1) }
    let path = directory + "/ceiling.bin"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw NSError(domain: "files-ceiling", code: Int(errno)) }
    defer { close(fd); unlink(path) }
    var index = 0
    let write = perMB {
        _ = sealed.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(index % 512) * off_t(chunk + 16)) }
        index += 1
    }
    var buffer = [UInt8](repeating: 0, count: chunk + 16)
    let read = perMB {
        _ = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(index % 512) * off_t(chunk + 16)) }
        index += 1
    }
    let copy = perMB {
        sealed.withUnsafeBytes { from in _ = buffer.withUnsafeMutableBytes { memcpy($0.baseAddress!, from.baseAddress!, from.count) } }
    }

    let receiver = chacha + blake + write + xchacha + blake + write
    let sender = read + chacha
    func rate(_ ms: Double) -> Double { 1000 / ms }
    print(String(format: "primitives per MB (64,000-byte chunks, one core): ChaCha20-Poly1305 %.2f ms, BLAKE2b %.2f ms, XChaCha20-Poly1305 open %.2f ms, pwrite %.2f ms, pread %.2f ms, a copy %.2f ms",
                 chacha, blake, xchacha, write, read, copy))
    print(String(format: "ceiling: receiver %.2f ms/MB = %.0f MB/s on one core (link open, leaf hash, write, open, plain hash, write); sender %.2f ms/MB = %.0f MB/s (read, link seal)",
                 receiver, rate(receiver), sender, rate(sender)))
    print(String(format: "both on this machine's 2 cores, with nothing else: %.2f ms/MB of CPU = %.0f MB/s", receiver + sender, 2 * rate(receiver + sender)))
    print(String(format: "ceiling-receiver-ms %.3f sender-ms %.3f", receiver, sender))
}
