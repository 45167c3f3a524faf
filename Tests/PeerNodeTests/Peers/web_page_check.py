"""Real headless Chromium, driven through its DevTools protocol, on a node's page.

Usage: web_page_check.py ADDRESS TOKEN SCREENSHOT
Talks with the test in lines: prints "POSTED" once the page has sent its
messages and waits for "REPLIED"; prints "RESTART" and waits for "BACK"
(the node is up again) then prints "RECONNECTED" and waits for "SENT".
Prints "ok NAME" or "FAIL NAME DETAIL" per check; exits non-zero if any
check failed.
"""
import asyncio
import base64
import http.server
import json
import sys
import threading

from browser import with_chromium
from checks import check, finish, give_up_after

ADDRESS, TOKEN, SCREENSHOT = sys.argv[1:4]
PAGE = "http://" + ADDRESS + "/"
API = "ws://" + ADDRESS + "/api/v1?token=" + TOKEN
HOSTILE = "<img src=x onerror=alert(1)> stays text"


def expect_line(word):
    line = sys.stdin.readline().strip()
    check("test says " + word, line == word, line)


def other_origin_server():
    """A page on another origin (another port): what a hostile site would be."""
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><title>elsewhere</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    # Threads: Chromium opens spare connections it may never use, and a
    # one-at-a-time server would wait on them.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


OPEN_API = "new Promise(done => { const w = new WebSocket(%s); w.onopen = () => { w.close(); done('open'); }; w.onerror = () => done('refused'); })"


async def main():
    await with_chromium(run)


async def run(b):
    page = await b.tab(PAGE + "#token=" + TOKEN)
    me = await b.until(page, "document.getElementById('me').textContent")
    check("page says who we are", bool(me) and "·" in me, me)
    check("token taken out of the address bar", await b.js(page, "location.hash") == "")
    await b.js(page, "window.loadedOnce = 1; window.alerted = 0; window.alert = () => { window.alerted = 1; };")
    for text in ["hello from the page", "/me waves", HOSTILE]:
        await b.js(page, "document.getElementById('text').value = %s; document.getElementById('composer').requestSubmit();" % json.dumps(text))
    sent = await b.until(page, "document.querySelectorAll('#messages li .status').length === 3 && "
                               "[...document.querySelectorAll('#messages li .status')].every(s => s.dataset.state !== 'sending')")
    check("three posts stored", bool(sent))
    print("POSTED", flush=True)
    words = sys.stdin.readline().split()
    check("test says REPLIED with bob's fingerprint", len(words) == 2 and words[0] == "REPLIED", words)
    bob_fp = words[1] if len(words) == 2 else "?"
    reply = await b.until(page, "[...document.querySelectorAll('#messages li')].some(li => li.querySelector('.text').textContent === 'hi page')")
    check("reply shown without a reload", bool(reply) and await b.js(page, "window.loadedOnce") == 1)
    label = await b.js(page, "[...document.querySelectorAll('#messages li')].filter(li => li.querySelector('.text').textContent === 'hi page')"
                             ".map(li => li.querySelector('.nick').textContent)[0]")
    check("author labelled as the terminal does: nick·fp", label == "bob·" + bob_fp, label)
    read = await b.until(page, "[...document.querySelectorAll('#messages li')].filter(li => li.querySelector('.text').textContent === 'hello from the page')"
                               ".every(li => li.querySelector('.status').dataset.state === 'read')", 40)
    check("own message reaches read", bool(read), await b.js(page, "document.getElementById('messages').textContent"))
    # Loaded again (a reload: the token is kept for the tab): our message still says read, not stored.
    await b.call("Page.reload", {}, session=page)
    again = await b.until(page, "window.loadedOnce === undefined && [...document.querySelectorAll('#messages li')].some(li => li.querySelector('.text') && li.querySelector('.text').textContent === 'hello from the page') && "
                                "[...document.querySelectorAll('#messages li')].filter(li => li.querySelector('.text').textContent === 'hello from the page')"
                                ".map(li => li.querySelector('.status').dataset.state)[0]", 20)
    check("after a reload our message still says read", again == "read", again)
    await b.js(page, "window.loadedOnce = 1; window.alerted = 0; window.alert = () => { window.alerted = 1; };")
    texts = await b.js(page, "[...document.querySelectorAll('#messages .text')].map(t => t.textContent)")
    check("hostile text shown as its characters", HOSTILE in (texts or []), texts)
    # No element was made of it, so no handler of it can run later.
    check("no element made of it", await b.js(page, "document.querySelectorAll('#messages img, #messages script').length") == 0)
    check("nothing ran", await b.js(page, "window.alerted") == 0)
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT, "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))

    # Its own origin opens the API; a page on another origin, with the token, cannot.
    check("own origin opens the API", await b.js(page, OPEN_API % json.dumps(API), wait=True) == "open")
    elsewhere = other_origin_server()
    other = await b.tab("http://127.0.0.1:%d/" % elsewhere.server_port)
    await b.until(other, "document.title === 'elsewhere'")
    check("another origin cannot open the API", await b.js(other, OPEN_API % json.dumps(API), wait=True) == "refused")
    # (its threads end with this process: a shutdown would wait for Chromium's spare connections)

    # A tab without the token is refused, and says so.
    bare = await b.tab(PAGE)
    refused = await b.until(bare, "!document.getElementById('banner').hidden && document.getElementById('banner').textContent")
    check("no token: refused, with a banner", bool(refused) and "refused" in refused, refused)
    # A token cut short (a selection that missed its end) says "wrong token", not "the node is away" forever.
    cut = await b.tab(PAGE + "#token=" + TOKEN[:-6])
    wrong = await b.until(cut, "document.getElementById('banner').textContent.startsWith('Wrong token') && document.getElementById('banner').textContent")
    check("a cut token: 'Wrong token', with where to find the right one", bool(wrong) and "peernode web-url" in wrong, wrong)

    # The node restarts: a banner while it is away, and the page comes back by itself.
    print("RESTART", flush=True)
    away = await b.until(page, "!document.getElementById('banner').hidden", 20)
    check("banner while the node is away", bool(away))
    code = await b.js(page, "document.getElementById('banner').dataset.code")
    check("a stopping node closes the page's connection as going away (1001)", code == "1001", code)
    expect_line("BACK")
    back = await b.until(page, "document.getElementById('banner').hidden", 30)
    check("page reconnects", bool(back))
    print("RECONNECTED", flush=True)
    expect_line("SENT")
    later = await b.until(page, "[...document.querySelectorAll('#messages .text')].some(t => t.textContent === 'after the restart') && "
                                "[...document.querySelectorAll('#messages .text')].some(t => t.textContent === 'while the page was away')", 30)
    check("a message after the restart shows", bool(later) and await b.js(page, "window.loadedOnce") == 1)
    texts = await b.js(page, "[...document.querySelectorAll('#messages .text')].map(t => t.textContent)") or []
    check("what came while it was away shows", "while the page was away" in texts, texts)
    check("earlier messages shown again, once each", texts.count("hello from the page") == 1 and texts.count("hi page") == 1, texts)
    check("in causal order", texts.index("hi page") < texts.index("while the page was away") < texts.index("after the restart")
          if all(t in texts for t in ("hi page", "while the page was away", "after the restart")) else False, texts)


give_up_after(240)
asyncio.run(main())
finish()
