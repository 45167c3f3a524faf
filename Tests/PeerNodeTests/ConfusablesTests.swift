import ChatText
import Crypto
import TestSupport
@testable import PeerNode
import Testing

@Suite("Nicks that impersonate another's")
struct ConfusablesTests {
    @Test("skeletons fold look-alikes (Cyrillic, Greek, digits), case, and invisible marks")
    func skeletons() {
        #expect(Confusables.skeleton("alice") == Confusables.skeleton("аlice"))  // Cyrillic а
        #expect(Confusables.skeleton("bob") == Confusables.skeleton("b0b"))
        #expect(Confusables.skeleton("Paul") == Confusables.skeleton("раul"))    // Cyrillic р, а
        #expect(Confusables.skeleton("alice") == Confusables.skeleton("al\u{200B}ice"))  // zero-width space
        #expect(Confusables.skeleton("alice") == Confusables.skeleton("ALICE"))
        #expect(Confusables.skeleton("alice") != Confusables.skeleton("alina"))
        #expect(Confusables.mixesScripts("аlice"))
        #expect(!Confusables.mixesScripts("alice") && !Confusables.mixesScripts("Алиса") && !Confusables.mixesScripts("zoë"))
    }

    @Test("a nick another identity took first marks the newcomer only (the same nick too; fingerprints alone are not read); a mixed-script nick is marked; leaving the nick clears it")
    func index() throws {
        let keys = try (0..<4).map { _ in try SigningKey.generate().publicKey }
        var index = ConfusableIndex<PublicKey>()
        index.set(keys[0], nick: "alice")
        #expect(index.suspicious.isEmpty)
        index.set(keys[1], nick: "alice")
        #expect(index.suspicious == [keys[1]], "the second alice is marked; the first keeps a clean label")
        index.set(keys[2], nick: "аlice")  // Cyrillic а: mixed scripts, and looks like alice
        #expect(index.suspicious == [keys[1], keys[2]])
        // The impostor changes its nick: it is clean again; the second alice still is not first.
        index.set(keys[2], nick: "mallory")
        #expect(index.suspicious == [keys[1]])
        index.set(keys[3], nick: "b0b")
        index.set(keys[2], nick: "bob")
        #expect(index.suspicious == [keys[1], keys[2]], "bob came after b0b: bob is the newcomer")
        // Same text again changes nothing.
        index.set(keys[3], nick: "b0b")
        #expect(index.suspicious == [keys[1], keys[2]])
        // The first alice leaves the nick: the second is now the only alice, and clean.
        index.set(keys[0], nick: "carol")
        #expect(index.suspicious == [keys[2]])

        Renderer.style = .plain
        let r = Renderer(people: People(nicks: [keys[2]: PeerText("bob"), keys[0]: PeerText("alice")], lookAlike: index.suspicious))
        #expect(r.label(keys[2]) == "bob⚠·" + keys[2].shortFingerprint)
        #expect(r.label(keys[0]) == "alice·" + keys[0].shortFingerprint)
    }
}

@Suite("Room names that impersonate another room")
struct ConfusableRoomTests {
    @Test("joining a room that looks like a known one warns (also a mixed-script name); an ordinary new room does not")
    func join() async throws {
        #expect(Confusables.roomWarning("#generаl", known: ["#general"])?.contains("looks like #general") == true)  // Cyrillic а
        #expect(Confusables.roomWarning("#general", known: ["#general"]) == nil)
        #expect(Confusables.roomWarning("#random", known: ["#general"]) == nil)
        #expect(Confusables.roomWarning("#rаndom", known: [])?.contains("mixes") == true)
        let dir = TemporaryDirectory()
        let r = try await PeerNodeProcess.run(["--data-dir", dir.path, "--no-discovery"], input: "hello\n/join #generаl\n/join #random\n")
        #expect(r.status == 0)
        #expect(r.stdout.contains("-- ⚠ #generаl looks like #general but is another room"), "\(r.stdout)")
        #expect(!r.stdout.contains("⚠ #random"))
    }

    @Test("the prompt of a look-alike room carries ⚠ for as long as one is in it, not only when it is joined")
    func prompt() throws {
        let dir = TemporaryDirectory()
        var options = Options()
        options.dataDirectory = dir.path
        let session = try ChatSession(node: try Node(options: options, environment: [:]), room: .general)
        #expect(session.prompt == "#general> ")
        _ = try session.join("#generаl")  // Cyrillic а
        #expect(session.prompt == "#generаl⚠> ")
        _ = try session.join("#random")
        #expect(session.prompt == "#random> ")
        _ = try session.join("#rаndom")
        #expect(session.prompt == "#rаndom⚠> ", "mixed scripts")
    }
}

/// The same nick from two machines, through real nodes (issue 44).
@Suite("A second identity with a nick already taken")
struct SameNickTests {
    @Test("a second alice carries ⚠ on carol's node (look_alike), the first alice does not, even after the second came")
    func secondAlice() async throws {
        let dirs = (0..<3).map { _ in TemporaryDirectory() }
        let carol = try NodeProcess(dir: dirs[0].path, ["--nick", "carol"])
        #expect(await started(carol))
        let first = try NodeProcess(dir: dirs[1].path, ["--nick", "alice", "--peer", carol.url])
        #expect(await started(first))
        first.send("the first alice")
        let before = await carol.wait(timeout: 30) { $0["text"] == "the first alice" }
        #expect(before?["nick"] == "alice" && before?["look_alike"] == nil, "\(before ?? [:])")
        let second = try NodeProcess(dir: dirs[2].path, ["--nick", "alice", "--peer", carol.url])
        #expect(await started(second))
        second.send("the second alice")
        let hers = await carol.wait(timeout: 30) { $0["text"] == "the second alice" }
        #expect(hers?["nick"] == "alice" && hers?["look_alike"] == "yes", "\(hers ?? [:])")
        first.send("still the first")
        let his = await carol.wait { $0["text"] == "still the first" }
        #expect(his != nil && his?["look_alike"] == nil, "\(his ?? [:])")
        await second.quit(); await first.quit(); await carol.quit()
        withExtendedLifetime(dirs) {}
    }
}

/// What /block, /msg and /whois take (issue 44): exactly what the screen shows, and the fingerprint alone.
@Suite("Naming someone as the screen shows them")
struct PeopleResolveTests {
    @Test("the label with its marks (alice⚠·fp, bob·fp✔, (forked)), the nick, the fingerprint alone and the id all name the person; a fingerprint nobody has does not")
    func labels() throws {
        let keys = try (0..<2).map { _ in try SigningKey.generate().publicKey }
        let people = People(nicks: [keys[0]: PeerText("alice"), keys[1]: PeerText("bob")], lookAlike: [keys[0]])
        #expect(try people.resolve("alice⚠·" + keys[0].shortFingerprint) == keys[0])
        #expect(try people.resolve("bob·" + keys[1].shortFingerprint + "✔") == keys[1])
        #expect(try people.resolve("bob·" + keys[1].shortFingerprint + "(forked)") == keys[1])
        #expect(try people.resolve(keys[1].shortFingerprint) == keys[1])
        #expect(try people.resolve("alice") == keys[0] && people.resolve(keys[0].hex) == keys[0])
        let unknown = keys[0].shortFingerprint == "zzzz" ? "yyyy" : "zzzz"
        #expect(throws: NodeError.self) { try people.resolve(unknown) }
    }
}
