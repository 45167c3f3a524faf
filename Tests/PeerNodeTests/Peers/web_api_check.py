"""Python `websockets` and `http.client` against a node's --web page and API.

Usage: web_api_check.py ADDRESS TOKEN PEERNODE DATA_DIR
Prints "ok NAME" or "FAIL NAME DETAIL" per check, "POSTED ID" once the
hostile-looking post is stored, then waits for a line "REPLIED" on stdin
(the test has the other node answer) before the checks that need the
answer. Exits non-zero if any check failed.
"""
import asyncio
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from checks import check, finish, give_up_after

ADDRESS, TOKEN, PEERNODE, DATA_DIR = sys.argv[1:5]
HOST, PORT = ADDRESS.rsplit(":", 1)
ORIGIN = "http://" + ADDRESS
API = "ws://" + ADDRESS + "/api/v1"
MAX_COMMAND = 64 << 10
MAX_CLIENTS = 16


def get(path, host=None, origin=None):
    c = http.client.HTTPConnection(HOST, int(PORT), timeout=10)
    headers = {"Host": host or ADDRESS}
    if origin:
        headers["Origin"] = origin
    c.putrequest("GET", path, skip_host=True)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    r = c.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()


async def refused(url, status, name, **kw):
    try:
        async with websockets.connect(url, open_timeout=10, **kw):
            check(name, False, "opened")
    except InvalidStatus as e:
        check(name, e.response.status_code == status, e.response.status_code)


# Every event each connection brought, so a wait also finds what came
# while an earlier wait looked for something else.
backlog = {}


async def events_until(ws, match, timeout=20):
    seen = backlog.setdefault(id(ws), [])
    for e in seen:
        if match(e):
            return e
    async def loop():
        while True:
            e = json.loads(await ws.recv())
            seen.append(e)
            if match(e):
                return e
    try:
        return await asyncio.wait_for(loop(), timeout)
    except asyncio.TimeoutError:
        return None


refs = 0


async def ask(ws, cmd, **fields):
    """Sends a command; returns the events that answered it (each carries
    its ref) and the closing ok or error (None when none came)."""
    global refs
    refs += 1
    ref = "a%d" % refs
    await ws.send(json.dumps(dict(cmd=cmd, ref=ref, **fields)))
    got = []
    final = await events_until(ws, lambda e: e.get("ref") == ref and (got.append(e) or e.get("type") in ("ok", "error")))
    return got[:-1], final


def stuck_client(backed_up, seconds=60):
    """A client that sends commands and never reads: the node must close it
    once its answers pass WebService.maximumUnsentBytes (plus what the
    kernel buffers hold), and only it. Sets `backed_up` once the node has
    taken 16 KiB of its commands (about 500, whose answers it cannot
    deliver).
    Returns the seconds until it was closed."""
    s = socket.create_connection((HOST, int(PORT)), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /api/v1?token=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (TOKEN, ADDRESS, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    if not head.startswith(b"HTTP/1.1 101"):
        return None
    payload = json.dumps({"cmd": "stats"}).encode()
    mask = os.urandom(4)
    frame = bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    start = time.monotonic()
    s.settimeout(5)
    sent = 0
    try:
        while time.monotonic() - start < seconds:
            s.sendall(frame * 64)
            sent += len(frame) * 64
            if sent >= 16 << 10:
                backed_up.set()
    except OSError:
        return time.monotonic() - start  # reset or broken pipe: the node closed it
    finally:
        backed_up.set()  # whatever happened, nobody waits on it any longer
        s.close()
    return None


async def main():
    # The page: served with a policy that allows no inline script.
    status, headers, body = get("/")
    check("page 200", status == 200, status)
    csp = headers.get("content-security-policy", "")
    check("page policy", "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp, csp)
    check("page has no inline script", b"<script>" not in body and b"<script src=\"/app.js\"" in body)
    status, headers, body = get("/app.js")
    check("script 200", status == 200 and b"innerHTML" not in body, status)
    check("missing file 404", get("/nothing")[0] == 404)
    check("page on a DNS name (rebinding) 403", get("/", host="rebind.example:" + PORT)[0] == 403)
    check("page on another port 403", get("/", host=HOST + ":1")[0] == 403)

    # Who gets in.
    await refused(API, 401, "no token 401")
    await refused(API + "?token=" + "0" * 64, 401, "wrong token 401")
    await refused(API + "?token=" + TOKEN[:-1], 401, "short token 401")
    await refused(API + "?token=" + TOKEN, 403, "another origin 403", origin="http://evil.example")
    await refused(API + "?token=" + TOKEN, 403, "null origin 403", origin="null")
    good = API + "?token=" + TOKEN

    async with websockets.connect(good, origin=ORIGIN, max_size=None) as ws:
        hello = json.loads(await ws.recv())
        check("hello", hello.get("type") == "hello" and hello.get("api") == 1 and len(hello.get("id", "")) == 64, hello)
        me = hello.get("id")

        await ws.send("{not json")
        e = json.loads(await ws.recv())
        check("bad JSON is an error", e.get("type") == "error", e)
        await ws.send(json.dumps({"cmd": "launch", "ref": "x1"}))
        e = json.loads(await ws.recv())
        check("unknown cmd is an error with its ref", e.get("type") == "error" and e.get("ref") == "x1" and "launch" in e.get("error", ""), e)
        await ws.send(json.dumps({"cmd": "post", "text": "hi", "colour": "red", "ref": "x2"}))
        e = json.loads(await ws.recv())
        check("unknown field is an error", e.get("type") == "error" and "colour" in e.get("error", ""), e)
        await ws.send(b"\x00binary")
        e = json.loads(await ws.recv())
        check("binary is an error", e.get("type") == "error", e)
        # At the limit: a whole command of exactly MAX_COMMAND bytes is read and answered.
        filler = {"cmd": "post", "ref": "big", "text": ""}
        filler["text"] = "a" * (MAX_COMMAND - len(json.dumps(filler)))
        at_limit = json.dumps(filler)
        check("command at the limit is MAX_COMMAND bytes", len(at_limit.encode()) == MAX_COMMAND, len(at_limit))
        await ws.send(at_limit)
        e = await events_until(ws, lambda e: e.get("ref") == "big" and e.get("type") in ("ok", "error"))
        check("command at the limit is answered", e is not None and e.get("type") in ("ok", "error"), e)

        await ws.send(json.dumps({"cmd": "post", "text": "<img src=x onerror=alert(1)> from the page", "ref": "p1"}))
        ok = await events_until(ws, lambda e: e.get("type") == "ok" and e.get("ref") == "p1")
        check("post ok with id", ok is not None and len(ok.get("id", "")) == 64, ok)
        posted = ok.get("id") if ok else ""
        print("POSTED " + posted, flush=True)
        delivered = await events_until(ws, lambda e: e.get("type") == "receipt" and e.get("id") == posted and e.get("state") == "delivered", 30)
        check("own message reaches delivered", delivered is not None)

        # The other node answers (the test has it post once it saw ours).
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        check("test says replied", line.strip() == "REPLIED", line)
        reply = await events_until(ws, lambda e: e.get("type") == "message" and e.get("text") == "hi page" and e.get("author") != me, 30)
        check("reply arrives live", reply is not None)
        check("a live event carries no ref", reply is not None and "ref" not in reply, reply)
        bob = reply.get("author", "") if reply else ""

        # History in pages, newest first: at the page limit and one past it.
        backlog[id(ws)] = []  # only what answers these from here on
        await ws.send(json.dumps({"cmd": "history", "limit": 1, "ref": "h1"}))
        page = []
        e = await events_until(ws, lambda e: (e.get("type") == "message" and e.get("room") and page.append(e)) or (e.get("ref") == "h1" and e.get("type") == "ok"))
        check("history page of 1", e is not None and e.get("type") == "ok" and e.get("count") == 1 and "before" in e, e)
        check("history page holds the newest", len(page) >= 1 and page[-1].get("text") == "hi page", page[-1:])
        backlog[id(ws)] = []
        await ws.send(json.dumps({"cmd": "history", "limit": "500", "before": (e or {}).get("before", ""), "ref": "h2"}))
        older = []
        e2 = await events_until(ws, lambda x: (x.get("type") == "message" and x.get("room") and older.append(x)) or (x.get("ref") == "h2" and x.get("type") in ("ok", "error")))
        check("the page before it", e2 is not None and e2.get("type") == "ok" and "before" not in e2
              and any(m.get("id") == posted for m in older) and all(m.get("text") != "hi page" for m in older), e2)
        for bad in ["0", "501", "x", 0, 501, True, 50.5, None]:
            await ws.send(json.dumps({"cmd": "history", "limit": bad, "ref": "hb" + str(bad)}))
            e3 = await events_until(ws, lambda x: x.get("ref") == "hb" + str(bad))
            check("history limit " + json.dumps(bad) + " refused", e3 is not None and e3.get("type") == "error", e3)
        await ws.send(json.dumps({"cmd": "history", "before": "1:zz", "ref": "hc"}))
        e3 = await events_until(ws, lambda x: x.get("ref") == "hc")
        check("a made-up cursor refused", e3 is not None and e3.get("type") == "error", e3)

        await ws.send(json.dumps({"cmd": "peers", "ref": "q"}))
        rows = []
        e = await events_until(ws, lambda e: (rows.append(e) or True) and e.get("ref") == "q" and e.get("type") == "ok")
        check("peers answered", e is not None and e.get("type") == "ok" and any(r.get("type") == "peer" and r.get("state") == "linked" for r in rows), rows[-3:])

        await conversations(ws, bob)

    await uploads(good)

    # One past the limit: closed with 1009, and the node still serves others.
    async with websockets.connect(good, origin=ORIGIN, max_size=None) as ws:
        await ws.recv()
        await ws.send("x" * (MAX_COMMAND + 1))
        try:
            # Events pushed to every client (a peer's presence, say) may come before the close: only an
            # answer to the command (ok or error) counts against it.
            while True:
                line = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if line.get("type") in ("ok", "error"):
                    check("command past the limit closes 1009", False, "answered: " + str(line)[:200])
                    break
        except ConnectionClosed as c:
            check("command past the limit closes 1009", c.rcvd is not None and c.rcvd.code == 1009, c)
        except asyncio.TimeoutError:
            check("command past the limit closes 1009", False, "neither closed nor answered in 10 s")

    # A client that stops reading is closed; everyone else is still served.
    async with websockets.connect(good, origin=ORIGIN) as other:
        await other.recv()
        backed_up = threading.Event()
        loop = asyncio.get_running_loop()
        stuck = loop.run_in_executor(None, stuck_client, backed_up)
        check("the stuck client is backed up", await loop.run_in_executor(None, backed_up.wait, 30))
        _, ok = await ask(other, "stats")
        check("the others are served while it is stuck", ok is not None and ok.get("type") == "ok", ok)
        took = await stuck
        check("a client that never reads is closed", took is not None, took)
        _, ok = await ask(other, "stats")
        check("the others are still served after", ok is not None and ok.get("type") == "ok", ok)

    # At most MAX_CLIENTS at once: one more is closed with 1013.
    clients = []
    for _ in range(MAX_CLIENTS):
        ws = await websockets.connect(good, origin=ORIGIN)
        await ws.recv()
        clients.append(ws)
    extra = await websockets.connect(good, origin=ORIGIN)
    try:
        await asyncio.wait_for(extra.recv(), 10)
        check("client past the limit closes 1013", False, "opened")
    except ConnectionClosed as c:
        check("client past the limit closes 1013", c.rcvd is not None and c.rcvd.code == 1013, c)
    for ws in clients[1:]:
        await ws.close()
    survivor = clients[0]

    # A new token closes the clients of the old one, and only the new one opens.
    new_url = subprocess.run([PEERNODE, "web-url", "--new", "--data-dir", DATA_DIR], capture_output=True, text=True, timeout=20).stdout.strip()
    new_token = new_url.rsplit("#token=", 1)[-1]
    check("web-url --new gives a new token", len(new_token) == 64 and new_token != TOKEN, new_url)
    try:
        while True:
            await asyncio.wait_for(survivor.recv(), 10)
    except ConnectionClosed as c:
        check("old token's client closed 1008", c.rcvd is not None and c.rcvd.code == 1008, c)
    except asyncio.TimeoutError:
        check("old token's client closed 1008", False, "still open")
    await refused(good, 401, "old token refused")
    async with websockets.connect(API + "?token=" + new_token, origin=ORIGIN) as ws:
        check("new token opens", json.loads(await ws.recv()).get("type") == "hello")
    # A bot sends no Origin: the token is enough.
    async with websockets.connect(API + "?token=" + new_token) as ws:
        check("no origin with the token opens", json.loads(await ws.recv()).get("type") == "hello")


async def uploads(good):
    """send_file (docs/API.md): the size limit (4 GiB, the largest file) and one
    past; a file sent in pieces is offered; a connection that closes before its
    bytes leaves no file behind in the data directory's uploads/."""
    limit = 4 << 30
    folder = os.path.join(DATA_DIR, "uploads")

    async def start(ws, size, ref):
        await ws.send(json.dumps({"cmd": "send_file", "name": "big.bin", "size": str(size), "ref": ref}))
        return await events_until(ws, lambda e: e.get("ref") == ref and e.get("type") in ("ready", "ok", "error"))

    async with websockets.connect(good, origin=ORIGIN, max_size=None) as ws:
        await ws.recv()
        e = await start(ws, limit, "u1")
        check("send_file at the size limit (4 GiB) is ready for the bytes", e is not None and e.get("type") == "ready", e)
        check("its file is made, empty, in uploads/", os.path.isdir(folder) and len(os.listdir(folder)) == 1, os.listdir(folder) if os.path.isdir(folder) else None)
    async with websockets.connect(good, origin=ORIGIN, max_size=None) as ws:
        await ws.recv()
        e = await start(ws, limit + 1, "u2")
        check("one byte past the limit is refused, naming it", e is not None and e.get("type") == "error" and str(limit) in e.get("error", ""), e)
        # Answered on a connection opened after the first one's close came back: the node, one loop,
        # took that close (and removed the upload's file with it) before it read anything of this one.
        check("closed before its bytes, the upload's file is gone", not os.listdir(folder), os.listdir(folder))
        data = os.urandom(3 << 20)
        e = await start(ws, len(data), "u3")
        check("a 3 MiB file is ready", e is not None and e.get("type") == "ready", e)
        for at in range(0, len(data), 60000):
            await ws.send(data[at:at + 60000])
        e = await events_until(ws, lambda e: e.get("ref") == "u3" and e.get("type") in ("ok", "error"), 60)
        check("sent in pieces, it is offered", e is not None and e.get("type") == "ok" and len(e.get("id", "")) == 64, e)
        offered = (e or {}).get("id")
        # `files` lists it as /files does: a head, then a row per offer with what is held here.
        events, ok = await ask(ws, "files", room="#general")
        head = next((x for x in events if x.get("type") == "files"), {})
        row = next((x for x in events if x.get("type") == "file_listed" and x.get("id") == offered), {})
        check("files answers a head with the count, then the offer's row: held whole here, its name, size and number",
              ok.get("type") == "ok" and ok.get("count") == head.get("count") >= 1 and head.get("room") == "#general"
              and row.get("state") == "held" and row.get("bytes") == len(data) and row.get("size") == len(data)
              and row.get("name") == "big.bin" and isinstance(row.get("n"), int) and len(row.get("root", "")) == 64, (events, ok))
        _, ok = await ask(ws, "files", room="#never-joined")
        check("files of a room not joined is an error", ok.get("type") == "error", ok)
        _, ok = await ask(ws, "files", room="#general", **{"with": "bob"})
        check("files with both room and with is an error", ok.get("type") == "error", ok)
    check("and its bytes leave uploads/ once sealed", not os.listdir(folder), os.listdir(folder))


async def conversations(ws, bob):
    """The commands a chat page needs beyond posting (docs/API.md)."""
    events, ok = await ask(ws, "rooms")
    general = next((e for e in events if e.get("type") == "conversation" and e.get("room") == "#general"), None)
    check("rooms lists #general with its last message", general is not None and general.get("last_text") == "hi page" and general.get("last_nick") == "bob", events)
    check("answering events carry the ref", all(e.get("ref") == ok.get("ref") for e in events) and ok.get("type") == "ok", events)
    check("#general has bob's message unread", general is not None and general.get("unread", 0) >= 1, general)
    hi = (general or {}).get("last_id")
    _, ok = await ask(ws, "read", room="#general")
    check("read answered", ok is not None and ok.get("type") == "ok", ok)
    events, _ = await ask(ws, "rooms")
    general = next((e for e in events if e.get("room") == "#general"), {})
    check("read brings the unread count to 0", general.get("unread") == 0, general)

    # A room bob posted in before this node joined it: readable, and found by search, once joined.
    events, ok = await ask(ws, "search", text="before joining")
    check("search does not find what this node cannot read", ok.get("type") == "ok" and ok.get("count") == 0 and not events, events)
    events, ok = await ask(ws, "history", room="#later")
    check("history of a room not joined is an error", ok.get("type") == "error", ok)
    _, ok = await ask(ws, "join", room="#later")
    check("join answered with the room", ok.get("type") == "ok" and ok.get("room") == "#later", ok)
    events, ok = await ask(ws, "search", text="before joining")
    check("search finds what came before the join", ok.get("count") == 1 and events and events[0].get("type") == "found"
          and events[0].get("room") == "#later" and events[0].get("text") == "posted before joining", events)
    events, ok = await ask(ws, "history", room="#later")
    check("its history", [e.get("text") for e in events if e.get("type") == "message"] == ["posted before joining"] and ok.get("count") == 1, events)
    events, ok = await ask(ws, "who", room="#later")
    check("who in a named room", any(e.get("type") == "member" and e.get("id") == bob and e.get("fp") for e in events), events)
    events, _ = await ask(ws, "rooms")
    check("the joined room is listed", any(e.get("room") == "#later" for e in events), events)
    _, ok = await ask(ws, "part", room="#later")
    check("part answered", ok.get("type") == "ok", ok)
    events, _ = await ask(ws, "rooms")
    check("a room left is no longer listed", not any(e.get("room") == "#later" for e in events), events)
    _, ok = await ask(ws, "part", room="#general")
    check("#general cannot be left", ok.get("type") == "error", ok)
    _, ok = await ask(ws, "part", room="#never-joined")
    check("a room not joined cannot be left", ok.get("type") == "error", ok)

    # A private room of our own.
    _, ok = await ask(ws, "private", room="#api-team")
    check("private answered", ok.get("type") == "ok", ok)
    events, _ = await ask(ws, "rooms")
    check("the private room is listed as private", any(e.get("room") == "#api-team" and e.get("private") == "yes" for e in events), events)
    _, ok = await ask(ws, "private", room="#api-team")
    check("the same private room twice is an error", ok.get("type") == "error", ok)
    # A text longer than one message (4,000 bytes) is posted as several, cut between words, as the terminal does.
    long_text = " ".join(f"word{i}" for i in range(1400))
    _, ok = await ask(ws, "post", text=long_text, room="#api-team")
    check("a 10,000-byte post is three messages (parts: 3)", ok.get("type") == "ok" and ok.get("parts") == 3 and len(long_text) > 10_000, ok)
    events, ok = await ask(ws, "history", room="#api-team")
    texts = [e.get("text") for e in events if e.get("type") == "message"]
    check("the three parts, in order, hold the whole text", " ".join(texts[-3:]) == long_text, texts[-3:])

    # Direct messages: sent with an id, listed, in their own history.
    _, ok = await ask(ws, "msg", to=bob, text="a direct word")
    check("msg answered with its id", ok.get("type") == "ok" and len(ok.get("id", "")) == 64, ok)
    dm_id = ok.get("id")
    events, ok = await ask(ws, "history", **{"with": bob})
    check("a direct conversation's history", ok.get("with") == bob and any(e.get("id") == dm_id and e.get("kind") == "dm" for e in events), (ok, events))
    events, _ = await ask(ws, "rooms")
    check("the direct conversation is listed", any(e.get("with") == bob and e.get("last_text") == "a direct word" and e.get("fp") for e in events), events)
    events, ok = await ask(ws, "files", **{"with": bob})
    head = next((e for e in events if e.get("type") == "files"), {})
    check("files in a direct conversation with none offered: a head naming the other party, no rows",
          ok.get("type") == "ok" and ok.get("count") == 0 and head.get("with") == bob and head.get("count") == 0
          and not any(e.get("type") == "file_listed" for e in events), (events, ok))
    _, ok = await ask(ws, "msg", to=bob, text="waves", kind="action")
    action_id = ok.get("id")
    events, _ = await ask(ws, "history", **{"with": bob})
    check("msg with kind action: a direct action (\"action\": \"yes\")",
          any(e.get("id") == action_id and e.get("kind") == "dm" and e.get("action") == "yes" for e in events), events)
    _, ok = await ask(ws, "msg", to=bob, text="x", kind="shout")
    check("msg with another kind is refused", ok.get("type") == "error" and "kind is text or action" in ok.get("error", ""), ok)
    _, ok = await ask(ws, "read", **{"with": bob})
    check("read of a direct conversation", ok.get("type") == "ok", ok)

    # Refusals.
    for name, cmd, fields in [("room and with at once", "history", {"room": "#general", "with": bob}),
                              ("read of nothing", "read", {}), ("search of nothing", "search", {"text": "  "}),
                              ("msg to nobody", "msg", {"to": "", "text": "x"}), ("msg to someone unknown", "msg", {"to": "nobody-here", "text": "x"}),
                              ("join of a bad name", "join", {"room": "#" + "x" * 200}), ("nick of nothing", "nick", {"nick": ""})]:
        _, ok = await ask(ws, cmd, **fields)
        check(name + " is refused", ok is not None and ok.get("type") == "error" and ok.get("error"), ok)
    _, ok = await ask(ws, "nick", nick="alice-api")
    check("nick answered", ok.get("type") == "ok", ok)
    await message_life(ws, hi)


async def message_life(ws, hi):
    """Reactions, replies, edits and deletes by message id, and typing (docs/API.md)."""
    def in_general(events, mid):
        return next((e for e in events if e.get("type") == "message" and e.get("id") == mid), None)
    _, ok = await ask(ws, "react", id=hi, reaction="👍")
    check("react answered", ok.get("type") == "ok" and len(ok.get("id", "")) == 64, ok)
    _, ok = await ask(ws, "reply", id=hi, text="a reply from the API")
    check("reply answered with its id", ok.get("type") == "ok" and len(ok.get("id", "")) == 64, ok)
    reply = ok.get("id")
    events, _ = await ask(ws, "history", room="#general")
    r, m = in_general(events, reply), in_general(events, hi)
    check("the reply names and quotes what it answers", r is not None and r.get("kind") == "reply" and r.get("reply_to") == hi
          and r.get("reply_to_state") == "here" and r.get("reply_to_text") == "hi page", r)
    check("the message shows its reaction count", m is not None and m.get("reactions") == "👍 1", m)
    _, ok = await ask(ws, "edit", id=reply, text="edited from the API")
    check("edit answered", ok.get("type") == "ok", ok)
    events, _ = await ask(ws, "history", room="#general")
    r = in_general(events, reply)
    check("history shows the edited text, marked", r is not None and r.get("text") == "edited from the API" and r.get("edited") == "yes", r)
    events, ok = await ask(ws, "versions", id=reply)
    check("versions lists the reply as first sent, then its edit",
          [(e.get("version"), e.get("text")) for e in events if e.get("type") == "version"] == [(0, "a reply from the API"), (1, "edited from the API")], events)
    events, ok = await ask(ws, "search", text="reply from the API")
    check("search finds a message by its earlier words and shows it as it reads now",
          [(e.get("id"), e.get("text")) for e in events if e.get("type") == "found"] == [(reply, "edited from the API")], events)
    _, ok = await ask(ws, "react", id=hi, reaction="👍")
    events, _ = await ask(ws, "history", room="#general")
    check("the same reaction again takes it back", "reactions" not in (in_general(events, hi) or {"reactions": "?"}), in_general(events, hi))
    _, ok = await ask(ws, "delete", id=reply)
    check("delete answered", ok.get("type") == "ok", ok)
    events, _ = await ask(ws, "history", room="#general")
    check("a deleted message leaves the history", in_general(events, reply) is None, events)
    _, ok = await ask(ws, "typing", room="#general")
    check("typing answered", ok.get("type") == "ok", ok)
    for name, cmd, fields, says in [("an edit of someone else's message", "edit", {"id": hi, "text": "mine now"}, "not yours"),
                                    ("a delete of someone else's message", "delete", {"id": hi}, "not yours"),
                                    ("an edit of a deleted message", "edit", {"id": reply, "text": "back"}, "deleted"),
                                    ("a reaction of two words", "react", {"id": hi, "reaction": "two words"}, "reaction"),
                                    ("a reaction of 33 bytes", "react", {"id": hi, "reaction": "x" * 33}, "32 bytes"),
                                    ("a message id nobody has", "reply", {"id": "00" * 32, "text": "x"}, "no message"),
                                    ("an id that is no id", "react", {"id": "xyz", "reaction": "x"}, "64-hex"),
                                    ("typing in a room not joined", "typing", {"room": "#never-joined"}, "not in")]:
        _, ok = await ask(ws, cmd, **fields)
        check(name + " is refused", ok is not None and ok.get("type") == "error" and says in ok.get("error", ""), ok)


give_up_after(240)
asyncio.run(main())
finish()
