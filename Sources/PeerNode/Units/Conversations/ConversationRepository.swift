import Crypto
import Gossip
import Store

/// The store as direct conversations use it: the conversation keys held
/// (ours with secrets, others' announced), the authors known (whose
/// conversations to map), and how many revocations the newest key leaves
/// out. Every call throws a `RepositoryError` naming what it was doing.
struct ConversationRepository {
    let store: Store

    /// Settings key: how many of our account's revoked devices the newest
    /// conversation key already leaves out.
    static let rekeyedRevocationsSetting = "conversation_key_revocations"

    func keys() throws(RepositoryError) -> [Store.ConversationKeyRow] {
        try storeCall("reading the conversation keys") { try store.conversationKeys() }
    }

    func save(_ row: Store.ConversationKeyRow) throws(RepositoryError) {
        try storeCall("saving a conversation key") { try store.saveConversationKey(row) }
    }

    func authors() throws(RepositoryError) -> Dictionary<PublicKey, UInt64>.Keys {
        try storeCall("reading the authors held") { try store.vectorClock().entries.keys }
    }

    func rekeyedRevocations() throws(RepositoryError) -> Int {
        try storeCall("reading the setting \(Self.rekeyedRevocationsSetting)") {
            (try store.setting(Self.rekeyedRevocationsSetting)).flatMap { Int($0) } ?? 0
        }
    }

    func setRekeyedRevocations(_ count: Int) throws(RepositoryError) {
        try storeCall("writing the setting \(Self.rekeyedRevocationsSetting)") { try store.setSetting(Self.rekeyedRevocationsSetting, String(count)) }
    }
}
