import ChatText
import FuzzSupport
import TermUI

// libFuzzer entry: the chat's command line and the text it prints. The input
// is keystrokes: they go through the key decoder (in reads of a size the
// input picks), the line editor (with Tab completing a nick and a room made
// from the input, as a hostile peer would choose them) and, for each line
// submitted, the command parser. The same bytes, read as text from the
// network, go through the sanitizer and the wrapper. Byte 0 picks the
// terminal's width, byte 1 the read size.

let commands = ChatInput.commandNames

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let columns = 8 + Int(bytes[0]) % 200
    let readSize = 1 + Int(bytes[1]) % 16
    let keystrokes = Array(bytes[2...])
    let hostile = String(decoding: keystrokes.prefix(24), as: UTF8.self)
    let completer = Completer(commands: commands, rooms: ["#general", "#" + hostile], nicks: ["alice", hostile])
    let line = PromptLine(prompt: "#general> ", columns: columns, width: DisplayWidth.of)

    var decoder = KeyDecoder()
    var editor = LineEditor()
    var offset = 0
    while offset < keystrokes.count {
        let read = Array(keystrokes[offset..<min(offset + readSize, keystrokes.count)])
        offset += read.count
        for key in decoder.feed(read) + (offset % 5 == 0 ? decoder.flushEscape() : []) {
            let outcome = editor.apply(key, completer: completer)
            invariant(editor.scalars.count <= LineEditor.maximumLength, "the line grew past its limit")
            invariant(editor.cursor >= 0 && editor.cursor <= editor.scalars.count, "the cursor left the line")
            switch outcome {
            case .redraw:
                // What a key can add is next to the cursor (typed) or the whole
                // line (completion, history): the cheap check for the first.
                if case .character = key {
                    invariant(editor.cursor == 0 || !editor.scalars[editor.cursor - 1].isTerminalControl, "a control character was typed into the line")
                } else {
                    checkLine(editor)
                }
            case let .choices(options):
                invariant(!options.joined().unicodeScalars.contains(where: \.isTerminalControl), "a completion choice carries a control character")
                checkLine(editor)
            case let .submit(text):
                invariant(!text.unicodeScalars.contains(where: \.isTerminalControl), "a submitted line carries a control character")
                checkParsed(text)
            default:
                break
            }
        }
    }
    checkLine(editor)
    _ = line.render(editor)

    // The same bytes as text from the network: inert once sanitized, and
    // wrapped without losing a character or overflowing a row.
    let text = String(decoding: keystrokes, as: UTF8.self)
    let safe = TerminalText.sanitize(text)
    invariant(!safe.unicodeScalars.contains { $0.isTerminalControl || TerminalText.isInvisibleOrControl($0) }, "sanitized text still holds a control or invisible character")
    let rows = line.wrap(safe)
    for row in rows {
        // Only a line that is one word is left whole, for the terminal to fold (an address that must copy whole).
        invariant(row.unicodeScalars.reduce(0) { $0 + DisplayWidth.of($1) } <= columns || (rows.count == 1 && !row.contains(" ")),
                  "a wrapped row is wider than the terminal")
    }
    // Compared scalar by scalar: a row may break before a spacing mark (it
    // takes columns of its own), which changes the grapheme clusters, not the text.
    let kept = rows.joined().unicodeScalars.filter { $0 != " " }, given = safe.unicodeScalars.filter { $0 != " " }
    invariant(kept.elementsEqual(given), "wrapping lost or added a character")
    _ = Confusables.skeleton(text)
    _ = Confusables.mixesScripts(text)
    _ = Confusables.roomWarning(text, known: ["#general", "#random"])
    return 0
}

func checkLine(_ editor: LineEditor) {
    invariant(!editor.scalars.contains(where: \.isTerminalControl), "a control character entered the line being typed")
}

/// A submitted line is a command unless it starts with `//` or not with `/`:
/// a mistyped command is never posted.
func checkParsed(_ text: String) {
    let parsed = ChatInput.parse(text)
    let trimmed = text.hasSuffix("\r") ? String(text.dropLast()) : text
    switch parsed {
    case let .message(body):
        invariant(!trimmed.hasPrefix("/") || trimmed.hasPrefix("//"), "a command line was taken for a message")
        invariant(!body.isEmpty, "an empty message")
    case .empty:
        invariant(trimmed.unicodeScalars.allSatisfy { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator },
                  "a non-blank line parsed as empty")
    default:
        invariant(trimmed.hasPrefix("/"), "a line without / parsed as a command")
    }
    // A line read as files dropped at once: only paths, each absolute or from home, never empty.
    if let paths = ChatInput.droppedPaths(text) {
        invariant(!paths.isEmpty && paths.allSatisfy { $0.hasPrefix("/") || $0.hasPrefix("~") }, "a drop read a word that is no path")
    }
}
