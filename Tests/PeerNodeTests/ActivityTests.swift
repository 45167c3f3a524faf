import ChatText
import Testing

/// The act list and the mention rule (issue 17): pure.
@Suite("Mentions and the act list")
struct ActivityTests {
    @Test("a nick is named as a whole word in any case; a longer word holding it is not; no nick names nothing")
    func mentions() {
        #expect(Mentions.names("alice", in: "alice, lunch?"))
        #expect(Mentions.names("alice", in: "Lunch @ALICE!"))
        #expect(Mentions.names("bob-x", in: "hi bob-x"))
        #expect(!Mentions.names("alice", in: "malice and palace"))
        #expect(!Mentions.names("bob", in: "bob-x is here"))
        #expect(!Mentions.names("", in: "anything at all"))
    }

    @Test("[Act: N] lists rooms with news by their /rooms number, * where one named us; opening a room clears it; rooms no longer listed are left out")
    func actList() {
        var a = Activity()
        #expect(a.line(order: ["#general", "#random"]) == "")
        a.arrived(in: "#random", mention: false)
        #expect(a.line(order: ["#general", "#random"]) == "[Act: 2] ")
        a.arrived(in: "#general", mention: true)
        a.arrived(in: "#random", mention: false)
        #expect(a.line(order: ["#general", "#random"]) == "[Act: 1*,2] ")
        #expect(a.unseen["#random"]?.messages == 2 && a.mentioned(in: "#general") && !a.mentioned(in: "#random"))
        // A mention stays marked until the room is seen, whatever comes after it.
        a.arrived(in: "#general", mention: false)
        #expect(a.line(order: ["#random", "#general"]) == "[Act: 1,2*] ")
        a.seen("#general")
        #expect(a.line(order: ["#general", "#random"]) == "[Act: 2] ")
        #expect(a.line(order: ["#general"]) == "")
    }

    @Test("/mentions parses, takes no argument, and is in /help")
    func parsing() {
        #expect(ChatInput.parse("/mentions") == .mentions)
        #expect(ChatInput.parse("/mentions me") == .error("/mentions takes no argument"))
        #expect(ChatInput.helpText.contains("/mentions"))
    }
}
