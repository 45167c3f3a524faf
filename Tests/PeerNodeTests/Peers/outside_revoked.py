"""§15 "Revoking a device", from the document alone: what a revoked
device signs and may not have is in no answer, on the node that was
there and on a fresh one that catches up later (`/search`, and `/history`,
which in --json is the API's history); and a revocation that names the
device's last envelope (72 bytes) refuses a fork below the limit on a
node that never held the original."""
import struct

from checks import check
from outside_hostile import counter
from outside_keys import ACCOUNTS_ID, ACCOUNTS_KEY, box_keypair, certificate
from outside_link import Node
from outside_sealed import linked
from outside_wire import Identity, envelopes_message, make_envelope


async def answers(node, command, head, timeout=10):
    """The rows of a listing command's answer (--json: its head, then `count` rows)."""
    mark = len(node.events)
    node.send(command)
    top = await node.wait(lambda e: e["type"] == head, since=mark, timeout=timeout)
    if top is None:
        return None
    at, count = node.events.index(top, mark), int(top["count"])
    if count:
        # Its rows follow the head: wait for the last of them.
        await node.wait(lambda e: True, since=at + count, timeout=timeout)
    return node.events[at + 1:at + 1 + count]


async def found(node, word):
    rows = await answers(node, f"/search {word}", "search")
    return rows if rows is not None else ["no answer"]


async def listed(node, ids, room="#general"):
    node.send(f"/join {room}")
    rows = await answers(node, "/history 200", "history")
    return [r for r in (rows or []) if r.get("id") in ids] if rows is not None else ["no answer"]


async def revoked_fork(node):
    """A device's genuine posts 2 and 3 never reach the node; the thief's
    forks of them do, after the account's revocation naming the genuine 3."""
    account, device = Identity(), Identity()
    link, _ = await linked(node, account, b"owner")
    public, _ = box_keypair()
    claim, _ = make_envelope(device, 12, certificate(account, device, 1, public, b"phone"), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    after_claim = (device.sequence, device.last_id)
    make_envelope(device, 1, b"genuine two")
    _, genuine3 = make_envelope(device, 1, b"genuine three")
    device.sequence, device.last_id = after_claim
    forks = [make_envelope(device, 1, b"forged zqxforkword two"), make_envelope(device, 1, b"forged zqxforkword three")]
    mark = len(node.events)
    await link.send(envelopes_message([claim]))
    added = await node.wait(lambda e: e["type"] == "device" and e.get("device") == device.public.hex(), since=mark)
    check("a second device's claim is accepted", added is not None, "no device event")
    # Its dependencies name the device at the limit: the node delivers it once it holds the device's 1 to 3 (here the forks).
    revocation, _ = make_envelope(account, 13, device.public + struct.pack(">Q", 3) + genuine3, room=ACCOUNTS_ID, key=ACCOUNTS_KEY,
                                  dependencies=[(device.public, 3)])
    before = counter(await node.stats(), "revoked_refused")
    await link.send(envelopes_message([revocation]))
    await link.barrier()
    await link.send(envelopes_message([data for data, _ in forks]))
    revoked = await node.wait(lambda e: e["type"] == "device_revoked" and e.get("device") == device.public.hex(), since=mark)
    check("a 72-byte revocation (device ‖ last ‖ the id of the last envelope accepted) is kept, its limit 3",
          revoked is not None and revoked.get("last") == 3, revoked)
    stats = await node.counters_reach({"revoked_refused": before + 2})
    ids = {i.hex() for _, i in forks}
    shown = [e for e in node.events[mark:] if e.get("id") in ids]
    check("the thief's forks at 2 and 3 (below and at the limit; the node never held the originals) are refused, none shown",
          counter(stats, "revoked_refused") >= before + 2 and shown == [], (counter(stats, "revoked_refused") - before, shown))
    rows = await found(node, "zqxforkword")
    check("/search finds neither fork", rows == [], rows)
    await link.close()


async def broken_chain(node):
    """The thief's fork at 2 reached the node first (and was shown: nothing
    was revoked yet); the genuine 3 then does not link and is kept as a
    fork, so the device's chain has a gap here for good. The revocation
    naming the genuine 3 depends on it, so it is never delivered; it is
    taken when stored, and the fork leaves every answer."""
    account, device = Identity(), Identity()
    link, _ = await linked(node, account, b"owner")
    public, _ = box_keypair()
    claim, _ = make_envelope(device, 12, certificate(account, device, 1, public, b"tablet"), room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    after_claim = (device.sequence, device.last_id)
    fork, fork_id = make_envelope(device, 1, b"forged zqxbrokenword")
    device.sequence, device.last_id = after_claim
    make_envelope(device, 1, b"genuine two")
    genuine3, genuine3_id = make_envelope(device, 1, b"genuine three")
    mark = len(node.events)
    await link.send(envelopes_message([claim, fork]))
    shown = await node.wait(lambda e: e["type"] == "message" and e.get("id") == fork_id.hex(), since=mark)
    check("before any revocation, the thief's fork at 2 is shown (nothing says otherwise yet)", shown is not None, "not shown")
    before = counter(await node.stats(), "forks_detected")
    await link.send(envelopes_message([genuine3]))
    await link.barrier()
    revocation, _ = make_envelope(account, 13, device.public + struct.pack(">Q", 3) + genuine3_id, room=ACCOUNTS_ID, key=ACCOUNTS_KEY,
                                  dependencies=[(device.public, 3)])
    await link.send(envelopes_message([revocation]))
    revoked = await node.wait(lambda e: e["type"] == "device_revoked" and e.get("device") == device.public.hex(), since=mark)
    check("a revocation whose dependencies can never be delivered here (the genuine 3 does not link to the fork) is taken "
          "when stored", revoked is not None and revoked.get("last") == 3, (revoked, counter(await node.stats(), "forks_detected") - before))
    rows = await found(node, "zqxbrokenword")
    check("/search no longer finds the fork", rows == [], rows)
    rows = await listed(node, {fork_id.hex()})
    check("/history no longer lists it", rows == [], rows)
    rows = await listed(node, {genuine3_id.hex()})
    check("the genuine 3, refused as not linking when it came, is on the named chain: stored and listed now",
          len(rows) == 1, rows)
    await link.close()


async def past_limit_everywhere(node, stolen_id):
    """The revoked device's post past its limit is in no answer of the node,
    nor of a fresh node that links to it afterwards and catches up."""
    rows = await found(node, "stolen")
    check("/search on the node does not find the revoked device's post past its limit", rows == [], rows)
    rows = await listed(node, {stolen_id})
    check("/history on the node (the API's history in --json) does not list it", rows == [], rows)
    fresh = Node(node.peernode)
    await fresh.start("--no-discovery", "--peer", f"ws://127.0.0.1:{node.port}")
    try:
        revoked = await fresh.wait(lambda e: e["type"] == "device_revoked", timeout=60)
        stats = await fresh.counters_reach({"revoked_refused": 1}, timeout=60)
        check("a fresh node linked afterwards catches up: it holds the revocation, then the post past the limit (refused)",
              revoked is not None and counter(stats, "revoked_refused") >= 1, fresh.events[-3:])
        shown = [e for e in fresh.events if e.get("id") == stolen_id]
        check("the fresh node never shows the post past the limit", shown == [], shown)
        rows = await found(fresh, "stolen")
        check("/search on the fresh node does not find it", rows == [], rows)
        rows = await listed(fresh, {stolen_id})
        check("/history on the fresh node does not list it", rows == [], rows)
    finally:
        await fresh.stop()
