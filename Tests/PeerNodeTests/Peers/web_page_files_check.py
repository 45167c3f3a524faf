"""Files in the page (issue 39), in real headless Chromium over DevTools:
a picture bob sent from his terminal shows as an offer, is fetched with its
Get button and shown inline; a large file bob sent (archive.tar) is fetched
and stopped with the Cancel button its Get shows; a file chosen in the
page's file input is sent (two chosen at once, both), an empty one refused without stopping the next;
files dropped on the page and a screenshot pasted are sent.

Usage: web_page_files_check.py ADDRESS TOKEN SCREENSHOT PICTURE UPLOAD
Writes a PNG picture (80×60) to PICTURE and prints "MADE"; waits for
"SENT" (bob sent it). Then checks the page and writes UPLOAD (a text file
with a marker), sends it from the page's file input, and prints "UPLOADED".
Prints "ok NAME" or "FAIL NAME DETAIL" per check; exits non-zero if any failed.
"""
import asyncio
import base64
import json
import os
import struct
import sys
import zlib

from browser import with_chromium
from checks import check, finish, give_up_after

ADDRESS, TOKEN, SCREENSHOT, PICTURE, UPLOAD = sys.argv[1:6]
PAGE = "http://" + ADDRESS + "/"


def png(width, height):
    """A PNG of a warm gradient with a dark band: unmistakable in a screenshot."""
    rows = b""
    for y in range(height):
        row = b"\x00"
        for x in range(width):
            band = 20 <= y < 30
            row += bytes((40, 40, 90) if band else (255, 120 + x, 40 + 2 * y))
        rows += row
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def offer(name):
    return "[...document.querySelectorAll('#messages li.offer')].find(li => li.fileName === %s)" % json.dumps(name)


async def run(b):
    with open(PICTURE, "wb") as f:
        f.write(png(80, 60))
    print("MADE", flush=True)
    line = sys.stdin.readline().strip()
    check("test says SENT", line == "SENT", line)
    page = await b.tab(PAGE + "#token=" + TOKEN)
    await b.call("Runtime.enable", session=page)
    shown = await b.until(page, offer("sunset.png") + " && " + offer("sunset.png") + ".textContent")
    check("bob's picture shows as an offer with its name and size, and a Get button", bool(shown) and "sunset.png" in shown and "Get" in shown, shown)
    await b.js(page, offer("sunset.png") + ".querySelector('button.get').click()")
    width = await b.until(page, "(" + offer("sunset.png") + ".querySelector('img.picture') || {}).naturalWidth", timeout=30)
    check("fetched, the picture itself shows inline (80 px wide)", width == 80, width)
    link = await b.js(page, offer("sunset.png") + ".querySelector('a.download').getAttribute('href')")
    check("with a download link to this node", bool(link) and link.startswith("/file/"), link)
    preview = await b.js(page, "[...document.querySelectorAll('.preview')].map(p => p.textContent).join(' | ')")
    check("the conversation list says the file in words, not with a glyph many fonts lack",
          bool(preview) and "file archive.tar" in preview and "\u2398" not in preview, preview)
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT, "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))

    # A large file: Get shows a Cancel button; Cancel stops the fetch, and the page says what became of it.
    await b.until(page, offer("archive.tar") + " && true", timeout=30)
    buttons = await b.js(page, "(() => { const li = " + offer("archive.tar") + "; li.querySelector('button.get').click();"
                               " const c = li.querySelector('button.cancel'); const seen = c ? c.textContent : null; if (c) c.click(); return seen; })()")
    check("Get on a file shows a Cancel button while it is fetched", buttons == "Cancel", buttons)
    told = await b.until(page, "(t => t.startsWith('stopped:') ? t : null)(document.getElementById('notice').textContent)", timeout=30)
    check("Cancel stops it, and the page says what came of it is erased", told == "stopped: what had come of archive.tar is erased", told)
    state = await b.until(page, "(li => !li.querySelector('button.cancel') && !li.querySelector('button.get').disabled"
                                " ? li.querySelector('button.get').textContent : null)(" + offer("archive.tar") + ")", timeout=10)
    check("then its Get button is back, and no Cancel", state == "Get", state)

    # A file chosen in the page's file input is sent.
    with open(UPLOAD, "wb") as f:
        f.write(b"notes from the page MARKER-UPLOAD\n" * 1000)
    doc = await b.call("DOM.getDocument", {}, session=page)
    found = await b.call("DOM.querySelector", {"nodeId": doc["result"]["root"]["nodeId"], "selector": "#file"}, session=page)
    await b.call("DOM.setFileInputFiles", {"files": [UPLOAD], "nodeId": found["result"]["nodeId"]}, session=page)
    await b.js(page, "document.getElementById('file').dispatchEvent(new Event('change'))")
    mine = await b.until(page, "(" + offer(UPLOAD.split("/")[-1]) + " || {}).fileRoot", timeout=30)
    check("the file sent from the page shows as our offer", bool(mine), mine)
    # Ours is held here already: a download link after its name and no Get (the link once came first, the Get stayed).
    parts = await b.until(page, "(li => li && li.querySelector('a.download') ? [...li.children].map(c => c.className) : null)(" + offer(UPLOAD.split("/")[-1]) + ")", timeout=30)
    check("our own offer: its download link after the file's box, and no Get button", bool(parts) and parts.index("download") > parts.index("file")
          and not await b.js(page, offer(UPLOAD.split("/")[-1]) + ".querySelector('button.get') !== null"), parts)

    # A file past what the page once took (64 MiB), sent as the socket drains, with its progress said.
    big = os.path.join(os.path.dirname(UPLOAD), "big-from-page.bin")
    with open(big, "wb") as f:
        for i in range(72):
            f.write(bytes([i]) * (1 << 20))
    await b.call("DOM.setFileInputFiles", {"files": [big], "nodeId": found["result"]["nodeId"]}, session=page)
    # Every text the notice shows is kept as it changes, while the file goes.
    await b.js(page, "window.said = []; new MutationObserver(() => window.said.push(document.getElementById('notice').textContent))"
                     ".observe(document.getElementById('notice'), { subtree: true, childList: true, characterData: true })")
    await b.js(page, "document.getElementById('file').dispatchEvent(new Event('change'))")
    root = await b.until(page, "(" + offer("big-from-page.bin") + " || {}).fileRoot", timeout=120)
    said = set(await b.js(page, "window.said") or [])
    check("a 72 MiB file sent from the page shows as our offer", bool(root), said)
    check("its progress is said as it goes", any(t and t.startswith("sending big-from-page.bin… ") and t.endswith("%") for t in said), sorted(t for t in said if t))
    # An empty file is refused by the node, said, and the next file still goes
    # (the page once waited for ever on a refused file: "a file is being sent already").
    empty = os.path.join(os.path.dirname(UPLOAD), "empty.txt")
    open(empty, "wb").close()
    # (Chromium fires the input's change itself when its files are set; the second change is sent nothing.)
    await b.js(page, "window.said = []")
    await b.call("DOM.setFileInputFiles", {"files": [empty], "nodeId": found["result"]["nodeId"]}, session=page)
    await b.js(page, "document.getElementById('file').dispatchEvent(new Event('change'))")
    refused = await b.until(page, "window.said.find(t => t && t.includes('is empty')) || null", timeout=30)
    check("an empty file chosen is refused, with the node's reason", refused == "empty.txt is empty: there is nothing to send", refused)

    # A folder chosen comes as a file that cannot be read: said, and nothing is sent.
    folder = os.path.join(os.path.dirname(UPLOAD), "a-folder")
    os.makedirs(folder, exist_ok=True)
    await b.js(page, "window.said = []")
    await b.call("DOM.setFileInputFiles", {"files": [folder], "nodeId": found["result"]["nodeId"]}, session=page)
    await b.js(page, "document.getElementById('file').dispatchEvent(new Event('change'))")
    unread = await b.until(page, "window.said.find(t => t && t.includes('cannot be read')) || null", timeout=30)
    check("a folder chosen is not sent, and the page says why", unread == "a-folder cannot be read: a folder is not sent (send the files in it, or an archive of it)", [unread, await b.js(page, "window.said")])

    # Two files chosen at once in the file input (it takes several): both are sent, one after the other.
    chosen = []
    for name in ("chosen-one.txt", "chosen-two.txt"):
        chosen.append(os.path.join(os.path.dirname(UPLOAD), name))
        with open(chosen[-1], "wb") as f:
            f.write(name.encode() * 10)
    check("the file input takes several files", await b.js(page, "document.getElementById('file').multiple") is True)
    await b.call("DOM.setFileInputFiles", {"files": chosen, "nodeId": found["result"]["nodeId"]}, session=page)
    await b.js(page, "document.getElementById('file').dispatchEvent(new Event('change'))")
    both = await b.until(page, "(" + offer("chosen-one.txt") + " && " + offer("chosen-two.txt") + ") ? true : null", timeout=30)
    check("both files chosen at once are sent", both is True, both)

    # Dropped on the page: where they go is said while they are dragged over it
    # (screenshot), and both files dropped are sent, one after the other.
    drag = ("(() => { const t = new DataTransfer();"
            " t.items.add(new File(['dropped one MARKER-DROP-1'], 'dropped-one.txt', { type: 'text/plain' }));"
            " t.items.add(new File(['dropped two MARKER-DROP-2'], 'dropped-two.txt', { type: 'text/plain' }));"
            " window.dropped = t; return t; })()")
    await b.js(page, drag)
    over = await b.js(page, "(() => { const ev = new DragEvent('dragover', { dataTransfer: window.dropped, bubbles: true, cancelable: true });"
                            " document.getElementById('messages').dispatchEvent(ev); const d = document.getElementById('droptarget');"
                            " return [ev.defaultPrevented, d.hidden, d.textContent]; })()")
    check("files dragged over the page: it says where they will go", over == [True, False, "Drop to send to #general"], over)
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT.replace(".png", "-drop.png"), "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))
    taken = await b.js(page, "(() => { const ev = new DragEvent('drop', { dataTransfer: window.dropped, bubbles: true, cancelable: true });"
                             " document.getElementById('scroller').dispatchEvent(ev); return [ev.defaultPrevented, document.getElementById('droptarget').hidden]; })()")
    check("dropped: taken by the page (the browser does not leave the chat), the overlay gone", taken == [True, True], taken)
    both = await b.until(page, "(" + offer("dropped-one.txt") + " && " + offer("dropped-two.txt") + ") ? true : null", timeout=30)
    check("both files dropped are sent", both is True, both)

    # A screenshot pasted is sent, named by when it was pasted; a paste that also holds text stays a text paste.
    pasted = await b.js(page, "(() => { const t = new DataTransfer(); t.items.add(new File([new Uint8Array([137, 80, 78, 71, 1, 2, 3])], 'image.png', { type: 'image/png' }));"
                              " const ev = new ClipboardEvent('paste', { clipboardData: t, bubbles: true, cancelable: true });"
                              " document.getElementById('text').dispatchEvent(ev); return ev.defaultPrevented; })()")
    name = await b.until(page, "([...document.querySelectorAll('#messages li.offer')].map(li => li.fileName).find(n => n.startsWith('pasted '))) || null", timeout=30)
    check("a pasted screenshot is sent as 'pasted DATE TIME.png'", pasted is True and bool(name) and name.endswith(".png") and len(name) == len("pasted 2026-12-06 15.42.07.png"), [pasted, name])
    texty = await b.js(page, "(() => { const t = new DataTransfer(); t.setData('text/plain', 'words'); t.items.add(new File(['x'], 'render.png', { type: 'image/png' }));"
                             " const ev = new ClipboardEvent('paste', { clipboardData: t, bubbles: true, cancelable: true });"
                             " document.getElementById('text').dispatchEvent(ev); return ev.defaultPrevented; })()")
    check("a paste that holds text as well is left to the text box", texty is False, texty)
    searched = await b.js(page, "(() => { const t = new DataTransfer(); t.items.add(new File(['x'], 'into-search.png', { type: 'image/png' }));"
                                " const ev = new ClipboardEvent('paste', { clipboardData: t, bubbles: true, cancelable: true });"
                                " document.getElementById('search').dispatchEvent(ev); return ev.defaultPrevented; })()")
    check("a file pasted into the search box is not sent", searched is False, searched)

    errors = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
    check("no script error in the page", not errors, errors[:1])
    print("UPLOADED", flush=True)


give_up_after(120)
asyncio.run(with_chromium(run))
finish()
