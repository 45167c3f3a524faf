import Foundation
import Testing
import TermUI

@Suite("Line editing")
struct LineEditorTests {
    func type(_ e: inout LineEditor, _ text: String) {
        for s in text.unicodeScalars { _ = e.apply(.character(s)) }
    }

    @Test("insert in the middle, Home/End, Backspace, Delete, Ctrl-U/K/W")
    func editing() {
        var e = LineEditor()
        type(&e, "abc")
        _ = e.apply(.left)
        _ = e.apply(.left)
        type(&e, "X")
        #expect(e.text == "aXbc" && e.cursor == 2)
        _ = e.apply(.home)
        _ = e.apply(.delete)
        #expect(e.text == "Xbc" && e.cursor == 0)
        _ = e.apply(.control("e"))
        _ = e.apply(.backspace)
        #expect(e.text == "Xb")
        e.set("hello big world")
        _ = e.apply(.control("w"))
        #expect(e.text == "hello big ")
        _ = e.apply(.control("a"))
        _ = e.apply(.right)
        _ = e.apply(.control("k"))
        #expect(e.text == "h")
        _ = e.apply(.control("u"))
        #expect(e.text == "" && e.cursor == 0)
        #expect(e.apply(.backspace) == .bell)
        #expect(e.apply(.left) == LineEditor.Outcome.none)
    }

    @Test("Enter submits and keeps history; Up/Down walk it and give back the draft")
    func history() {
        var e = LineEditor()
        type(&e, "first")
        #expect(e.apply(.enter) == .submit("first"))
        type(&e, "second")
        #expect(e.apply(.enter) == .submit("second"))
        type(&e, "draft")
        _ = e.apply(.up)
        #expect(e.text == "second")
        _ = e.apply(.up)
        #expect(e.text == "first")
        #expect(e.apply(.up) == .bell)
        _ = e.apply(.down)
        _ = e.apply(.down)
        #expect(e.text == "draft")
        #expect(e.apply(.enter) == .submit("draft"))
        #expect(e.history == ["first", "second", "draft"])
        #expect(e.apply(.enter) == .submit(""))
        #expect(e.history.count == 3, "empty lines are not kept")
    }

    @Test("Up offers the last message to edit before the lines typed; control characters in it are dropped; Down gives the draft back")
    func editOffer() {
        var e = LineEditor()
        type(&e, "hello")
        _ = e.apply(.enter)
        let offer = Completer(lastMessage: "/edit hel\u{1B}lo")
        type(&e, "dr")
        _ = e.apply(.up, completer: offer)
        #expect(e.text == "/edit hello" && e.cursor == 11)
        _ = e.apply(.up, completer: offer)
        #expect(e.text == "hello")
        #expect(e.apply(.up, completer: offer) == .bell)
        _ = e.apply(.down, completer: offer)
        _ = e.apply(.down, completer: offer)
        #expect(e.text == "dr")
        var fresh = LineEditor()
        _ = fresh.apply(.up, completer: offer)
        #expect(fresh.text == "/edit hello", "offered with no history at all")
        #expect(fresh.apply(.up) == .bell, "nothing without an offer or history")
    }

    @Test("Ctrl-C clears a typed line and quits on an empty one; Ctrl-D quits on an empty line and deletes otherwise")
    func quitting() {
        var e = LineEditor()
        #expect(e.apply(.control("d")) == .quit)
        type(&e, "ab")
        _ = e.apply(.home)
        #expect(e.apply(.control("d")) == .redraw)
        #expect(e.text == "b")
        #expect(e.apply(.control("c")) == .redraw, "a half-typed line is cleared, the node goes on")
        #expect(e.text == "" && e.cursor == 0)
        #expect(e.apply(.control("c")) == .quit, "on an empty line it quits")
    }

    @Test("a pasted tab is kept in the line as a tab; a typed Tab completes instead")
    func pastedTab() {
        var e = LineEditor()
        type(&e, "a")
        let inserted = e.insertTab()
        #expect(inserted)
        type(&e, "b")
        #expect(e.text == "a\tb")
        #expect(PromptLine(prompt: "> ", columns: 40, width: { _ in 1 }).render(e).contains("> a b"), "shown as a space")
    }

    @Test("the line holds maximumLength characters; one more rings the bell")
    func limit() {
        var e = LineEditor()
        e.set(String(repeating: "x", count: LineEditor.maximumLength - 1))
        #expect(e.apply(.character("y")) == .redraw)
        #expect(e.apply(.character("z")) == .bell)
        #expect(e.text.count == LineEditor.maximumLength)
    }

    @Test("Tab completes commands, rooms and nicks; several matches extend to the common prefix and are listed")
    func completion() {
        let completer = Completer(commands: ["/join", "/j", "/msg", "/me"], rooms: ["#general", "#games"], nicks: ["alice", "alan", "bob"])
        var e = LineEditor()
        type(&e, "/jo")
        #expect(e.apply(.tab, completer: completer) == .redraw)
        #expect(e.text == "/join ")
        type(&e, "#ge")
        #expect(e.apply(.tab, completer: completer) == .redraw)
        #expect(e.text == "/join #general ")
        e.set("hi al")
        #expect(e.apply(.tab, completer: completer) == .choices(["alan", "alice"]))
        #expect(e.text == "hi al")
        e.set("hi Bo")
        _ = e.apply(.tab, completer: completer)
        #expect(e.text == "hi bob ")
        e.set("/m")
        #expect(e.apply(.tab, completer: completer) == .choices(["/me", "/msg"]))
        e.set("say /jo")
        #expect(e.apply(.tab, completer: completer) == .bell, "commands only as the first word")
        e.set("zz")
        #expect(e.apply(.tab, completer: completer) == .bell)
    }

    @Test("the line never holds a control character: typed, pasted, set, or completed from a hostile nick or room")
    func controlsStayOut() {
        var e = LineEditor()
        for c: Unicode.Scalar in ["\u{1B}", "\u{07}", "\u{7F}", "\u{9B}", "\u{85}", "\u{00}"] {
            #expect(e.apply(.character(c)) == .bell)
        }
        #expect(e.text.isEmpty)
        e.set("a\u{1B}[2Jb\u{9B}c")
        #expect(e.text == "a[2Jbc")
        // Nicks and rooms come from the network: ESC or C1 in one keeps it out of completion.
        let completer = Completer(rooms: ["#ok", "#o\u{1B}]0;pwned\u{07}"], nicks: ["mallory\u{1B}[2J", "mal\u{9B}6n", "malcolm"])
        e.set("hi mal")
        #expect(e.apply(.tab, completer: completer) == .redraw)
        #expect(e.text == "hi malcolm ")
        e.set("/join #o")
        #expect(e.apply(.tab, completer: completer) == .redraw)
        #expect(e.text == "/join #ok ")
    }
}

@Suite("The prompt line")
struct PromptLineTests {
    @Test("prompt, text and cursor; a long line scrolls to keep the cursor in view; wide characters count two columns")
    func render() {
        var e = LineEditor()
        e.set("hello")
        let p = PromptLine(prompt: "#general> ", columns: 80, width: DisplayWidth.of)
        #expect(p.render(e) == "\r\u{1B}[K#general> hello\r\u{1B}[15C")
        _ = e.apply(.home)
        #expect(p.render(e) == "\r\u{1B}[K#general> hello\r\u{1B}[10C")
        var long = LineEditor()
        long.set(String(repeating: "a", count: 100) + "END")
        let narrow = PromptLine(prompt: "> ", columns: 20, width: DisplayWidth.of)
        let drawn = narrow.render(long)
        #expect(drawn.contains("END") && !drawn.contains(String(repeating: "a", count: 20)))
        var wide = LineEditor()
        wide.set("日本")
        #expect(p.render(wide).hasSuffix("\r\u{1B}[14C"))
        #expect(DisplayWidth.of("😀") == 2 && DisplayWidth.of("\u{301}") == 0 && DisplayWidth.of("a") == 1)
    }

    @Test("a prompt wider than the terminal is cut from its start, so it never folds onto a second row: '…' and its end (room and mark) stay, a third of the row is left for typing")
    func widePrompt() {
        var e = LineEditor()
        e.set("hi")
        let prompt = "[Act: " + (1...40).map(String.init).joined(separator: ",") + "] #secret-2 (invited as #secret) ✓✓> "
        let p = PromptLine(prompt: prompt, columns: 80, width: DisplayWidth.of)
        let (shown, width) = p.fittedPrompt
        #expect(shown.hasPrefix("…") && shown.hasSuffix("#secret-2 (invited as #secret) ✓✓> ") && width == 80 - p.typingRoom - 1, "\(shown) \(width)")
        #expect(p.render(e) == "\r\u{1B}[K" + shown + "hi\r\u{1B}[\(width + 2)C")
        // One that fits is drawn whole.
        let fits = PromptLine(prompt: String(repeating: "x", count: 80 - p.typingRoom - 1), columns: 80, width: DisplayWidth.of)
        #expect(fits.fittedPrompt.text == fits.prompt)
        let over = PromptLine(prompt: String(repeating: "x", count: 80 - p.typingRoom), columns: 80, width: DisplayWidth.of)
        #expect(over.fittedPrompt.text.hasPrefix("…") && over.fittedPrompt.width == 80 - p.typingRoom - 1)
    }

    @Test("lines printed above the prompt come first, then the half-typed line is drawn again")
    func printAbove() {
        var e = LineEditor()
        e.set("half")
        let p = PromptLine(prompt: "#general> ", columns: 80)
        #expect(p.printAbove(["[14:02] #general <bob·7hq2> hi"], editor: e)
            == "\r\u{1B}[K[14:02] #general <bob·7hq2> hi\r\n\r\u{1B}[K#general> half\r\u{1B}[14C")
    }

    @Test("long lines wrap to the width: at the last space, else hard; continuation rows indented; colours take no width and stay whole; a lone long word is left whole")
    func wrapping() {
        let p = PromptLine(prompt: "> ", columns: 12, width: DisplayWidth.of)
        #expect(p.wrap("short") == ["short"])
        #expect(p.wrap("[14:02] <al> hello there") == ["[14:02] <al>", "      hello", "      there"])
        let hard = PromptLine(prompt: "> ", columns: 8, width: DisplayWidth.of)
        #expect(hard.wrap("x abcdefghijkl") == ["x abcdef", "    ghij", "    kl"])
        #expect(hard.wrap("x 日本語日本語") == ["x 日本語", "    日本", "    語"])
        // One long word alone (the page's address with its token) is never cut: the terminal folds it, and it copies whole.
        #expect(hard.wrap("http://127.0.0.1:8080/#token=0123456789abcdef") == ["http://127.0.0.1:8080/#token=0123456789abcdef"])
        let coloured = "\u{1B}[31malice\u{1B}[0m: 0123456789"
        let rows = p.wrap(coloured)
        #expect(rows.joined().contains("\u{1B}[31m") && rows.joined().contains("\u{1B}[0m"))
        for row in rows {
            let visible = row.replacingOccurrences(of: "\u{1B}[31m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
            #expect(visible.unicodeScalars.reduce(0) { $0 + DisplayWidth.of($1) } <= 12, "\(rows)")
        }
        #expect(p.printAbove(["[14:02] <al> hello there"], editor: LineEditor()).contains("[14:02] <al>\r\n      hello\r\n      there\r\n"))
    }
}

