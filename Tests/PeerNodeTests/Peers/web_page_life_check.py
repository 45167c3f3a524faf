"""The life of a message in the page (issue 17), in real headless Chromium
over DevTools: a reply with its quote, a reaction and its count, an edit
and a delete from the page's buttons; bob's reaction, edit, typing and
delete shown as they come.

Usage: web_page_life_check.py ADDRESS TOKEN SCREENSHOT BOB_FP
Before it starts, bob has posted "lunch at noon?" in #general. Talks with
the test in lines: prints "REPLIED" once the page replied and reacted, then
waits for "BOB" (bob reacted, edited his message and is typing); prints
"EDITED" once the page edited its reply and waits for "SEEN" (bob's node
showed the edit: a delete on its heels would reach bob with it and erase
it unseen); prints "CHANGED" once the page deleted its reply, then waits for
"GONE" (bob deleted his message). Prints "ok NAME" or "FAIL NAME DETAIL" per
check; exits non-zero if any check failed.
"""
import asyncio
import base64
import json
import sys

from browser import with_chromium
from checks import check, finish, give_up_after

ADDRESS, TOKEN, SCREENSHOT, BOB_FP = sys.argv[1:5]
PAGE = "http://" + ADDRESS + "/"


def li(text):
    """The list item whose text span reads `text` (JavaScript)."""
    return "[...document.querySelectorAll('#messages li')].find(li => (li.querySelector('.text') || {}).textContent === %s)" % json.dumps(text)


async def run(b):
    page = await b.tab(PAGE + "#token=" + TOKEN)
    await b.call("Runtime.enable", session=page)
    check("bob's message is shown", bool(await b.until(page, li("lunch at noon?"))))

    # Reply from the page: the ↩ button, then the composer.
    await b.js(page, li("lunch at noon?") + ".querySelector('.acts button[title=reply]').click()")
    mode = await b.until(page, "!document.getElementById('replying').hidden && document.getElementById('replyingtext').textContent")
    check("↩ says what the reply answers", bool(mode) and "lunch at noon?" in mode, mode)
    await b.js(page, "document.getElementById('text').value = 'sure, the usual place'; document.getElementById('composer').requestSubmit();")
    quote = await b.until(page, li("sure, the usual place") + " && " + li("sure, the usual place") + ".querySelector('.quote').textContent")
    check("the reply is shown with a quote of what it answers", quote == "↪ lunch at noon?", quote)
    # React 👍 from the page: the count comes back from the node.
    await b.js(page, li("lunch at noon?") + ".querySelector('.acts button[title^=react]').click()")
    count = await b.until(page, li("lunch at noon?") + ".querySelector('.reactions').textContent === '👍 1'")
    check("👍 shows a count of 1", bool(count))
    print("REPLIED", flush=True)
    line = sys.stdin.readline().strip()
    check("test says BOB", line == "BOB", line)
    two = await b.until(page, "(" + li("lunch at one?") + " || {}).textContent")
    check("bob's edit replaces the text in place, marked (edited)", bool(two) and "(edited)" in two, two)
    check("and his 👍 makes 2", bool(await b.until(page, li("lunch at one?") + ".querySelector('.reactions').textContent === '👍 2'")))
    typing = await b.until(page, "document.getElementById('typing').textContent.includes('typing') && document.getElementById('typing').textContent")
    check("bob typing is shown under the list, labelled as everywhere", bool(typing) and typing == "bob·" + BOB_FP + " is typing…", typing)
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT, "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))

    # Edit and delete our reply from its buttons.
    await b.js(page, li("sure, the usual place") + ".querySelector('.acts button[title=edit]').click()")
    filled = await b.until(page, "document.getElementById('text').value")
    check("✎ puts the text in the composer", filled == "sure, the usual place", filled)
    await b.js(page, "document.getElementById('text').value = 'sure, at one'; document.getElementById('composer').requestSubmit();")
    edited = await b.until(page, "(" + li("sure, at one") + " || {}).textContent")
    check("our edit shows in place", bool(edited) and "(edited)" in edited, edited)
    print("EDITED", flush=True)
    line = sys.stdin.readline().strip()
    check("test says SEEN", line == "SEEN", line)
    await b.js(page, li("sure, at one") + ".querySelector('.acts button[title^=delete]').click()")
    gone = await b.until(page, "document.querySelectorAll('#messages li.deleted').length === 1 && !(" + li("sure, at one") + ")")
    check("🗑 deletes it: the line says so, the text is gone", bool(gone))
    print("CHANGED", flush=True)
    line = sys.stdin.readline().strip()
    check("test says GONE", line == "GONE", line)
    both = await b.until(page, "document.querySelectorAll('#messages li.deleted').length === 2 && !(" + li("lunch at one?") + ")")
    check("bob's delete takes his message away", bool(both))
    stopped = await b.until(page, "document.getElementById('typing').textContent === ''", timeout=15)
    check("the typing line empties", bool(stopped))
    errors = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
    check("no script error in the page", not errors, errors[:1])


give_up_after(180)
asyncio.run(with_chromium(run))
finish()
