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

    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="color-scheme" content="light dark">
    <title>peernode</title>
    <link rel="stylesheet" href="/app.css">
    <script src="/app.js" defer></script>
    </head>
    <body>
    <div id="banner" role="status" hidden></div>
    <header><h1 id="room">peernode</h1><span id="me"></span></header>
    <main><ol id="messages" aria-live="polite"></ol></main>
    <form id="composer" autocomplete="off">
      <label for="text" class="hidden">Message</label>
      <input id="text" maxlength="4000" placeholder="Type a message, Enter sends; /me does an action" autofocus>
      <button type="submit">Send</button>
    </form>
    </body>
    </html>
    """#

    static let style = #"""
    :root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1b; --muted: #666; --line: #ddd; --accent: #2456c8; --warn: #a35b00; }
    @media (prefers-color-scheme: dark) { :root { --bg: #16181c; --fg: #e8e8e8; --muted: #9a9a9a; --line: #30343a; --accent: #8fb0ff; --warn: #ffb454; } }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); display: flex; flex-direction: column; height: 100vh; }
    header { display: flex; align-items: baseline; gap: 1em; padding: .5em 1em; border-bottom: 1px solid var(--line); }
    h1 { font-size: 1.1em; margin: 0; }
    #me { color: var(--muted); font-size: .9em; }
    main { flex: 1; overflow-y: auto; padding: .5em 1em; }
    #messages { list-style: none; margin: 0; padding: 0; }
    #messages li { padding: .15em 0; overflow-wrap: anywhere; }
    .nick { font-weight: 600; margin-right: .4em; }
    .fp { color: var(--muted); font-weight: 400; }
    .action { font-style: italic; }
    .status { color: var(--muted); font-size: .8em; margin-left: .5em; }
    .time { color: var(--muted); font-size: .8em; margin-right: .5em; }
    #banner { background: var(--warn); color: #000; padding: .4em 1em; }
    form { display: flex; gap: .5em; padding: .5em 1em; border-top: 1px solid var(--line); }
    input { flex: 1; font: inherit; padding: .4em; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 4px; }
    button { font: inherit; padding: .4em 1em; }
    .hidden { position: absolute; left: -10000px; }
    """#

    static let script = #"""
    "use strict";
    // peernode's page: a presenter of the node's event stream (docs/API.md).
    // Network text goes into the page as textContent, never as markup.
    (function () {
      const params = new URLSearchParams(location.hash.slice(1));
      if (params.get("token")) { sessionStorage.setItem("peernode-token", params.get("token")); history.replaceState(null, "", "/"); }
      const token = sessionStorage.getItem("peernode-token") || "";
      const list = document.getElementById("messages");
      const banner = document.getElementById("banner");
      const roomTitle = document.getElementById("room");
      const form = document.getElementById("composer");
      const input = document.getElementById("text");
      let socket = null, room = "#general", backoff = 500, refs = 0;
      // While a history page loads: its messages (and any live one) by id, in order.
      let loading = null;
      const pending = new Map();   // ref -> the li of a message being sent
      const mine = new Map();      // message id -> its status span
      const order = { sending: 0, stored: 1, delivered: 2, read: 3 };

      function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
      function show(text) { banner.textContent = text; banner.hidden = false; }
      function near() { const m = list.parentElement; return m.scrollHeight - m.scrollTop - m.clientHeight < 40; }
      function keepBottom(was) { if (was) list.parentElement.scrollTop = list.parentElement.scrollHeight; }
      function setStatus(span, state) {
        const now = span.dataset.state || "sending";
        if (order[state] >= order[now]) { span.dataset.state = state; span.textContent = state; }
      }
      function line(m) {
        const li = el("li", m.kind === "action" ? "action" : "");
        li.dataset.id = m.id || "";
        const t = m.ts ? new Date(Number(m.ts)) : new Date();
        li.append(el("span", "time", t.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
        // As the terminal labels an author: nick⚠·fp✔(forked).
        const who = el("span", "nick", (m.nick || "") + (m.look_alike ? "⚠" : ""));
        who.append(el("span", "fp", (m.nick ? "·" : "") + (m.fp || "") + (m.trusted ? "✔" : "") + (m.forked ? "(forked)" : "")));
        if (m.look_alike) who.title = "this nick looks like another's";
        li.append(who, el("span", "text", m.text));
        return li;
      }
      function message(m) {
        if (m.room !== room) return;
        if (list.querySelector('li[data-id="' + m.id + '"]')) return;
        const was = near();
        const li = line(m);
        if (m.author === self.id) {
          const s = el("span", "status", "stored"); s.dataset.state = "stored"; li.append(s); mine.set(m.id, s);
        }
        list.append(li);
        keepBottom(was);
      }
      const self = { id: "", fp: "", nick: "" };
      function event(e) {
        switch (e.type) {
          case "hello":
            self.id = e.id; room = e.room; roomTitle.textContent = room;
            self.fp = e.fp || ""; self.nick = e.nick || "";
            document.getElementById("me").textContent = (e.nick ? e.nick + "·" : "") + self.fp;
            // On every (re)connect: the room's last page, which holds what came while away.
            list.textContent = ""; mine.clear(); pending.clear(); loading = new Map();
            socket.send(JSON.stringify({ cmd: "history", room: room, ref: "history" }));
            break;
          case "message":
            if (loading && e.room === room) { loading.delete(e.id); loading.set(e.id, e); } else message(e);
            break;
          case "receipt": { const s = mine.get(e.id); if (s) setStatus(s, e.state); break; }
          case "ok":
            if (e.cmd === "history" && loading) {
              const page = loading; loading = null;
              for (const m of page.values()) message(m);
              keepBottom(true);
            }
            if (e.cmd === "post" && pending.has(e.ref)) {
              const li = pending.get(e.ref); pending.delete(e.ref);
              const existing = list.querySelector('li[data-id="' + e.id + '"]');
              if (existing && existing !== li) { li.remove(); break; }
              li.dataset.id = e.id; const s = li.querySelector(".status"); setStatus(s, "stored"); mine.set(e.id, s);
            }
            break;
          case "error":
            if (e.ref === "history" && loading) { const page = loading; loading = null; for (const m of page.values()) message(m); }
            if (e.ref && pending.has(e.ref)) { const li = pending.get(e.ref); pending.delete(e.ref); li.querySelector(".status").textContent = "not sent: " + e.error; }
            else show(e.error);
            break;
        }
      }
      function connect() {
        socket = new WebSocket("ws://" + location.host + "/api/v1?token=" + encodeURIComponent(token));
        socket.onopen = function () { backoff = 500; banner.hidden = true; };
        socket.onmessage = function (m) { try { event(JSON.parse(m.data)); } catch (err) { /* one bad line is skipped */ } };
        socket.onclose = function (c) {
          show(c.code === 1008 || c.code === 1006 && !token ? "The node refused this page: open the address `peernode web-url` prints." : "The node is away; trying again…");
          setTimeout(connect, backoff); backoff = Math.min(backoff * 2, 10000);
        };
      }
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        let text = input.value; if (!text.trim() || !socket || socket.readyState !== 1) return;
        let kind = "text";
        if (text.startsWith("/me ")) { kind = "action"; text = text.slice(4); }
        const ref = "p" + (++refs);
        const li = line({ nick: self.nick, fp: self.fp, author: self.id, text: text, kind: kind });
        const s = el("span", "status", "sending"); s.dataset.state = "sending"; li.append(s);
        list.append(li); pending.set(ref, li); keepBottom(true);
        socket.send(JSON.stringify({ cmd: "post", room: room, text: text, kind: kind, ref: ref }));
        input.value = "";
      });
      connect();
    })();
    """#
}
