import Crypto
import Foundation
import Gossip
import NodeCore
import Store

/// A new conversation key after a revocation (docs/PROTOCOL.md §15, "A new
/// conversation key after a revocation"): a revoked device still holds
/// the account's conversation keys, so the account key's machine makes the
/// next epoch, seals its secret to each device that is not revoked, and
/// announces its public key. Peers seal direct messages to it from then
/// on, and the rooms the account is in get a new key sealed to it.
extension Node {
    /// Settings key: how many of our account's revoked devices the newest
    /// conversation key already leaves out.
    static let rekeyedRevocationsSetting = "conversation_key_revocations"

    /// Our account's devices that are revoked.
    var ownRevokedDevices: Set<PublicKey> {
        Set(revokedAfter.keys.filter { $0 != account && people.account($0) == account })
    }

    /// On the account key's machine, when a device of ours was revoked since
    /// the last conversation key was made: the next one, announced in the
    /// accounts room. Nil when there is nothing to do (or this is a device).
    func rekeyConversationsIfNeeded() throws -> Envelope? {
        let revoked = ownRevokedDevices
        guard me == account, !revoked.isEmpty else { return nil }
        let done = (try store.setting(Self.rekeyedRevocationsSetting)).flatMap { Int($0) } ?? 0
        guard revoked.count > done else { return nil }
        let epoch = (newestLinkedBoxKey?.epoch ?? 0) + 1
        let pair = BoxKeyPair.generate()
        let keep = try devices(of: account).filter { $0.device != account && !revoked.contains($0.device) }
        let sealed = try keep.prefix(ConversationKeyAnnouncement.maximumDevices).compactMap { row -> ConversationKeyAnnouncement.Sealed? in
            guard let to = BoxKeyPair.convertedPublic(row.device) else { return nil }
            return ConversationKeyAnnouncement.Sealed(device: row.device, sealed: try BoxKeyPair.seal(pair.exportedSecret, to: to))
        }
        let announcement = ConversationKeyAnnouncement(epoch: epoch, publicKey: pair.publicKey, devices: sealed)
        try store.saveConversationKey(Store.ConversationKeyRow(account: account, epoch: epoch, publicKey: pair.publicKey, secret: pair.exportedSecret, claim: nil))
        let e = try appendOwn(room: accountsRoom, kind: .rekey, content: announcement.encoded, key: accountsKey)
        try store.saveConversationKey(Store.ConversationKeyRow(account: account, epoch: epoch, publicKey: pair.publicKey, secret: nil, claim: (me, e.sequence)))
        try store.setSetting(Self.rekeyedRevocationsSetting, String(revoked.count))
        try reloadConversationKeys()
        return e
    }

    /// A delivered announcement: true when it gave its account a new epoch.
    /// Only an account's own key announces, in the accounts room, one epoch
    /// past the newest known; a device of that account takes the secret
    /// sealed to it. Anything else is refused (`rekey_refused`).
    func acceptConversationKey(_ e: Envelope, _ opened: OpenedEnvelope) -> Bool {
        let author = e.author
        guard e.room == accountsRoom, people.account(author) == author, let a = ConversationKeyAnnouncement.decode(opened.content),
              a.epoch > (announcedBoxKeys[author]?.keys.max() ?? 0) else {
            if e.author != me { refusedRekeys &+= 1 }
            return false
        }
        var secret: [UInt8]?
        if author == account, author != me, let mine = a.devices.first(where: { $0.device == me }),
           let opened = try? BoxKeyPair.converted(from: identity).openSealed(mine.sealed),
           (try? BoxKeyPair(secretBytes: opened))?.publicKey == a.publicKey {
            secret = opened
        }
        do {
            try store.saveConversationKey(Store.ConversationKeyRow(account: author, epoch: a.epoch, publicKey: a.publicKey, secret: secret,
                                                                   claim: (author, e.sequence)))
            try reloadConversationKeys()
        } catch {
            return false
        }
        return true
    }

    /// The rooms whose current key reached a member account under an
    /// older conversation key than its newest (a device of it was revoked):
    /// for the rekeyer, a reason to make a new room key.
    func sealedToStaleKey(_ state: RoomMembership) -> Bool {
        state.sealedEpochs.contains { member, epoch in
            (member == account ? sendingEpoch : sendingEpoch(of: member)) > epoch
        }
    }
}
