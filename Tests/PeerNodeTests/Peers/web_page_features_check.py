"""The page's conversations, history, search, invites, panels, keyboard,
phone width and dark mode, in real headless Chromium over DevTools.

Usage: web_page_features_check.py ADDRESS TOKEN SCREENSHOT
Before it starts, the other node (bob) has posted in #general, #random
and #history (HISTORY messages "h001"…), sent a direct message "psst", said he is away
("/away at lunch") and invited this node to the private room #team. Talks with the test in lines:
prints "JOINED" once the page joined #random and waits for "POSTED" (bob
posted "news in random" there). Prints "ok NAME" or "FAIL NAME DETAIL" per
check; exits non-zero if any check failed.
"""
import asyncio
import base64
import json
import sys

from browser import with_chromium
from checks import check, finish, give_up_after

ADDRESS, TOKEN, SCREENSHOT = sys.argv[1:4]
PAGE = "http://" + ADDRESS + "/"
HISTORY = 120

CONVS = "[...document.querySelectorAll('#convs li')].map(li => ({key: li.dataset.key, text: li.textContent, "\
        "badge: (li.querySelector('.badge') || {}).textContent || '', current: li.getAttribute('aria-current') === 'true'}))"
TEXTS = "[...document.querySelectorAll('#messages .text')].map(t => t.textContent)"


def conv(key):
    return "document.querySelector('#convs li[data-key=%s]')" % json.dumps(key)


async def submit(b, page, form, field, value):
    await b.js(page, "document.getElementById(%s).value = %s; document.getElementById(%s).requestSubmit();"
               % (json.dumps(field), json.dumps(value), json.dumps(form)))


async def key(b, page, key, code, modifiers):
    """A real key press, as the browser's input pipeline delivers it (1: Alt, 2: Ctrl)."""
    for kind in ("rawKeyDown", "keyUp"):
        await b.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "modifiers": modifiers}, session=page)


async def run(b):
    page = await b.tab(PAGE + "#token=" + TOKEN)
    await b.call("Runtime.enable", session=page)

    # The list: rooms and the direct conversation, with unread counts and previews.
    listed = await b.until(page, "document.querySelectorAll('#convs li').length >= 2 && " + CONVS)
    keys = [c["key"] for c in listed or []]
    check("the room list holds #general", "#general" in keys, keys)
    dm = next((c for c in listed or [] if c["key"].startswith("@")), None)
    check("a direct conversation is listed, with bob's label and its last message", dm is not None and "bob·" in dm["text"] and "psst" in dm["text"], listed)
    marked = await b.until(page, "[...document.querySelectorAll('#convs li')].map(li => li.textContent).find(t => t.includes('(direct)') && t.includes('· away'))")
    check("and marked with bob's presence (away), known network-wide", bool(marked), await b.js(page, CONVS))
    check("its unread count is shown", dm is not None and dm["badge"] == "1", dm)
    check("#general is open", any(c["current"] and c["key"] == "#general" for c in listed or []), listed)
    # A bidi override and a zero-width space from the network are shown as what they are, and act on nothing.
    rtl = await b.until(page, "[...document.querySelectorAll('#messages .text')].map(t => t.textContent).find(t => t.startsWith('rtl'))")
    check("invisible and bidi characters shown as <U+XXXX>", rtl == "rtl <U+202E>olleh<U+202C> zero<U+200B>width end", rtl)
    preview = await b.js(page, conv("#general") + ".textContent")
    check("and so in the preview", preview is not None and "\u202e" not in preview and "<U+202E>" in preview, preview)

    # The invite, answered in the page.
    invite = await b.until(page, "!document.getElementById('invitebox').hidden && document.getElementById('invites').textContent")
    check("the invite to #team is shown", bool(invite) and "#team" in invite and "bob" in invite, invite)
    await b.js(page, "[...document.querySelectorAll('#invites button')].find(x => x.textContent === 'Accept').click()")
    team = await b.until(page, conv("#team") + " && " + conv("#team") + ".textContent")
    check("accepting lists the private room", bool(team) and "(private)" in team, team)
    opened = await b.until(page, conv("#team") + " && " + conv("#team") + ".getAttribute('aria-current') === 'true'")
    check("and opens it: what is typed next goes to #team, not the room the invite came into", bool(opened), await b.js(page, CONVS))
    check("the invite is gone once answered", await b.until(page, "document.getElementById('invitebox').hidden"))

    # The sync state and the peers.
    sync = await b.until(page, "document.getElementById('sync').textContent.includes('linked') && document.getElementById('sync').textContent")
    check("the sync state is shown", bool(sync) and "in sync" in sync and "1 linked" in sync, sync)
    await b.js(page, "document.getElementById('peersbtn').click()")
    peers = await b.until(page, "document.getElementById('panellist').textContent.includes('linked') && document.getElementById('panellist').textContent")
    check("the peers panel shows bob linked", bool(peers) and "bob·" in peers, peers)
    await key(b, page, "Escape", "Escape", 0)
    check("Escape closes the panel and returns to typing", await b.until(page, "document.getElementById('panel').hidden && document.activeElement.id === 'text'"))

    # Joining from the page; older history on scroll keeps the reader's place.
    await submit(b, page, "joinform", "join", "#history")
    first = await b.until(page, "document.getElementById('room').textContent === '#history' && document.querySelectorAll('#messages li').length >= 50 && " + TEXTS)
    check("joining opens the room with its last page", bool(first) and first[-1] == "h%03d" % HISTORY and len(first) < HISTORY, (first or [])[:3])
    while True:
        before = await b.js(page, "document.querySelectorAll('#messages li').length")
        # Scrolled to the top, and the top message's place taken in the same
        # turn (the scroll event that asks for more comes after it).
        anchor = await b.js(page, "(() => { document.getElementById('scroller').scrollTop = 0; const li = document.querySelector('#messages li'); "
                                  "window.anchor = li; return li.getBoundingClientRect().top; })()")
        more = await b.until(page, "document.querySelectorAll('#messages li').length > %d" % before)
        if not more:
            check("scrolling up loads older messages", False, before)
            break
        moved = await b.js(page, "window.anchor.getBoundingClientRect().top")
        check("after %d older ones load, the message that was at the top stays in place" % before, abs(moved - anchor) < 2, (anchor, moved))
        if await b.js(page, "document.querySelectorAll('#messages li').length") >= HISTORY:
            break
    texts = await b.until(page, "!document.getElementById('start').hidden && " + TEXTS)
    check("the whole history, once each and in order, down to its beginning",
          texts == ["h%03d" % n for n in range(1, HISTORY + 1)], (texts or [])[:3] + ["…"] + (texts or [])[-3:])

    # A message in a room that is not open: its unread count and preview.
    await submit(b, page, "joinform", "join", "#random")
    await b.until(page, "document.getElementById('room').textContent === '#random'")
    await b.js(page, conv("#general") + ".querySelector('button').click()")
    await b.until(page, "document.getElementById('room').textContent === '#general'")
    print("JOINED", flush=True)
    line = sys.stdin.readline().strip()
    check("test says POSTED", line == "POSTED", line)
    badge = await b.until(page, conv("#random") + ".textContent.includes('news in random') && " + conv("#random") + ".querySelector('.badge') && "
                                + conv("#random") + ".textContent")
    check("a new message elsewhere that names us shows as unread (@), with its preview", bool(badge) and "news in random" in badge
          and await b.js(page, conv("#random") + ".querySelector('.badge').textContent") == "@ 1", badge)

    # The keyboard: Alt+Down and Alt+Up move between conversations; Alt+1 opens the first.
    order = await b.js(page, "[...document.querySelectorAll('#convs li')].map(li => li.dataset.key)")
    at = await b.js(page, "document.querySelector('#convs li[aria-current=true]').dataset.key")
    await key(b, page, "ArrowDown", "ArrowDown", 1)
    after = await b.until(page, "document.querySelector('#convs li[aria-current=true]').dataset.key !== %s && "
                                "document.querySelector('#convs li[aria-current=true]').dataset.key" % json.dumps(at))
    check("Alt+Down opens the next conversation", order and after == order[(order.index(at) + 1) % len(order)], (order, at, after))
    await key(b, page, "1", "Digit1", 1)
    first_key = await b.until(page, "document.querySelector('#convs li[aria-current=true]').dataset.key === %s" % json.dumps(order[0]))
    check("Alt+1 opens the first conversation", bool(first_key), order)
    await b.js(page, conv("#random") + ".querySelector('button').click()")
    cleared = await b.until(page, "document.getElementById('room').textContent === '#random' && !" + conv("#random") + ".querySelector('.badge')")
    check("opening the room clears its count", bool(cleared))
    marked = await b.until(page, "document.querySelectorAll('#messages li.mention').length > 0 && "
                                 "[...document.querySelectorAll('#messages li.mention')].map(li => li.querySelector('.text').textContent)")
    check("the message that names us is marked", marked == ["news in random for alice"], marked)
    await submit(b, page, "composer", "text", "/mentions")
    named = await b.until(page, "document.getElementById('paneltitle').textContent.includes('name you') && "
                                "document.querySelectorAll('#panellist li button').length >= 1 && document.getElementById('panellist').textContent")
    check("/mentions lists it", bool(named) and "news in random for alice" in named, named)
    await key(b, page, "Escape", "Escape", 0)

    # The direct conversation: its messages, and a reply from the page that bob gets.
    await b.js(page, "document.querySelector('#convs li[data-key^=\"@\"] button').click()")
    psst = await b.until(page, "(" + TEXTS + ").includes('psst') && " + TEXTS)
    check("the direct conversation opens with its messages", bool(psst), psst)
    title = await b.js(page, "document.getElementById('room').textContent")
    check("its title is bob's label (nick·fp), as the terminal's prompt says it", bool(title) and title.startswith("bob·") and len(title) < 20, title)
    await submit(b, page, "composer", "text", "hi bob, privately")
    sent = await b.until(page, "[...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('hi bob, privately') && "
                               "li.querySelector('.status') && li.querySelector('.status').dataset.state !== 'sending')")
    check("a direct message from the page is stored", bool(sent))
    await submit(b, page, "composer", "text", "/me waves privately")
    acted = await b.until(page, "[...document.querySelectorAll('#messages li.action')].some(li => li.textContent.includes('waves privately') && "
                                "li.querySelector('.status') && li.querySelector('.status').dataset.state !== 'sending')")
    check("/me in a direct conversation is a stored direct action, shown as one", bool(acted))
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT.replace(".png", "-direct.png"), "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))

    # Search, from the keyboard: Ctrl+K, words, Enter; a result opens its room.
    await key(b, page, "k", "KeyK", 2)
    check("Ctrl+K goes to search", await b.until(page, "document.activeElement.id === 'search'"))
    await submit(b, page, "searchform", "search", "h077")
    found = await b.until(page, "document.querySelectorAll('#panellist li button').length >= 1 && document.getElementById('panellist').textContent")
    check("search lists the match with its room", bool(found) and "h077" in found and "#history" in found, found)
    await b.js(page, "document.querySelector('#panellist li button').click()")
    check("a result opens its room", bool(await b.until(page, "document.getElementById('room').textContent === '#history'")))

    # Who is here.
    await b.js(page, "document.getElementById('whobtn').click()")
    who = await b.until(page, "document.getElementById('panellist').children.length >= 1 && document.getElementById('panellist').textContent")
    check("who lists bob in the room", bool(who) and "bob·" in who, who)
    away = await b.until(page, "document.getElementById('panellist').textContent.includes('away: at lunch') && document.getElementById('panellist').textContent")
    check("and says he is away, with why (his presence)", bool(away), who)
    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT.replace(".png", "-who.png"), "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))
    await key(b, page, "Escape", "Escape", 0)

    # Leaving a room from the page.
    await b.js(page, conv("#random") + ".querySelector('button').click()")
    await b.until(page, "document.getElementById('room').textContent === '#random'")
    await b.js(page, "document.getElementById('leavebtn').click()")
    left = await b.until(page, "!" + conv("#random") + " && document.getElementById('room').textContent === '#general'")
    check("leaving takes the room off the list and goes home", bool(left))

    shot = await b.call("Page.captureScreenshot", {"format": "png"}, session=page)
    with open(SCREENSHOT, "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))

    # A phone-width window: the list folds behind a button.
    await b.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 740, "deviceScaleFactor": 1, "mobile": True}, session=page)
    folded = await b.until(page, "document.getElementById('side').offsetParent === null && document.getElementById('menu').offsetParent !== null")
    check("at phone width the list is folded away", bool(folded))
    await b.js(page, "document.getElementById('menu').click()")
    check("the menu button shows it", bool(await b.until(page, "document.getElementById('side').offsetParent !== null")))
    wide = await b.js(page, "document.documentElement.scrollWidth <= window.innerWidth + 1")
    check("nothing wider than the window", wide)
    await b.call("Emulation.clearDeviceMetricsOverride", session=page)

    # Light and dark follow the system.
    light = await b.js(page, "getComputedStyle(document.body).backgroundColor")
    await b.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}, session=page)
    dark = await b.until(page, "getComputedStyle(document.body).backgroundColor !== %s && getComputedStyle(document.body).backgroundColor" % json.dumps(light))
    check("dark when the system is dark", bool(dark) and light == "rgb(255, 255, 255)", (light, dark))

    errors = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
    check("no script error in the page", not errors, errors[:1])


give_up_after(240)
asyncio.run(with_chromium(run))
finish()
