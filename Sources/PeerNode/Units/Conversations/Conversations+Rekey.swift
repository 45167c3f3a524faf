import Crypto
import Gossip
import NodeCore
import Store

/// A new conversation key after a revocation (docs/PROTOCOL.md §15, "A new
/// conversation key after a revocation"): a revoked device still holds
/// the account's conversation keys, so the account key's machine makes the
/// next epoch, seals its secret to each device that is not revoked, and
/// announces its public key. Peers seal direct messages to it from then
/// on, and the rooms the account is in get a new key sealed to it.
extension Conversations {
    /// On the account key's machine, when a device of ours was revoked
    /// (`revoked`) since the last conversation key was made: the next one,
    /// sealed to `devices` that are not revoked and announced in the
    /// accounts room. Nil when there is nothing to do (or this is a device).
    func rekeyIfNeeded(revoked: Set<PublicKey>, devices: () throws -> [Store.DeviceRow], accountsRoom: RoomID, accountsKey: SymmetricKey) throws -> Envelope? {
        guard me == account, !revoked.isEmpty else { return nil }
        guard revoked.count > (try repository.rekeyedRevocations()) else { return nil }
        let epoch = (newestLinkedKey?.epoch ?? 0) + 1
        let pair = BoxKeyPair.generate()
        let keep = try devices().filter { $0.device != account && !revoked.contains($0.device) }
        let sealed = try keep.prefix(ConversationKeyAnnouncement.maximumDevices).compactMap { row -> ConversationKeyAnnouncement.Sealed? in
            guard let to = BoxKeyPair.convertedPublic(row.device) else { return nil }
            return ConversationKeyAnnouncement.Sealed(device: row.device, sealed: try BoxKeyPair.seal(pair.exportedSecret, to: to))
        }
        let announcement = ConversationKeyAnnouncement(epoch: epoch, publicKey: pair.publicKey, devices: sealed)
        try repository.save(Store.ConversationKeyRow(account: account, epoch: epoch, publicKey: pair.publicKey, secret: pair.exportedSecret, claim: nil))
        let e = try author.appendOwn(room: accountsRoom, kind: .rekey, content: announcement.encoded, key: accountsKey)
        try repository.save(Store.ConversationKeyRow(account: account, epoch: epoch, publicKey: pair.publicKey, secret: nil, claim: (me, e.sequence)))
        try repository.setRekeyedRevocations(revoked.count)
        try reload()
        return e
    }

    /// A delivered announcement in the accounts room: true when it gave its
    /// account a new epoch. Only an account's own key announces, one epoch
    /// past the newest known; a device of that account takes the secret
    /// sealed to it. Anything else is refused (`rekey_refused`); a store
    /// that fails leaves it untaken (said), to be taken when next delivered.
    func accept(_ e: Envelope, _ opened: OpenedEnvelope, accountsRoom: RoomID) -> Bool {
        let author = e.author
        guard e.room == accountsRoom, book.account(of: author) == author, let a = ConversationKeyAnnouncement.decode(opened.content),
              a.epoch > (announced[author]?.keys.max() ?? 0) else {
            if e.author != me { refusedRekeys &+= 1 }
            return false
        }
        var secret: [UInt8]?
        if author == account, author != me, let mine = a.devices.first(where: { $0.device == me }) {
            // A secret that does not open to us, or opens to another key, is not ours: none taken (the
            // public key still is), and why it failed changes nothing.
            secret = try? Self.secret(mine.sealed, openedBy: identity, matching: a.publicKey)
        }
        return failures.read { () throws(RepositoryError) in
            try repository.save(Store.ConversationKeyRow(account: author, epoch: a.epoch, publicKey: a.publicKey, secret: secret,
                                                         claim: (author, e.sequence)))
            try reload()
            return true
        } ?? false
    }

    /// The conversation secret sealed to `identity`, if it is the one of `publicKey`.
    private static func secret(_ sealed: [UInt8], openedBy identity: SigningKey, matching publicKey: [UInt8]) throws -> [UInt8] {
        let opened = try BoxKeyPair.converted(from: identity).openSealed(sealed)
        guard try BoxKeyPair(secretBytes: opened).publicKey == publicKey else { throw NodeError.notSealable(identity.publicKey) }
        return opened
    }

    /// Whether a room's current key reached a member account under an
    /// older conversation key than its newest (a device of it was revoked):
    /// for the rekeyer, a reason to make a new room key.
    func sealedToStaleKey(_ state: RoomMembership) -> Bool {
        state.sealedEpochs.contains { member, epoch in
            (member == account ? sendingEpoch : sendingEpoch(of: member)) > epoch
        }
    }
}
