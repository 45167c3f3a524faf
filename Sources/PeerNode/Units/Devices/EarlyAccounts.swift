import Gossip
import Store

/// What a batch says about accounts, taken before anything of it is shown:
/// a catch-up brings a device's claim, its revocation and its posts
/// together, in no order between the device's and the account's
/// envelopes, and a revoked device's posts past its limit must not be
/// shown first. Claims and revocations are taken in the batch's own order,
/// so the outcome is the one the batch gives in place.
struct EarlyAccounts {
    /// Claims and revocations of the batch already taken, by envelope.
    var claims: [MessageID: Store.DeviceRow] = [:]
    var revocations: [MessageID: Store.RevocationRow] = [:]
    /// Every one tried (refused ones too: a refusal is counted once).
    var tried: Set<MessageID> = []

    init() {}

    /// Takes the claims and revocations of `batch` in the accounts room.
    init(_ batch: [StoredEnvelope], node: Node) {
        for stored in batch where stored.envelope.room == node.accountsRoom {
            let e = stored.envelope
            guard let opened = node.open(e) else { continue }
            switch opened.kind {
            case .device:
                tried.insert(e.id)
                if let row = node.acceptDeviceClaim(e, opened) { claims[e.id] = row }
            case .revoke:
                // One whose claim is not known yet is left to its place in the batch.
                if let row = node.devices.takeRevocationEarly(e, opened) {
                    tried.insert(e.id)
                    revocations[e.id] = row
                }
            default:
                break
            }
        }
    }
}
