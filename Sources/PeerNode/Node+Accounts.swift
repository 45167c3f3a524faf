import Crypto
import Foundation
import Gossip
import Store

/// Accounts and their devices (docs/PROTOCOL.md §15). An identity is an
/// account with one device, itself. A device of another account signs its
/// own chain with its own key and claims the account once, with the
/// account's certificate, in the accounts room; from that claim on every
/// node shows what the device signs as the account's.
extension Node {
    /// Our account: the one this device joined, or our own key.
    var account: PublicKey { people.account(me) }

    /// The accounts room's key for `id`, when `id` is that room.
    func accountsRoomKey(_ id: RoomID) -> SymmetricKey? {
        id == accountsRoom ? accountsKey : nil
    }

    /// Devices known from delivered claims, read at start.
    func loadAccounts() throws {
        for row in try store.devices() { people.accounts[row.device] = row.account }
    }

    /// A delivered device claim: the device now shows as its account. Nil
    /// (and counted `device_refused`) when the claim does not hold: its
    /// certificate does not verify or names another device, it is not in the
    /// accounts room, the device claimed an account before, or either key is
    /// already the other kind (an account with devices cannot become a
    /// device; a device cannot be an account).
    func acceptDeviceClaim(_ e: Envelope, _ opened: OpenedEnvelope) -> Store.DeviceRow? {
        // Our own claim, taken when it was posted, is delivered once more.
        if e.author == me, people.accounts[me] != nil { return nil }
        guard e.room == accountsRoom, let certificate = try? DeviceCertificate.decode(opened.content),
              certificate.device == e.author, people.accounts[e.author] == nil, people.accounts[certificate.account] == nil,
              !people.accounts.values.contains(e.author)
        else {
            refusedDeviceClaims &+= 1
            return nil
        }
        let row = Store.DeviceRow(device: e.author, account: certificate.account, name: certificate.name,
                                  issued: certificate.issued, claim: e.sequence)
        do { try store.addDevice(row) } catch { return nil }
        people.accounts[e.author] = certificate.account
        announce(certificate, claim: e)
        return row
    }

    /// The devices of the account `key` signs for, the account's own first.
    func devices(of key: PublicKey) throws -> [Store.DeviceRow] {
        let account = people.account(key)
        let root = Store.DeviceRow(device: account, account: account, name: "first device", issued: 0, claim: 0)
        return [root] + (try store.devices(of: account))
    }

    /// The name a claimed device goes by (its certificate's), nil for an
    /// account key or a key that claimed nothing.
    func deviceName(_ device: PublicKey) -> String? {
        let account = people.account(device)
        guard account != device else { return nil }
        return storeFailures.read("an account's devices") { try store.devices(of: account) }?.first { $0.device == device }?.name
    }

    /// What this account hands a device it links: a certificate for
    /// `device` signed now, our nick, rooms, trust marks and blocks.
    func grant(for device: PublicKey, name: String) throws -> DeviceGrant {
        guard account == me else { throw NodeError.notAccountKey(account) }
        let (epoch, box) = try newestOwnBoxKey()
        let certificate = try DeviceCertificate.issue(by: identity, for: device, name: name, at: Self.now(), epoch: epoch, conversationKey: box.publicKey)
        let privates = privateRooms.map { DeviceGrant.PrivateRoom(id: $0.key, key: $0.value.key.exportedBytes, name: $0.value.name) }
        let publics = roomNames.filter { privateRooms[$0.key] == nil }.map(\.value)
        return DeviceGrant(certificate: certificate, conversationSecret: box.exportedSecret, nick: nick.flatMap { try? Nick($0) }, privateRooms: privates,
                           publicRooms: publics.sorted { $0.value < $1.value }, trusted: Array(people.trusted),
                           blocked: Array(try store.blockedIdentities()),
                           roomKeys: try store.roomKeys(),
                           olderSecrets: ownBoxKeys.filter { $0.key != 0 && $0.key != Self.identityEpoch && $0.key != epoch }
                               .sorted { $0.key < $1.key }.map { ($0.key, $0.value.exportedSecret) })
    }

    /// Takes what an account handed this device: its rooms, keys, marks and
    /// blocks, then signs our claim (the first envelope we post as the
    /// account's device) and the account's nick.
    func accept(_ grant: DeviceGrant) throws {
        guard grant.certificate.device == me else { throw NodeError.notAccountKey(grant.certificate.account) }
        // What the grant gives is the account's already: nothing to tell the other devices.
        applyingFollow = true
        defer { applyingFollow = false }
        for room in grant.privateRooms where privateRooms[room.id] == nil {
            guard let key = try? SymmetricKey(bytes: room.key) else { continue }
            try store.addPrivateRoom(room.id, name: room.name.value, key: room.key)
            privateRooms[room.id] = (room.name, key)
            roomNames[room.id] = room.name
        }
        for k in grant.roomKeys where privateRooms[k.room] != nil && (try? SymmetricKey(bytes: k.key)) != nil {
            try store.saveRoomKey(k)
        }
        for name in grant.publicRooms { _ = try join(name) }
        for key in grant.trusted { try store.setTrusted(key, true, at: Self.now()) }
        for key in grant.blocked { try store.setBlocked(key, true, at: Self.now()) }
        people.trusted = try store.trustedIdentities()
        let claim = try appendOwn(room: accountsRoom, kind: .device, content: grant.certificate.encoded, key: accountsKey)
        guard let opened = open(claim), acceptDeviceClaim(claim, opened) != nil else {
            throw NodeError.notAccountKey(grant.certificate.account)
        }
        // The account's conversation key, so this device opens conversations on its own.
        try store.saveConversationKey(Store.ConversationKeyRow(account: grant.certificate.account, epoch: grant.certificate.epoch,
                                                               publicKey: grant.certificate.conversationKey, secret: grant.conversationSecret, claim: nil))
        for older in grant.olderSecrets where older.epoch != 0 {
            guard let pair = try? BoxKeyPair(secretBytes: older.secret) else { continue }
            try store.saveConversationKey(Store.ConversationKeyRow(account: grant.certificate.account, epoch: older.epoch,
                                                                   publicKey: pair.publicKey, secret: older.secret, claim: nil))
        }
        try reloadConversationKeys()
        try loadRoomMemberships()
        if let nick = grant.nick { try post(nick.value, kind: .nick, in: .general) }
    }
}
