/// Draws the prompt and the line being typed on the bottom row, and prints
/// lines above it without disturbing it: pure string building (the escape
/// sequences to write), so it is tested without a terminal.
///
/// A line longer than the terminal is shown scrolled so the cursor stays in
/// view. Widths come from `width(of:)` (East Asian wide characters and
/// emoji take two columns; combining marks none).
public struct PromptLine {
    public var prompt: String
    public var columns: Int
    /// Columns a scalar takes (the shell passes `wcwidth`).
    public var width: @Sendable (Unicode.Scalar) -> Int

    public init(prompt: String, columns: Int, width: @escaping @Sendable (Unicode.Scalar) -> Int = { _ in 1 }) {
        self.prompt = prompt
        self.columns = max(columns, 8)
        self.width = width
    }

    static let clearLine = "\r\u{1B}[K"

    /// Columns always left for typing: a prompt wider than the rest is cut
    /// from its start ("…" then its end: the room and the mark stay). A
    /// prompt wider than the terminal would fold onto a second row that
    /// clearing the bottom row does not clear, and each redraw would leave
    /// a stale row behind.
    public var typingRoom: Int { max(10, columns / 3) }

    /// The prompt as drawn: whole when it fits beside `typingRoom`, else its end after "…".
    public var fittedPrompt: (text: String, width: Int) {
        let widths = prompt.unicodeScalars.map { max(0, width($0)) }
        let whole = widths.reduce(0, +)
        let limit = max(2, columns - typingRoom - 1)
        guard whole > limit else { return (prompt, whole) }
        let scalars = Array(prompt.unicodeScalars)
        var start = scalars.count
        var used = 1  // the "…"
        while start > 0, used + widths[start - 1] <= limit {
            start -= 1
            used += widths[start]
        }
        return ("…" + String(String.UnicodeScalarView(scalars[start...])), used)
    }

    /// Rewrites the bottom row: prompt, the visible part of the line, cursor placed.
    public func render(_ editor: LineEditor) -> String {
        let (prompt, promptWidth) = fittedPrompt
        let room = max(1, columns - promptWidth - 1)
        // A pasted tab is shown as one space: a real one would move the cursor to a tab stop.
        let widths = editor.scalars.map { $0 == "\t" ? 1 : max(0, width($0)) }
        // Scroll: start far enough right that the cursor fits in `room` columns.
        var start = 0
        var used = widths[0..<editor.cursor].reduce(0, +)
        while used > room, start < editor.cursor {
            used -= widths[start]
            start += 1
        }
        var end = start
        var shown = 0
        while end < editor.scalars.count, shown + widths[end] <= room {
            shown += widths[end]
            end += 1
        }
        let visible = String(String.UnicodeScalarView(editor.scalars[start..<end].map { $0 == "\t" ? " " : $0 }))
        let cursorColumn = promptWidth + widths[start..<editor.cursor].reduce(0, +)
        return Self.clearLine + prompt + visible + "\r" + (cursorColumn > 0 ? "\u{1B}[\(cursorColumn)C" : "")
    }

    /// Prints `lines` above the prompt (each wrapped to the terminal's width,
    /// continuation rows indented), then draws the prompt again.
    public func printAbove(_ lines: [String], editor: LineEditor) -> String {
        guard !lines.isEmpty else { return "" }
        return Self.clearLine + lines.flatMap { wrap($0) }.map { $0 + "\r\n" }.joined() + render(editor)
    }

    /// Columns continuation rows are indented by (the width of `[14:02] `).
    public static let wrapIndent = 8

    /// Splits a line into rows of at most `columns` display columns, breaking
    /// at the last space when there is one; rows after the first start with
    /// `wrapIndent` spaces. Escape sequences (the colours we add) take no width
    /// and are never split. A line that is one word (no space, no colour) is
    /// the one row left as it is, however wide: the terminal folds it.
    public func wrap(_ line: String) -> [String] {
        // One long word (an address with its token) is never cut into rows: the terminal folds it, and a
        // selection of it copies it whole, with no indent inside (issue 44: the page's token was cut).
        if !line.contains(" "), !line.contains("\u{1B}") { return [line] }
        let scalars = Array(line.unicodeScalars)
        var rows: [String] = []
        var row = String.UnicodeScalarView()
        var used = 0
        var lastSpace: (index: String.UnicodeScalarView.Index, used: Int)?
        let indent = String(repeating: " ", count: min(Self.wrapIndent, max(0, columns / 2)))
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if s == "\u{1B}" {
                // Copy a CSI sequence whole: ESC [ parameters final.
                row.append(s)
                i += 1
                if i < scalars.count, scalars[i] == "[" {
                    while i < scalars.count {
                        row.append(scalars[i])
                        let v = scalars[i].value
                        i += 1
                        if v >= 0x40 && v <= 0x7E && scalars[i - 1] != "[" { break }
                    }
                }
                continue
            }
            let w = max(0, width(s))
            if s == " ", used + w > columns {
                // The row is full just before a space: break there, and drop the space.
                rows.append(String(row))
                row = indent.unicodeScalars
                used = indent.count
                lastSpace = nil
                i += 1
                continue
            }
            if used + w > columns, used > 0 {
                if let space = lastSpace, space.used > indent.count {
                    // Break at the last space: what follows it starts the next row.
                    let rest = String(row[row.index(after: space.index)...])
                    rows.append(String(row[..<space.index]))
                    row = (indent + rest).unicodeScalars
                    used = indent.count + (space.used > 0 ? used - space.used - 1 : 0)
                } else {
                    rows.append(String(row))
                    row = indent.unicodeScalars
                    used = indent.count
                }
                lastSpace = nil
            }
            if s == " " { lastSpace = (row.endIndex, used) }
            row.append(s)
            used += w
            i += 1
        }
        rows.append(String(row))
        return rows
    }

    /// Leaves the prompt row empty (before exiting).
    public func clear() -> String { Self.clearLine }
}
