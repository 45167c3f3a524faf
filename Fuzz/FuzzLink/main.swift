import Crypto
import FuzzSupport
import Gossip

// libFuzzer entry: Noise link sessions fed hostile bytes. The first byte picks
// the victim: 0 a responder at its first handshake message, 1 an initiator
// after its first message, 2 an established session (transport messages);
// 3, 4 and 5 the same three running AES-256-GCM (where this CPU has it; else
// ChaChaPoly again).
// The rest is messages, each a 2-byte big-endian length and its bytes.
// Every input must end in actions or a named failure, never a crash.

/// Keys made once: key generation per input would only slow the fuzzer.
let keys: (SigningKey, SigningKey)? = {
    guard let a = try? SigningKey.generate(), let b = try? SigningKey.generate() else { return nil }
    return (a, b)
}()
let network = NetworkKey.derived(fromName: "fuzz")

func messages(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
    var out: [[UInt8]] = []
    var rest = bytes
    while rest.count >= 2 {
        let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
        rest = rest.dropFirst(2)
        out.append(Array(rest.prefix(length)))
        rest = rest.dropFirst(length)
    }
    return out
}

/// A session pair that completed its handshake; nil if anything failed.
func established(_ a: SigningKey, _ b: SigningKey, cipher: NoiseCipher) -> LinkSession? {
    guard var initiator = try? LinkSession(initiator: true, identity: a, networkKey: network, now: 0, cipher: cipher),
          var responder = try? LinkSession(initiator: false, identity: b, networkKey: network, now: 0, cipher: cipher) else { return nil }
    var toResponder = initiator.start()
    for _ in 0..<4 {
        var toInitiator: [LinkSession.Action] = []
        for case let .send(m) in toResponder { toInitiator += responder.receive(m) }
        toResponder = []
        for case let .send(m) in toInitiator { toResponder += initiator.receive(m) }
    }
    return responder.isEstablished ? responder : nil
}

/// A responder, an initiator after its first message, and an established session, for one cipher.
func victims(_ cipher: NoiseCipher) -> [LinkSession?] {
    guard let (a, b) = keys else { return [nil, nil, nil] }
    var initiator = try? LinkSession(initiator: true, identity: a, networkKey: network, now: 0, cipher: cipher)
    _ = initiator?.start()
    return [try? LinkSession(initiator: false, identity: b, networkKey: network, now: 0, cipher: cipher), initiator,
            established(a, b, cipher: cipher)]
}

/// Sessions made once and copied per input (they are values): a handshake
/// per input would cost more than the input.
nonisolated(unsafe) let fresh: [LinkSession?] = victims(.chaChaPoly) + victims(NoiseCipher.linkPreference.first ?? .chaChaPoly)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLink(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let input = messages(bytes[1...])
    let session = fresh[Int(bytes[0]) % fresh.count]
    invariant(session != nil, "the fuzz target's sessions could not be made")
    guard var s = session else { return 0 }
    for m in input {
        _ = s.receive(m)
        if s.failed != nil { break }
    }
    _ = s.tick(now: 100)
    _ = s.remoteNick
    return 0
}
