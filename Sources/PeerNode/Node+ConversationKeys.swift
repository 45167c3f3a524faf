import Crypto
import Foundation
import Gossip
import Store

/// Accounts' conversation keys (docs/PROTOCOL.md §15, "Conversation
/// keys"): a direct conversation is between two accounts, sealed with the
/// X25519 of one account's conversation key and the other's, so every
/// device of either account opens it on its own. Epoch 0 of an account is
/// its identity key converted (what a lone identity always used); the
/// account makes epoch 1 when it links its first device, hands the secret to
/// its devices and announces the public key in every device's certificate.
extension Node {
    /// The key in `ownBoxKeys` of this machine's own identity key when it
    /// is a device of another account: it still opens the conversations it
    /// had before joining, and never seals new ones.
    static let identityEpoch = UInt32.max

    /// Reads every conversation key the store holds: ours (with secrets)
    /// and the epochs others announced. Cheap (a row per account and epoch).
    func reloadConversationKeys() throws {
        var own: [UInt32: BoxKeyPair] = [:]
        own[me == account ? 0 : Self.identityEpoch] = BoxKeyPair.converted(from: identity)
        var announced: [PublicKey: [UInt32: (publicKey: [UInt8], claim: Dependency)]] = [:]
        for row in try store.conversationKeys() {
            if row.account == account, let secret = row.secret, let pair = try? BoxKeyPair(secretBytes: secret), pair.publicKey == row.publicKey {
                own[row.epoch] = pair
            }
            if let claim = row.claim {
                announced[row.account, default: [:]][row.epoch] = (row.publicKey, Dependency(author: claim.device, sequence: claim.sequence))
            }
        }
        ownBoxKeys = own
        announcedBoxKeys = announced
        mapOwnRooms()
        // Which conversation each peer gets may have changed; the rooms already mapped stay right.
        conversations = [:]
        conversationsMapped = 0
    }

    /// The epoch we seal new conversations with: our newest that a claim announced
    /// (peers can compute its rooms), else 0.
    var sendingEpoch: UInt32 {
        ownBoxKeys.keys.filter { $0 != Self.identityEpoch && ($0 == 0 || announcedBoxKeys[account]?[$0] != nil) }.max() ?? 0
    }

    /// A peer account's newest announced epoch, else 0.
    func sendingEpoch(of peer: PublicKey) -> UInt32 { announcedBoxKeys[peer]?.keys.max() ?? 0 }

    /// A peer account's public conversation key of `epoch` (0: its identity key converted).
    func boxPublic(of peer: PublicKey, epoch: UInt32) -> [UInt8]? {
        epoch == 0 ? BoxKeyPair.convertedPublic(peer) : announcedBoxKeys[peer]?[epoch]?.publicKey
    }

    /// What an envelope sealed with our sending epoch must name among its
    /// dependencies: the claim that announced that epoch, when another
    /// device signed it (every node then knows the key before the envelope).
    var sendingEpochDependency: Dependency? {
        let epoch = sendingEpoch
        guard epoch != 0, let claim = announcedBoxKeys[account]?[epoch]?.claim, claim.author != me else { return nil }
        return claim
    }

    /// Our newest conversation key of epoch 1 or later (one exists once a
    /// device was linked): its epoch and pair.
    var newestLinkedBoxKey: (epoch: UInt32, pair: BoxKeyPair)? {
        guard let epoch = ownBoxKeys.keys.filter({ $0 != 0 && $0 != Self.identityEpoch }).max(), let pair = ownBoxKeys[epoch] else { return nil }
        return (epoch, pair)
    }

    /// Our newest conversation key, made (epoch 1, or one past the newest)
    /// when we have none to hand a device: only the account key does this.
    func newestOwnBoxKey() throws -> (epoch: UInt32, pair: BoxKeyPair) {
        if let newest = newestLinkedBoxKey { return newest }
        let pair = BoxKeyPair.generate()
        try store.saveConversationKey(Store.ConversationKeyRow(account: account, epoch: 1, publicKey: pair.publicKey, secret: pair.exportedSecret, claim: nil))
        try reloadConversationKeys()
        return (1, pair)
    }

    /// Registers the rooms of every pair of our epochs and `peer`'s (one
    /// X25519 each, once): what lets us open a conversation message sealed
    /// with any of them.
    func mapConversations(with peer: PublicKey) {
        guard peer != account else { return }
        for (ownEpoch, pair) in ownBoxKeys {
            for peerEpoch in [0] + Array(announcedBoxKeys[peer]?.keys ?? [:].keys) {
                let tag = MappedPair(peer: peer, own: ownEpoch, theirs: peerEpoch)
                guard !mappedPairs.contains(tag), let key = directKey(own: pair, ownEpoch: ownEpoch, peer: peer, peerEpoch: peerEpoch) else { continue }
                mappedPairs.insert(tag)
                let room = RoomID.direct(key, network: network)
                directRooms[room] = (peer, key)
                dmPeers[room] = peer
                if ownEpoch == 0 || ownEpoch == Self.identityEpoch, peerEpoch == 0 {
                    let v1 = RoomID.directVersion1(me, peer, network: network)
                    directRooms[v1] = (peer, key)
                    dmPeers[v1] = peer
                }
            }
        }
    }

    private func directKey(own: BoxKeyPair, ownEpoch: UInt32, peer: PublicKey, peerEpoch: UInt32) -> DirectKey? {
        guard let peerPublic = boxPublic(of: peer, epoch: peerEpoch) else { return nil }
        return try? DirectKey(own: own, peerPublic: peerPublic, peer: peer)
    }

    /// A claim's announcement of its account's conversation key.
    func announce(_ certificate: DeviceCertificate, claim: Envelope) {
        do {
            try store.saveConversationKey(Store.ConversationKeyRow(
                account: certificate.account, epoch: certificate.epoch, publicKey: certificate.conversationKey, secret: nil,
                claim: (claim.author, claim.sequence)))
            try reloadConversationKeys()
        } catch {
            return
        }
    }
}

/// One pair of epochs whose conversation room is mapped.
struct MappedPair: Hashable {
    let peer: PublicKey
    let own: UInt32
    let theirs: UInt32
}
