import Foundation
import TestSupport
import Testing

/// The contract of docs/PROTOCOL.md, checked by a peer that shares no code
/// with the node: Tests/PeerNodeTests/Peers/outside_peer.py (Python
/// `websockets`, `noiseprotocol`, hashlib, `cryptography`, libsodium through
/// ctypes), written from the document alone, against a real node.
@Suite("A peer written from docs/PROTOCOL.md alone")
struct OutsidePeerTests {
    @Test("""
        it links both ways (dialling, and dialled for --peer with keep), reads the node's discovery datagrams, has a query \
        answered and its own announcement dialled, reads /device add's linking datagrams (another's not dialled), sees 6 kinds of bad datagram dropped by their reasons, pushes a text, an edit, a tombstone and a typing \
        notice that the node shows, reads the node's posts pushed and by request with every signature, id, chain link \
        and body checked, prunes an author to ids (ihave) and grafts it back to full while the node's own posts stay \
        full, has version-4 runs taken on the signature at their top (§4 "Chains vouch": a garbled signature the next \
        envelope names taken with it and refused alone, one a peer swapped refused), sees nothing too new on a version-4 \
        or version-9 link, is refused at the handshake for another network key or a 33-byte nick \
        claim (a claim with the separator dot only ignored), meets the unknown-author cap at 4 096 and one past, is refused with the close code the document names \
        for 20 kinds of bad message, and meets the hop, forged-envelope, membership-rate, join and reserve limits at \
        the limit and one past
        """)
    func fromTheDocument() async throws {
        try await run("outside_peer.py", log: "outside-peer.log", atLeast: 80)
    }

    @Test("""
        what is sealed (§2, §5, §13–§15): a direct message both ways and its receipt in the pair's room; a PNIV invite \
        shown, accepted and used both ways, and invites naming #general's or the conversation's room id refused; a \
        private room's create, invite event and PNI2 with the epoch key sealed to our identity, our post at epoch 1 \
        shown, a member's kick of the owner not shown, alice's kick with its limit and our later post refused; a \
        device's claim, its post shown as the account's, a direct message sealed to the certificate's conversation \
        key, a revocation with the device's next post refused, and a rekey to epoch 2; a room it makes and invites the node \
        to, accepted, read from before, posted in, then its kick (nothing newer opened) and a declined one's leave; and \
        joining the node's account as a device: CPace, a refused name, the grant field by field, its claim, follows both ways; \
        and 17 refusals inside valid envelopes (nicks, edits, reactions, each claim rule, revocations, rekeys, malformed invites); \
        issue 43: the room id's hash, a create ground below the founder's from a member, a kicked member and an invitee who \
        declined (nothing changes), a device claimed after the kick (none of its posts shown, back-dated or not), a \
        revoked device's posts past its limit in no answer on the node or a fresh one, its forks below the limit refused \
        (72-byte revocation), and a revocation taken when a fork broke the chain it depends on
        """)
    func sealedParts() async throws {
        try await run("outside_rooms.py", log: "outside-rooms.log", atLeast: 95)
    }

    @Test("""
        files (§16): the node's offer read field by field, every chunk asked for, each proof folded to the root and         each chunk opened at its index, the whole the file; a want for an unknown root answered none, one past the         file's end closing the link (1008); our hand-made offer fetched, checked and saved whole by the node; a bad         chunk counted and its peer asked nothing more; a file message on a version-6 link dropped and counted
        """)
    func files() async throws {
        try await run("outside_files.py", log: "outside-files.log", atLeast: 17)
    }

    @Test("""
        the file messages' bounds (§11's table, types 13–16): wants, wants naming their offer, chunks and nones each at \
        their limits (indices, size, chunk index, proof, sealed length, offer sequence) with the link kept and answered, \
        and one past each, out of order, overlong or with a byte more closing the link (1008, bad_gossip_message); the \
        largest offer that reads, and ten offers past a bound or cut short shown numbered as ones that do not read, /get \
        of each refused; a file held whole answering none past its end whatever size a want names; a chunk sent \
        unasked not taken, asked for again, and the file whole
        """)
    func fileLimits() async throws {
        try await run("outside_file_limits.py", log: "outside-file-limits.log", atLeast: 46)
    }

    @Test("""
        an ask for a chunk the node is still fetching (§16): one it asked another peer for waits and is answered with \
        the chunk as soon as it came; one never served is answered none after the patience (0.5 s, within 0.75 s); one \
        asked of nobody yet is answered none at once
        """)
    func fileWaits() async throws {
        try await run("outside_file_waits.py", log: "outside-file-waits.log", atLeast: 6)
    }

    /// Runs one of the outside peer's scripts against the node; what it
    /// checked is kept in .build/`log`. It must end "ALL OK" with at least
    /// `atLeast` checks passed (a script that stopped early checked less).
    private func run(_ script: String, log: String, atLeast: Int) async throws {
        if WebPeers.missing([WebPeers.python]) { return }
        let check = try WebPeers.start(script, [PeerNodeProcess.binary])
        let status = await check.exited()
        try? check.output.write(toFile: WebPeers.logDirectory + "/" + log, atomically: true, encoding: .utf8)
        #expect(status == 0, "\(check.output)")
        #expect(check.output.split(separator: "\n").last == "ALL OK", "\(check.output)")
        #expect(check.output.split(separator: "\n").count { $0.hasPrefix("ok ") } >= atLeast, "\(check.output)")
    }
}
