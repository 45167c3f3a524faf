"""What `outside_peer.py` sends that the document says a node refuses or
drops: bad handshakes, malformed and over-limit messages (each must close
its link with the code §10 and §11 name), and the limits that drop
without closing."""
import os
import struct

from checks import check
from outside_link import Link, cpu_has_aes
from outside_wire import (Identity, blake2b256, entries, envelopes_message, make_envelope, overlay, peer_entry,
                          read_entries, typing_notice, varint)


def counter(stats, name):
    return int(stats.get(name, 0))


async def refused(node, name, message, code=1008, raw=None, text=None):
    """A fresh identity's link sends one bad thing; the node must close it with `code`."""
    link = await Link(Identity(), nick=None).open(node.port)
    if text is not None:
        await link.ws.send(text)
    elif raw is not None:
        await link.send_raw_plaintext(raw)
    else:
        await link.send(message)
    closed, reason = await link.close_code()
    check(f"refused, link closed {code}: {name}", closed == code, f"closed {closed} {reason!r}")


async def handshakes(node):
    """§10: what ends a link during or right after its handshake."""
    before = await node.stats()
    other = blake2b256(b"peernode/1 network-key\x00other")
    try:
        link = await Link(Identity(), network=other).open(node.port)
        refused_early = False
    except Exception:
        refused_early = True
    check("another network key: the handshake fails at message 1", refused_early, "it went on")
    link = await Link(Identity(), nick=b"x" * 33).open(node.port)
    closed, reason = await link.close_code()
    check("a nick claim of 33 bytes ends the link (1008)", closed == 1008, f"{closed} {reason!r}")
    wrong_keys = 1
    if cpu_has_aes():
        try:
            await Link(Identity()).open(node.port, offered=["peernode.10.aesgcm"], cipher="ChaChaPoly")
            refused_early = False
        except Exception:
            refused_early = True
        check("peernode.10.aesgcm agreed but the handshake run with ChaChaPoly: it fails at message 1", refused_early, "it went on")
        wrong_keys += 1
    after = await node.stats()
    for name, n in (("wrong_network_key", wrong_keys), ("malformed_handshake", 1)):
        check(f"counted {name}", counter(after, name) - counter(before, name) == n, counter(after, name) - counter(before, name))
    for offered in (["peernode.9.aesgcm"], ["peernode.10.chachapoly"], ["peernode.11"]):
        try:
            link = await Link(Identity()).open(node.port, offered=offered)
            refused = False
        except Exception:
            refused = True
        check(f"offering only {offered[0]}: refused in the WebSocket handshake, no version agreed", refused, "a link came up")
    # Names match without regard to case, and the answer is the name as offered: a client that
    # compares it with its offer exactly (RFC 7936; this one does) would refuse another spelling.
    try:
        link = await Link(Identity()).open(node.port, offered=["PEERNODE.10"])
        answered = link.ws.subprotocol
        await link.close()
    except Exception as error:
        answered = f"refused: {error}"
    check("PEERNODE.10 offered in capitals: agreed, and answered as offered", answered == "PEERNODE.10", answered)
    odd = Identity()
    link = await Link(odd, nick="bob·k3fq".encode()).open(node.port)
    up = await node.wait(lambda e: e["type"] == "peer_up" and e["id"] == odd.public.hex())
    check("a nick claim with the separator dot is ignored, the link kept", up is not None and up.get("nick") != "bob·k3fq", up)
    await link.close()

    # The unknown-author cap: 4 096 entries taken, one more ignored and counted.
    link = await Link(Identity(), nick=None).open(node.port)
    before = counter(await node.stats(), "clock_entries_ignored")
    made_up = sorted(os.urandom(32) for _ in range(4096))
    await link.send(b"\x01" + entries([(a, 1) for a in made_up]))
    await link.send(b"\x02" + entries([(os.urandom(32), 1)]))
    await link.barrier()
    ignored = counter(await node.stats(), "clock_entries_ignored") - before
    check("4 096 unknown authors declared on a link are taken, the 4 097th ignored (clock_entries_ignored)", ignored == 1, ignored)
    await link.close()


async def hostile(node):
    a, b = os.urandom(32), os.urandom(32)
    low, high = min(a, b), max(a, b)
    one = lambda port: peer_entry(os.urandom(32), port)
    await refused(node, "a text frame", None, code=1003, text="hello")
    await refused(node, "an unknown message type", b"\x0d")
    await refused(node, "chunk flags 2", None, raw=b"\x02\x06")
    await refused(node, "prune authors out of order", b"\x0a" + varint(2) + high + low)
    await refused(node, "graft naming an author twice", b"\x0b" + varint(2) + low + low)
    await refused(node, "a shuffle of 9 entries", overlay(6, bytes([9]) + b"".join(one(7000 + i) for i in range(9))))
    await refused(node, "a peer entry with port 0", overlay(6, bytes([1]) + one(0)))
    await refused(node, "flags 2 in neighborReply", overlay(4, b"\x02"))
    await refused(node, "forwardJoin with ttl 7", overlay(2, one(7000) + b"\x07"))
    await refused(node, "an unknown overlay kind", overlay(9))
    await refused(node, "a join with a trailing byte", overlay(1, b"\x1e\x35\x00"))
    await refused(node, "an overlong varint", b"\x01\x81\x00")
    await refused(node, "a clock entry past 2^48", b"\x01" + varint(1) + a + varint(2**48 + 1))
    await refused(node, "clock entries out of order", b"\x01" + varint(2) + high + varint(1) + low + varint(1))
    await refused(node, "4 097 clock entries", b"\x01" + varint(4097))
    await refused(node, "1 025 envelopes in a batch", b"\x03" + varint(1025))
    await refused(node, "4 097 request ranges", b"\x04" + varint(4097))
    await refused(node, "typing with forwards 2", typing_notice(Identity(), forwards=2))
    await refused(node, "a typing notice one byte short", typing_notice(Identity())[:-1])
    far = Identity()
    far.sequence = 2**48
    envelope, _ = make_envelope(far, 1, b"too far")
    await refused(node, "an envelope at sequence 2^48 + 1", envelopes_message([envelope]))

    # The hop limit: 16 is dropped, 15 is taken.
    at_limit, past_limit = Identity(), Identity()
    link = await Link(Identity(), nick=None).open(node.port)
    e16, _ = make_envelope(past_limit, 1, b"sixteen hops")
    e15, _ = make_envelope(at_limit, 1, b"fifteen hops")
    await link.send(envelopes_message([e16], hops=16))
    await link.send(envelopes_message([e15], hops=15))
    fifteen = await node.wait(lambda e: e["type"] == "message" and e["author"] == at_limit.public.hex())
    sixteen = [e for e in node.events if e["type"] == "message" and e["author"] == past_limit.public.hex()]
    check("hops 15 is taken, hops 16 dropped", fifteen is not None and not sixteen, (fifteen, sixteen))

    # Envelopes failing verification: 16 per link are tolerated, the 17th closes it.
    before = counter(await node.stats(), "invalid_envelope")
    bad = []
    for _ in range(17):
        who = Identity()
        e, _ = make_envelope(who, 1, b"forged")
        signature_at = len(e) - 1 - 296 - 64
        bad.append(e[:signature_at] + bytes([e[signature_at] ^ 1]) + e[signature_at + 1:])
    link = await Link(Identity(), nick=None).open(node.port)
    await link.send(envelopes_message(bad[:16]))
    good_author = link.who
    good, _ = make_envelope(good_author, 1, b"after sixteen forgeries")
    await link.send(envelopes_message([good]))
    alive = await link.until(lambda m: m[0] == 7 and (good_author.public, 1) in read_entries(m, 1)[0])
    check("16 forged envelopes on a link: still linked, the next good one stored", alive, "no `stored`")
    check("the forgeries are counted invalid_envelope", counter(await node.stats(), "invalid_envelope") - before == 16,
          "counted " + str(counter(await node.stats(), "invalid_envelope") - before))
    await link.send(envelopes_message(bad[16:]))
    closed, reason = await link.close_code()
    check("the 17th forged envelope closes the link (1008)", closed == 1008, f"{closed} {reason!r}")

    # Membership messages: 32 at once, then 2/s; the rest dropped, counted.
    before = await node.stats()
    link = await Link(Identity(), nick=None).open(node.port)
    await link.send(overlay(1, struct.pack(">H", 0)))
    await link.send(overlay(1, struct.pack(">H", 0)))
    for _ in range(38):
        await link.send(overlay(6, b"\x00"))
    alive = await link.barrier()
    after = await node.stats()
    limited = counter(after, "overlay_limited") - counter(before, "overlay_limited")
    check("40 membership messages at once: about 8 dropped (overlay_limited)", 6 <= limited <= 8, limited)
    joins = counter(after, "overlay_joins_ignored") - counter(before, "overlay_joins_ignored")
    check("a second join within 60 s is ignored (overlay_joins_ignored)", joins == 1, joins)
    check("a peer over the membership rate stays linked", alive, "its link closed")

    # Typing notices: 8 per link per second; node-wide 32 passed on at once
    # (then 32 a second), each link that brought one lately taking an equal
    # part (32 / 7 here: at least 4 each), the rest shown but not passed on.
    links = [await Link(Identity(), nick=None).open(node.port) for _ in range(7)]
    before = await node.stats()
    for link in links:
        for n in [typing_notice(Identity()) for _ in range(9)]:
            await link.send(n)
    for link in links:
        await link.barrier()
    after = await node.stats()
    moved = {name: counter(after, name) - counter(before, name) for name in ("typing_dropped", "typing_not_passed_on")}
    # A link's 9 may straddle a second of the node's clock: then its 9th is taken.
    check("9 typing notices on each of 7 links: the 9th of each dropped (8 per link per second)", 5 <= moved["typing_dropped"] <= 7, moved)
    check("of the 56 taken, some shown but not passed on (32 at once node-wide, shared by 7 links: at most 56 - 7 x 4)",
          1 <= moved["typing_not_passed_on"] <= 56 - 7 * (32 // 7), moved)
    for link in links:
        await link.close()

    # forwardJoin (it makes the node dial whoever it names) only from a neighbour.
    before = counter(await node.stats(), "overlay_forward_join_dropped")
    link = await Link(Identity(), nick=None).open(node.port)
    await link.send(overlay(2, one(9) + b"\x00"))
    await link.barrier()
    dropped = counter(await node.stats(), "overlay_forward_join_dropped") - before
    check("a forwardJoin from a link that is not a neighbour is dropped (overlay_forward_join_dropped)", dropped == 1, dropped)
    await link.close()

    # Made-up peers in shuffles: the reserve never holds more than 36.
    for _ in range(6):
        link = await Link(Identity(), nick=None).open(node.port)
        await link.send(overlay(6, bytes([8]) + b"".join(one(port) for port in range(1, 9))))
        await link.barrier()
    head, rows = await node.peers()
    reserve = [r for r in rows if r.get("view") == "reserve"]
    check("48 made-up peers shuffled in: the reserve holds at most 36", head.get("reserve", 99) <= 36 and len(reserve) <= 36,
          (head, len(reserve)))
    linked = [r for r in rows if r.get("state") == "linked" and r.get("view") == "neighbour"]
    check("and neighbours stay within --max-links", len(linked) <= int(head.get("max_links", 6)), len(linked))
