import Crypto
import Foundation
import Gossip
@testable import PeerNode
import TestSupport
import Testing

/// `/files` as a person reads it at a terminal and as a script or the
/// API reads it (`files`, `file_listed`): the same listing, every state.
@Suite("/files: the terminal's lines and the JSON rows of one listing")
struct FileListingTests {
    let units = FileUnitTests()

    /// A listing of bob's offer in every state `/files` tells apart, and the room's name.
    func listing(_ dir: TemporaryDirectory, more: Bool = false) throws -> FileListing {
        let (node, offered, offer) = try units.offeredToNode(dir)
        let bob = node.people[offered.author]
        func row(_ n: Int?, _ state: FileListing.State, saved: (String, Bool)? = nil, saving: String? = nil) -> FileListing.Row {
            FileListing.Row(number: n, envelope: offered, offer: offer, from: bob, state: state, saved: saved, saving: saving)
        }
        return FileListing(place: "#general", room: .general, with: nil, rows: [
            row(1, .notFetched),
            row(2, .fetching(bytes: 64_000), saving: "/tmp/in\u{1B}[31m"),
            row(3, .held, saved: ("/tmp/in/plan.pdf", true)),
            row(4, .held, saved: ("/tmp/in/plan.pdf", false)),
            row(nil, .held),
        ], more: more)
    }

    @Test("at a terminal: a line per offer with its number, name, size and author, what is held, where it was saved or that it is gone, where a /get saves, paths inert")
    func terminalLines() throws {
        let dir = TemporaryDirectory()
        let lines = try listing(dir).lines
        #expect(lines.first == "-- files offered in #general:")
        #expect(lines.count == 6, "\(lines)")
        #expect(lines[1].hasPrefix("  (1) plan.pdf 100 kB from ") && lines[1].hasSuffix(": not fetched"), "\(lines[1])")
        #expect(lines[2].hasSuffix(": 64 kB fetched, saving into /tmp/in^[[31m (/cancel 2 stops it)"), "\(lines[2])")
        #expect(lines[3].hasSuffix(": held, saved to /tmp/in/plan.pdf"), "\(lines[3])")
        #expect(lines[4].hasSuffix(": held, saved to /tmp/in/plan.pdf but gone from there (/get 4 saves it again)"), "\(lines[4])")
        #expect(lines[5].hasPrefix("  plan.pdf 100 kB from ") && lines[5].hasSuffix(": held"), "no number, no (N): \(lines[5])")
        #expect(!lines.joined().contains("\u{1B}"), "nothing from the disk or the network acts on the terminal")
        let more = try listing(TemporaryDirectory(), more: true).lines
        #expect(more[1] == "  (older ones not listed: these are the newest \(Files.maximumListed))", "\(more)")
        #expect(FileListing(place: "#dev", room: nil, with: nil, rows: [], more: false).lines == ["-- no files offered in #dev"])
    }

    @Test("in --json and the API: a files head (room, count, more) and a file_listed row per offer with its state, bytes, saving, saved and saved_gone")
    func jsonRows() throws {
        let dir = TemporaryDirectory()
        let listing = try listing(dir, more: true)
        let lines = JSONPresenter.lines(.files(listing))
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 6)
        #expect(objects[0]["type"] as? String == "files" && objects[0]["room"] as? String == "#general" && objects[0]["count"] as? Int == 5
                && objects[0]["more"] as? String == "yes", "\(objects[0])")
        let rows = objects.dropFirst().map { $0 }
        #expect(rows.allSatisfy { $0["type"] as? String == "file_listed" && $0["name"] as? String == "plan.pdf" && $0["size"] as? Int == 100_000
            && $0["room"] as? String == "#general" && ($0["root"] as? String)?.count == 64 && ($0["id"] as? String)?.count == 64 })
        #expect(rows.map { $0["state"] as? String } == ["not_fetched", "fetching", "held", "held", "held"])
        #expect(rows.map { $0["bytes"] as? Int } == [0, 64_000, 100_000, 100_000, 100_000])
        #expect(rows.map { $0["n"] as? Int } == [1, 2, 3, 4, nil])
        #expect(rows[1]["saving"] as? String == "/tmp/in\u{1B}[31m", "a path is a JSON string, escaped by JSON: \(rows[1])")
        #expect(rows[2]["saved"] as? String == "/tmp/in/plan.pdf" && rows[2]["saved_gone"] == nil)
        #expect(rows[3]["saved"] as? String == "/tmp/in/plan.pdf" && rows[3]["saved_gone"] as? String == "yes")
        #expect(!lines.joined().contains("\u{1B}"), "the escape travels as \\u001b, never raw")
    }
}
