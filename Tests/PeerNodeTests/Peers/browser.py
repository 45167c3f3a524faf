"""Real headless Chromium (Debian's `chromium`), driven through its DevTools protocol: what the page checks share."""
import json
import os
import re
import signal
import subprocess

import websockets

from checks import scratch


class Browser:
    def __init__(self, ws):
        self.ws, self.n = ws, 0
        self.events = []  # DevTools events that came while waiting for an answer

    async def call(self, method, params=None, session=None):
        self.n += 1
        mid = self.n
        message = {"id": mid, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self.ws.send(json.dumps(message))
        while True:
            r = json.loads(await self.ws.recv())
            if r.get("id") == mid:
                return r
            if "method" in r:
                self.events.append(r)

    async def event(self, method, session):
        """Waits for a DevTools event of `session` (one that came already counts)."""
        while True:
            for e in self.events:
                if e.get("method") == method and e.get("sessionId") == session:
                    self.events.remove(e)
                    return e
            r = json.loads(await self.ws.recv())
            if "method" in r:
                self.events.append(r)

    async def tab(self, url):
        """A new tab at `url`, once its page has loaded."""
        target = (await self.call("Target.createTarget", {"url": "about:blank"}))["result"]["targetId"]
        session = (await self.call("Target.attachToTarget", {"targetId": target, "flatten": True}))["result"]["sessionId"]
        await self.call("Page.enable", session=session)
        await self.call("Page.navigate", {"url": url}, session=session)
        await self.event("Page.loadEventFired", session)
        return session

    async def js(self, session, expression, wait=False):
        r = await self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": wait}, session=session)
        return r.get("result", {}).get("result", {}).get("value")

    async def until(self, session, expression, timeout=20):
        """The value of `expression` once it is truthy, tested in the page
        at once and at every change of the document (no polling); what it
        is after `timeout` seconds otherwise."""
        waiting = """new Promise(done => {
          const test = () => { try { return (%s); } catch (e) { return null; } };
          const now = test();
          if (now) return done(now);
          const watch = new MutationObserver(() => { const v = test(); if (v) { watch.disconnect(); done(v); } });
          watch.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
          setTimeout(() => { watch.disconnect(); done(test()); }, %d);
        })""" % (expression, int(timeout * 1000))
        return await self.js(session, waiting, wait=True)


async def with_chromium(run, window="900,640"):
    """Starts headless Chromium and runs `run(Browser)` against it; kills it after."""
    profile = scratch("peernode-chromium-")
    # (no sandbox: CI runs as root; no /dev/shm: a container may give it 64 MB)
    chromium = subprocess.Popen(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
                                 "--remote-debugging-port=0", "--window-size=" + window, "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                # Its shared-memory files (no /dev/shm) go with the profile, not loose in /tmp.
                                env=dict(os.environ, TMPDIR=profile), start_new_session=True)
    devtools = None
    while devtools is None:
        line = chromium.stderr.readline()
        if not line:
            raise SystemExit("FAIL chromium starts: no DevTools address")
        m = re.search(r"(ws://\S+)", line)
        devtools = m.group(1) if m else None
    try:
        async with websockets.connect(devtools, max_size=None) as ws:
            await run(Browser(ws))
    finally:
        # Its whole group: a renderer outliving it would write into the profile as it is removed.
        os.killpg(chromium.pid, signal.SIGKILL)
        chromium.wait()
