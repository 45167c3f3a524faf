import Crypto
import Gossip

/// The dependencies a post of ours names.
extension Array where Element == Dependency {
    /// These with `required`'s author at its sequence at least (one of
    /// `author`'s own needs none: the author's chain orders it), within
    /// `Envelope.maximumDependencies`.
    func requiring(_ required: Dependency?, by author: PublicKey) -> [Dependency] {
        guard let required, required.author != author else { return self }
        var out = filter { $0.author != required.author }
        let held = first { $0.author == required.author }?.sequence ?? 0
        if out.count >= Envelope.maximumDependencies { out.removeLast(out.count - Envelope.maximumDependencies + 1) }
        out.append(Dependency(author: required.author, sequence: Swift.max(held, required.sequence)))
        return out
    }
}
