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
        answered and its own announcement dialled, sees 6 kinds of bad datagram dropped by their reasons, pushes a text, an edit, a tombstone and a typing \
        notice that the node shows, reads the node's posts pushed and by request with every signature, id, chain link \
        and body checked, prunes an author to ids (ihave) and grafts it back to full while the node's own posts stay \
        full, sees nothing too new on a version-4 link, is refused at the handshake for another network key or a 33-byte nick \
        claim (a claim with the separator dot only ignored), meets the unknown-author cap at 4 096 and one past, is refused with the close code the document names \
        for 20 kinds of bad message, and meets the hop, forged-envelope, membership-rate, join and reserve limits at \
        the limit and one past
        """)
    func fromTheDocument() async throws {
        if WebPeers.missing([WebPeers.python]) { return }
        let check = try WebPeers.start("outside_peer.py", [PeerNodeProcess.binary])
        let status = await check.exited()
        try? check.output.write(toFile: WebPeers.logDirectory + "/outside-peer.log", atomically: true, encoding: .utf8)
        #expect(status == 0, "\(check.output)")
        #expect(check.output.split(separator: "\n").last == "ALL OK", "\(check.output)")
        #expect(check.output.split(separator: "\n").count { $0.hasPrefix("ok ") } >= 50, "\(check.output)")
    }
}
