import WebSocket

/// The page `--web` serves, from the binary: HTML, CSS and JavaScript
/// written here, nothing fetched at run time. Every text from the network
/// reaches the page through `textContent` only (docs/API.md, "The page").
enum WebPage {
    /// What a page may load and run: only this node's own script and style,
    /// and its API's WebSocket; no inline script, no frames, no forms.
    static func securityPolicy(host: String) -> String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            + "connect-src 'self' ws://\(host); base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The answer to a GET of `path` (`host`: the checked `Host` it came to).
    static func response(for path: String, host: String) -> HTTPResponse {
        let body: String, type: String
        switch path {
        case "/", "/index.html": (body, type) = (html, "text/html; charset=utf-8")
        case "/app.js": (body, type) = (script, "text/javascript; charset=utf-8")
        case "/app.css": (body, type) = (style, "text/css; charset=utf-8")
        default: return HTTPResponse(status: 404, text: "not found\n")
        }
        return HTTPResponse(status: 200, contentType: type, body: Array(body.utf8), fields: [
            "Content-Security-Policy": securityPolicy(host: host),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
            "X-Frame-Options": "DENY",
        ])
    }

    // The markup and style are in WebPageMarkup.swift, the script in WebPageScript.swift.
}
