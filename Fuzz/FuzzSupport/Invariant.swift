#if canImport(Glibc)
import Glibc
#endif

/// A property every input must keep. A fuzz target's return value is not a
/// verdict (libFuzzer reserves everything but 0 and -1), so a broken property
/// aborts: libFuzzer then writes the input to a `crash-*` file and stops.
public func invariant(_ holds: @autoclosure () -> Bool, _ what: String) {
    guard !holds() else { return }
    let message = Array("fuzz invariant broken: \(what)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}
