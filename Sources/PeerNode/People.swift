import Crypto
import NetworkText

/// An identity as every presenter shows it: its nick (network text) and
/// the marks beside it. Events carry these, so a presenter needs nothing
/// else to show who someone is.
struct Person: Equatable {
    let key: PublicKey
    let nick: PeerText?
    /// Marked as verified with `/trust`: ✔.
    let trusted: Bool
    /// Its nick looks like another's (`Confusables`): ⚠.
    let lookAlike: Bool
    /// It signed two different envelopes at one sequence (a copied key or a
    /// restored backup): "(forked)".
    let forked: Bool

    /// The same identity with the nick it claimed (in its handshake), when no message said one.
    func claiming(_ claimed: PeerText?) -> Person {
        Person(key: key, nick: nick ?? claimed, trusted: trusted, lookAlike: lookAlike, forked: forked)
    }
}

/// What the node knows about identities for showing them: nicks from their
/// messages and the user's marks. Owned by the node, on the loop.
struct People {
    /// Each account's nick (an identity of its own is its own account).
    var nicks: [PublicKey: PeerText] = [:]
    var trusted: Set<PublicKey> = []
    var lookAlike: Set<PublicKey> = []
    var forked: Set<PublicKey> = []
    /// Device key → the account it belongs to, for each device whose claim
    /// was delivered (docs/PROTOCOL.md §15). A key not here is its own account.
    var accounts: [PublicKey: PublicKey] = [:]

    /// The person `key` signs for: its account, or itself.
    func account(_ key: PublicKey) -> PublicKey { accounts[key] ?? key }

    /// The nick of the person `key` signs for.
    func nick(_ key: PublicKey) -> PeerText? { nicks[account(key)] }

    /// How to show whoever signed with `key`: its account, with the
    /// account's nick and marks (a mark set on a device's key counts too).
    subscript(_ key: PublicKey) -> Person {
        let who = account(key)
        return Person(key: who, nick: nicks[who], trusted: trusted.contains(who) || trusted.contains(key),
                      lookAlike: lookAlike.contains(who), forked: forked.contains(who) || forked.contains(key))
    }

    /// What is known of `keys` only: an event keeps this, not the whole
    /// book, so the node changing a nick later copies nothing.
    func only(_ keys: [PublicKey]) -> People {
        var out = People()
        for device in keys {
            let key = account(device)
            if key != device {
                out.accounts[device] = key
                if trusted.contains(device) { out.trusted.insert(device) }
                if forked.contains(device) { out.forked.insert(device) }
            }
            out.nicks[key] = nicks[key]
            if trusted.contains(key) { out.trusted.insert(key) }
            if lookAlike.contains(key) { out.lookAlike.insert(key) }
            if forked.contains(key) { out.forked.insert(key) }
        }
        return out
    }
}

extension People {
    /// Finds who `/msg` means: a 64-hex id, `nick·fp`, or a nick that only one known author uses.
    func resolve(_ who: String) throws -> PublicKey {
        // 64 characters that are not a key's hex are a nick (nicks are at most 32 bytes, so this is rare): why is not needed.
        if who.count == 64, let key = try? PublicKey(hex: who) { return key }
        var candidates = Array(Set(nicks.compactMap { $0.value.unsanitized == who ? $0.key : nil }))
        if candidates.isEmpty, let dot = who.firstIndex(of: "·") {
            // The label as the screen shows it: its marks (⚠ look-alike, ✔ trusted, "(forked)") are not part of the name.
            let nick = String(who[..<dot].filter { $0 != "⚠" })
            var fp = String(who[who.index(after: dot)...].filter { $0 != "✔" })
            if fp.hasSuffix("(forked)") { fp = String(fp.dropLast("(forked)".count)) }
            candidates = nicks.compactMap { $0.value.unsanitized == nick && $0.key.shortFingerprint == fp ? $0.key : nil }
        }
        // A fingerprint alone, as a label without a nick shows it.
        if candidates.isEmpty, who.count == 4 {
            candidates = Array(Set(nicks.keys.filter { $0.shortFingerprint == who }))
        }
        guard candidates.count == 1, let key = candidates.first else {
            throw candidates.isEmpty ? NodeError.nobodyKnownAs(who) : NodeError.ambiguous(who, candidates: candidates)
        }
        return key
    }
}
