import Gossip

/// A batch of envelopes to many links (a push, a relay's fan-out): encoded
/// and chunked once, each link sealing its own copy in its Noise session,
/// on all the cores at once where the links and bytes make that pay.
extension LinkCore {
    /// Links one batch goes to before their seals are split across the cores
    /// (a relay's fan-out; a node's few links are sealed on the loop).
    public static let sealsSplitFrom = 8
    /// Bytes all those seals come to before they are split: under it the
    /// hand-off to another core (a wake-up, some microseconds) costs more than
    /// the half of the sealing it saves (64 KB: some 30 µs of AES-GCM).
    public static let splitSealBytes = 64 << 10

    /// An encoded batch on many links: as one link after another, but from
    /// `sealsSplitFrom` links on, with `inParallel` set, their seals are made
    /// on the cores at once (each link's Noise session is its own), then
    /// what each gave is done in link order, as one at a time would.
    mutating func send(_ encoded: EncodedBatch, on ids: [LinkID], now: Double, into out: inout [Effect]) {
        guard ids.count >= Self.sealsSplitFrom, encoded.bytes * ids.count >= Self.splitSealBytes, let inParallel, inParallel.count > 1 else {
            for id in ids { send(encoded, on: id, now: now, into: &out) }
            return
        }
        var taken: [LinkID] = []
        var sessions: [LinkSession] = []
        for id in ids {
            guard let at = links.index(forKey: id) else { continue }
            taken.append(id)
            sessions.append(links.values[at].session)
        }
        guard !taken.isEmpty else { return }
        count(.sealsSplit)
        let chunks = encoded.parts.flatMap(\.chunks)
        let given = SplitSeals(sessions)
        let perJob = (taken.count + inParallel.count - 1) / inParallel.count
        inParallel.run((taken.count + perJob - 1) / perJob) { job in
            for i in (job * perJob)..<min(given.count, (job + 1) * perJob) {
                given.seal(chunks, at: i)
            }
        }
        let (sealed, actions) = given.take()
        for (i, id) in taken.enumerated() where links.keys.contains(id) {
            links[id]?.session = sealed[i]
            count(.envelopesSent, by: encoded.batch.count)
            act(on: actions[i], of: id, now: now, into: &out, watch: nil)
        }
    }

    /// An encoded batch on one link: counted, each chunk sealed in its Noise session.
    mutating func send(_ encoded: EncodedBatch, on id: LinkID, now: Double, into out: inout [Effect]) {
        for part in encoded.parts {
            count(.envelopesSent, by: part.envelopes)
            for chunk in part.chunks {
                guard isLink(id) else { return }
                step(id, now: now, into: &out) { $0.send(chunk) }
            }
        }
    }
}

/// A batch of envelopes split into messages of at most `batchBytes`,
/// encoded and chunked: what `send` does for each link, done once for all
/// the links one decision sends the same batch to.
struct EncodedBatch {
    let batch: [CarriedEnvelope]
    let parts: [(envelopes: Int, chunks: [[UInt8]])]
    /// The bytes its chunks hold: what each link seals.
    let bytes: Int

    init(_ batch: [CarriedEnvelope]) {
        self.batch = batch
        // An empty batch is still one (empty) message, as it always was.
        let split = batch.count > 1 ? GossipMessage.batches(batch) : [batch]
        parts = split.map { ($0.count, GossipChunker.chunks(GossipMessage.envelopes($0).encoded)) }
        bytes = parts.reduce(0) { sum, part in part.chunks.reduce(sum) { $0 + $1.count } }
    }

    /// Whether `other` is this very batch: the same array storage (what
    /// `Replicator.push` gives every link that lacks all of it). Held here,
    /// the storage cannot be freed and reused for another array meanwhile.
    func holds(_ other: [CarriedEnvelope]) -> Bool {
        batch.count == other.count
            && batch.withUnsafeBufferPointer { mine in other.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
    }
}

/// Sessions whose seals `LinkCore` splits across the cores: job `i` writes
/// only session `i` and its actions, so no two jobs touch one place (raw
/// memory: an array's storage would be checked for exclusive access as a
/// whole, and two jobs writing two of its elements would trap).
private final class SplitSeals: @unchecked Sendable {
    private let sessions: UnsafeMutablePointer<LinkSession>
    private let actions: UnsafeMutablePointer<[LinkSession.Action]>
    let count: Int

    init(_ given: [LinkSession]) {
        count = given.count
        sessions = .allocate(capacity: max(1, count))
        sessions.initialize(from: given, count: count)
        actions = .allocate(capacity: max(1, count))
        actions.initialize(repeating: [], count: count)
    }

    deinit {
        sessions.deinitialize(count: count)
        sessions.deallocate()
        actions.deinitialize(count: count)
        actions.deallocate()
    }

    /// Seals each chunk in session `i`, in order (a failed session seals no more).
    func seal(_ chunks: [[UInt8]], at i: Int) {
        for chunk in chunks {
            let given = sessions[i].send(chunk)
            actions[i] += given
            if given.isEmpty || sessions[i].failed != nil { break }
        }
    }

    /// The sessions as the seals left them, and what each gave (once every job is done).
    func take() -> ([LinkSession], [[LinkSession.Action]]) {
        (Array(UnsafeBufferPointer(start: sessions, count: count)), Array(UnsafeBufferPointer(start: actions, count: count)))
    }
}
