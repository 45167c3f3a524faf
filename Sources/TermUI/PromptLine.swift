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

    /// Rewrites the bottom row: prompt, the visible part of the line, cursor placed.
    public func render(_ editor: LineEditor) -> String {
        let promptWidth = prompt.unicodeScalars.reduce(0) { $0 + max(0, width($1)) }
        let room = max(1, columns - promptWidth - 1)
        let widths = editor.scalars.map { max(0, width($0)) }
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
        let visible = String(String.UnicodeScalarView(editor.scalars[start..<end]))
        let cursorColumn = promptWidth + widths[start..<editor.cursor].reduce(0, +)
        return Self.clearLine + prompt + visible + "\r" + (cursorColumn > 0 ? "\u{1B}[\(cursorColumn)C" : "")
    }

    /// Prints `lines` above the prompt, then draws the prompt again.
    public func printAbove(_ lines: [String], editor: LineEditor) -> String {
        guard !lines.isEmpty else { return "" }
        return Self.clearLine + lines.map { $0 + "\r\n" }.joined() + render(editor)
    }

    /// Leaves the prompt row empty (before exiting).
    public func clear() -> String { Self.clearLine }
}
