import CSodium
import Crypto
import Foundation
import Gossip
import NodeCore
import Reactor
#if canImport(Glibc)
import Glibc
#endif

/// The ceiling of a file transfer on this machine, stage by stage (issue
/// 39): what each primitive a chunk passes through costs per MB, measured
/// here, and the rate one core reaches when it does only those. The
/// receiver's path per chunk: the socket's receive, the link's open (Noise,
/// with the cipher this machine's links run), the leaf's BLAKE2b over the sealed chunk,
/// its write into new pages, the file key's XChaCha20-Poly1305 open, the
/// plaintext's BLAKE2b and its write (each chunk opened as it comes,
/// `FileOpener`). The sender's: the read, the link's seal and the send per
/// chunk served (the file's own seal and tree are paid once, at /send).
/// Also printed: what a pass less would allow, each of the two a protocol
/// decision could take out (docs/SCALE.md, "Files").
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
    // The link's seal and open as a node makes them, with the cipher this machine's links run
    // (`linkCipher`), as the relay's model times them: µs a chunk, in ms a MB.
    let linkSeal = try sealCost(plain, cipher: linkCipher) * 1000 / Double(chunk)
    let linkOpen = try openCost(plain) * 1000 / Double(chunk)
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
    let fresh = try freshWrite(sealed, directory: directory, rounds: rounds)
    let (send, receive) = try loopbackStream(sealed, rounds: rounds)

    // A receiver writes each chunk twice into pages new to the file (the sealed copy it keeps, the plaintext).
    let receiver = receive + linkOpen + blake + fresh + xchacha + blake + fresh
    let sender = read + linkSeal + send
    // curl's own path: the socket's receive and a write into new pages (nginx's sendfile: the send alone).
    let curl = receive + fresh
    func rate(_ ms: Double) -> Double { 1000 / ms }
    print(String(format: "primitives per MB (64,000-byte chunks, one core): the link (%@) seal %.2f ms and open %.2f ms (ChaCha20-Poly1305 alone %.2f ms), BLAKE2b %.2f ms, XChaCha20-Poly1305 open %.2f ms, pwrite over cached pages %.2f ms, pwrite into new pages %.2f ms, pread %.2f ms, a copy %.2f ms, loopback TCP send %.2f ms and receive %.2f ms",
                 linkCipher.displayName, linkSeal, linkOpen, chacha, blake, xchacha, write, fresh, read, copy, send, receive))
    print(String(format: "ceiling: receiver %.2f ms/MB = %.0f MB/s on one core (receive, link open, leaf hash, write, open, plain hash, write); sender %.2f ms/MB = %.0f MB/s (read, link seal, send)",
                 receiver, rate(receiver), sender, rate(sender)))
    print(String(format: "both on this machine's 2 cores, with nothing else: %.2f ms/MB of CPU = %.0f MB/s; curl's own path (receive, write) is %.2f ms/MB = %.0f MB/s on one core",
                 receiver + sender, 2 * rate(receiver + sender), curl, rate(curl)))
    let bookkeeping = try fetchBookkeeping(chunks: 67_109)
    print(String(format: "the fetch's bookkeeping (which chunk to ask whom, FileFetch), a 4 GiB file's 67,109 chunks through one link: %.3f ms/MB", bookkeeping))
    // What a pass less would allow (a protocol decision, docs/SCALE.md "Files"): chunks outside the link's AEAD (they are sealed under the file key and checked against the tree), or no plaintext hash.
    let outsideLink = receiver + sender - linkSeal - linkOpen
    let noPlainHash = receiver + sender - blake
    print(String(format: "ceiling-receiver-ms %.3f sender-ms %.3f outside-link-ms %.3f no-plain-hash-ms %.3f both-ms %.3f",
                 receiver, sender, outsideLink, noPlainHash, outsideLink - blake))
}

/// ms per MB of plaintext that `FileFetch` spends deciding what to ask,
/// over a whole transfer of `chunks` chunks answered at once by one link.
private func fetchBookkeeping(chunks: UInt64) throws -> Double {
    var fetch = FileFetch()
    let root = [UInt8](repeating: 7, count: 32)
    let peer = try SigningKey.generate().publicKey
    let links: [LinkID: PublicKey] = [1: peer]
    let started = monotonicNow()
    fetch.start(root, chunks: chunks, held: { _ in false })
    var pending = fetch.assign(links: links, now: 0)
    while let action = pending.popLast() {
        guard case let .want(_, _, asked) = action else { continue }
        for index in asked { pending += fetch.received(root, index: index, from: peer, valid: true, links: links, now: 0) }
    }
    guard fetch.left(root) == nil else { throw NodeBenchError("the fetch did not finish") }
    return (monotonicNow() - started) * 1000 / (Double(chunks) * Double(FileOffer.chunkSize) / 1e6)
}

/// ms per MB to write `chunk` into pages new to a file, one after another (what a receiver pays: the page cache's allocation and the file system's bookkeeping, which an overwrite of cached pages does not).
private func freshWrite(_ chunk: [UInt8], directory: String, rounds: Int) throws -> Double {
    let path = directory + "/ceiling-fresh.bin"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw NSError(domain: "files-ceiling", code: Int(errno)) }
    defer { close(fd); unlink(path) }
    let started = threadCPU()
    for i in 0..<rounds {
        _ = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(i) * off_t(chunk.count)) }
    }
    return (threadCPU() - started) / (Double(rounds * chunk.count) / 1e6) * 1000
}

/// ms of CPU per MB to send `chunk` over loopback TCP, and to receive it, each measured on its own thread.
private func loopbackStream(_ chunk: [UInt8], rounds: Int) throws -> (send: Double, receive: Double) {
    let (writer, reader) = try connectedPair()
    defer { close(writer); close(reader) }
    let total = rounds * chunk.count
    nonisolated(unsafe) var received = 0.0
    let drain = Thread {
        var sink = [UInt8](repeating: 0, count: 1 << 16)
        var got = 0
        let started = threadCPU()
        while got < total {
            let n = sink.withUnsafeMutableBytes { recv(reader, $0.baseAddress!, $0.count, 0) }
            guard n > 0 else { break }
            got += n
        }
        received = threadCPU() - started
    }
    drain.start()
    let started = threadCPU()
    for _ in 0..<rounds {
        var sent = 0
        while sent < chunk.count {
            let n = chunk.withUnsafeBytes { Glibc.send(writer, $0.baseAddress! + sent, chunk.count - sent, 0) }
            guard n > 0 else { break }
            sent += n
        }
    }
    let sending = threadCPU() - started
    while !drain.isFinished { usleep(1_000) }
    let mb = Double(total) / 1e6
    return (sending / mb * 1000, received / mb * 1000)
}

/// Seconds of CPU this thread has used.
private func threadCPU() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
