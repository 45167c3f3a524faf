#!/usr/bin/env python3
"""A peer written from docs/PROTOCOL.md alone, against a real node.

It shares no code with the node: the link (§10) is Python `websockets`
and `noiseprotocol` (outside_link.py), envelopes (§4, §5), gossip messages
(§11) and datagrams (§12) are built by hand with hashlib, `cryptography`
and libsodium through ctypes (outside_wire.py), and what the document
says is refused is in outside_hostile.py. Where these files and the node
disagree, the document is what is wrong or unclear, and is fixed.

It starts `peernode --json` itself (alice, with `--peer` to our listener
and discovery on a loopback group of its own), then:
  dialled: the node dials us for --peer: the versions it offers, `keep`;
  discovery: reads the node's announcements (§12), has a query answered,
           announces a listener that the node then dials, and sends
           datagrams each check must drop, reading the counts;
  chat:    links with a nick claim, joins the overlay, pushes a text, an
           edit, a tombstone and a typing notice, and reads alice's post as
           a push and again by `request`, checking every signature, id,
           chain link and body; reads alice's receipt for our text (§13)
           and sends one for her post;
  tree:    §11 "Tree push": a pruned author's post comes as an ihave, a
           graft brings it in full again, the node's own always in full;
  chains:  §4 "Chains vouch": version-4 runs taken on the signature at
           their top, a signature swapped by a peer refused;
  handshakes: another network key, nick claims too long or with the
           separator dot, the unknown-author cap (§10, §11);
  hostile: on links of fresh identities, every malformed or over-limit
           message the document says is refused, and checks the close code;
           then the limits that drop instead of close (hop count,
           membership rate, repeated join, made-up shuffle entries, the
           invalid-envelope limit at 16 and one past it);
  and at the end that the first link still carries alice's posts.

Prints "ok NAME (T s)" per check, "FAIL NAME WHY (T s)" on a failure, "ALL OK" at the
end when every check passed; exits 1 otherwise.
usage: outside_peer.py PEERNODE
"""
import asyncio
import os
import struct
import sys
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from checks import check, run_checks
from outside_hostile import counter, handshakes, hostile
from outside_link import Dialled, Link, Multicast, Node, cpu_has_aes
from outside_wire import (GROUP, PRESENCE_CONTEXT, Identity, datagram, entries, envelopes_message, make_envelope, open_body, overlay,
                          presence_beacon, read_batch, read_entries, read_envelope, read_presence, request_message, typing_notice, varint)

def batch_of(author):
    """A want(): the envelopes of `author` in a type-3 message, parsed."""
    def want(message):
        if message[0] != 3:
            return None
        found = [(hops, read_envelope(e)) for hops, e in read_batch(message)]
        return [x for x in found if x[1]["author"] == author] or None
    return want


async def chat(node):
    """The whole life of a link, as a well-behaved peer."""
    me = Identity()
    link = await Link(me).open(node.port, aesgcm=True)
    check("link version 10 agreed in the WebSocket handshake", link.version == 10, link.version)
    cipher = "AESGCM" if cpu_has_aes() else "ChaChaPoly"
    check(f"offered AES-GCM first, the node answers {cipher} (this CPU {'has' if cpu_has_aes() else 'lacks'} AES), and the link runs it",
          link.cipher == cipher, link.cipher)
    up = await node.wait(lambda e: e["type"] == "peer_up" and e["id"] == me.public.hex())
    _, rows = await node.peers()
    row = next((r for r in rows if r["id"] == me.public.hex()), {})
    check("/peers names the link's version and cipher", row.get("link_version") == 10 and row.get("cipher") == cipher, row)
    check("a peer of the newest version is not said to be older", not any(e["type"] == "older_peer" and e["id"] == me.public.hex()
                                                                          for e in node.events), "older_peer")
    check("the node's binding names its identity", link.remote == node.id, link.remote.hex())
    check("the node's nick claim is alice", link.remote_nick == b"alice", link.remote_nick)
    up = await node.wait(lambda e: e["type"] == "peer_up" and e["id"] == me.public.hex())
    check("peer_up names us by our claimed nick", up is not None and up.get("nick") == "outsider", up)
    await link.send(overlay(1, struct.pack(">H", 0)))  # join, listening nowhere
    await link.send(b"\x01" + entries([]))
    first = await link.until(lambda m: m if m[0] in (1, 5) else None)
    check("the node's first clock is a full clock (type 1)", first is not None and first[0] == 1, first and first[:1].hex())

    text, text_id = make_envelope(me, 1, b"hello from outside")
    await link.send(envelopes_message([text]))
    shown = await node.wait(lambda e: e["type"] == "message" and e["author"] == me.public.hex())
    check("our text is shown", shown is not None and shown.get("text") == "hello from outside"
          and shown.get("id") == text_id.hex() and shown.get("room") == "#general" and shown.get("seq") == 1, shown)
    stored = await link.until(lambda m: m[0] == 7 and (me.public, 1) in read_entries(m, 1)[0])
    check("the node answers `stored` naming our sequence 1", stored, "no type 7")

    mark = len(node.events)
    node.send("hi outsider")
    pushed = await link.until(batch_of(node.id))
    opened = [(hops, open_body(e["body"], node.id)) for hops, e in pushed or []]
    check("the node's post comes pushed, signed, hops 0, its body opens with #general's key",
          (0, (1, b"hi outsider")) in opened, opened)
    await link.send(request_message([(node.id, 1, 1000)]))
    answer = await link.until(batch_of(node.id))
    chain = [e for _, e in answer or []]
    sequences = [e["sequence"] for e in chain]
    linked_up = all(b["previous"] == a["id"] for a, b in zip(chain, chain[1:])) and chain and chain[0]["previous"] == bytes(32)
    check("a request brings the node's whole chain, in order, each `previous` the id before it",
          sequences == list(range(1, len(chain) + 1)) and linked_up
          and open_body(chain[-1]["body"], node.id) == (1, b"hi outsider"), sequences)

    # §13: the node's receipt for our text, and ours for its post.
    def receipts(batch):
        out = []
        for _, e in batch or []:
            opened = open_body(e["body"], node.id)
            if opened and opened[0] == 6 and len(opened[1]) >= 2 and len(opened[1]) == 2 + 40 * opened[1][1]:
                body = opened[1]
                out.append((body[0], [(body[2 + 40 * i:34 + 40 * i], struct.unpack(">Q", body[34 + 40 * i:42 + 40 * i])[0])
                                      for i in range(body[1])]))
        return out
    def names_our_text(found):
        return any(state == 1 and (me.public, 1) in marks for state, marks in found)
    # Receipts go every 2 s: one posted already is in the node's chain; one
    # posted later is pushed to us, as everything the node signs.
    await link.send(request_message([(node.id, 1, 1000)]))
    found = receipts(await link.until(batch_of(node.id)))
    if not names_our_text(found):
        found = await link.until(lambda m: (lambda r: r if names_our_text(r) else None)(receipts(batch_of(node.id)(m))), timeout=30) or []
    check("the node's delivered receipt (kind 6) names our sequence 1", any(state == 1 and (me.public, 1) in marks
                                                                            for state, marks in found), found)
    hi = chain[-1]
    receipt, _ = make_envelope(me, 6, bytes([1, 1]) + node.id + struct.pack(">Q", hi["sequence"]))
    await link.send(envelopes_message([receipt]))
    told = await node.wait(lambda e: e["type"] == "receipt" and e.get("id") == hi["id"].hex() and e.get("by") == me.public.hex()
                           and e.get("state") == "delivered", since=mark)
    check("our receipt for the node's post becomes its receipt event", told is not None, "no receipt event")

    reference = me.public + struct.pack(">Q", 1) + text_id
    edit, _ = make_envelope(me, 9, reference + b"hello, edited")
    await link.send(envelopes_message([edit]))
    edited = await node.wait(lambda e: e["type"] == "edit" and e.get("original") == text_id.hex(), since=mark)
    check("our edit is shown", edited is not None and edited.get("text") == "hello, edited", edited)
    tombstone, _ = make_envelope(me, 8, b"", erase=(1, 2))
    await link.send(envelopes_message([tombstone]))
    deleted = await node.wait(lambda e: e["type"] == "delete" and e.get("id") == text_id.hex(), since=mark)
    check("our tombstone erases the text", deleted is not None, "no delete event")
    await link.send(request_message([(me.public, 1, 3)]))
    ours = await link.until(batch_of(me.public))
    forms = {e["sequence"]: e["form"] for _, e in ours or []}
    check("the node serves the erased text and edit pruned (form 1), the tombstone whole",
          forms == {1: 1, 2: 1, 3: 0}, forms)

    await link.send(typing_notice(me))
    typing = await node.wait(lambda e: e["type"] == "typing" and e.get("id") == me.public.hex(), since=mark)
    check("our typing notice is shown", typing is not None and typing.get("room") == "#general", typing)
    return me, link


async def tree(node, link):
    """§11 "Tree push" on the chat link: an author we prune comes as ids
    (ihave) at the next tick, a graft brings it in full again, and the
    node's own posts stay in full whatever we prune."""
    x = Identity()
    source = await Link(Identity(), nick=None).open(node.port)
    await source.send(overlay(8, struct.pack(">H", 0)))  # keep

    def push_from_x(text):
        envelope, _ = make_envelope(x, 1, text.encode())
        return source.send(envelopes_message([envelope]))

    def full_from_x(message):
        return batch_of(x.public)(message)

    await push_from_x("one")
    first = await link.until(full_from_x)
    check("another author's post is pushed to us in full, one hop on", first is not None and first[0][0] == 1, first)
    await link.send(b"\x0a" + varint(2) + b"".join(sorted([x.public, node.id])))  # prune x and the node itself
    await link.barrier()
    await push_from_x("two")
    node.send("my own stay whole")
    seen = {"full_x": False, "ihave_x": None, "own_full": False}

    def watch(message):
        if message[0] == 3:
            for _, e in [(h, read_envelope(b)) for h, b in read_batch(message)]:
                if e["author"] == x.public:
                    seen["full_x"] = True
                if e["author"] == node.id and open_body(e["body"], node.id) == (1, b"my own stay whole"):
                    seen["own_full"] = True
        if message[0] == 9:
            named = dict(read_entries(message, 1)[0])
            if x.public in named:
                seen["ihave_x"] = named[x.public]
        return seen["ihave_x"] is not None and seen["own_full"]

    await link.until(watch, timeout=5)
    check("pruned: the author's next post comes as an ihave naming its sequence (2), not in full",
          seen["ihave_x"] == 2 and not seen["full_x"], seen)
    check("the node's own post still comes in full: a prune naming the node is ignored", seen["own_full"], seen)
    await link.send(b"\x0b" + varint(1) + x.public)  # graft
    await link.barrier()
    await push_from_x("three")
    again = await link.until(full_from_x, timeout=5)
    check("grafted: the author's next post comes in full again", again is not None and again[0][1]["sequence"] == 3, again)
    await source.close()


async def older(node):
    """A link that speaks only version 4 (§10): the node's version-4
    envelopes are held back from it and counted, and no typing notice
    (type 12) goes on it; nor its envelopes on a link of version 9."""
    old = Identity()
    link = await Link(old, nick=None).open(node.port, versions=(4, 3, 2, 1))
    check("offered 4 down to 1, the node answers peernode.4", link.version == 4, link.version)
    said = await node.wait(lambda e: e["type"] == "older_peer" and e["id"] == old.public.hex())
    check("the node says the peer runs an older version (older_peer, link_version 4, newest 10)",
          said is not None and said.get("link_version") == 4 and said.get("newest") == 10, said)
    await link.send(overlay(8, struct.pack(">H", 0)))  # keep
    before = counter(await node.stats(), "envelopes_too_new_for_link")
    node.send("/typing")
    node.send("not for version 4")
    too_new = await link.until(lambda m: m if m[0] == 12 or batch_of(node.id)(m) else None, timeout=3)
    check("nothing of the node's version 4, and no typing notice, on a version-4 link", too_new is None, too_new)
    held = counter(await node.stats(), "envelopes_too_new_for_link") - before
    check("what was held back is counted (envelopes_too_new_for_link)", held >= 1, held)
    await link.close()
    nine = Identity()
    link = await Link(nine, nick=None).open(node.port, versions=(9, 8, 7, 6, 5, 4, 3, 2, 1))
    said = await node.wait(lambda e: e["type"] == "older_peer" and e["id"] == nine.public.hex())
    check("and of a version-9 link (older_peer, link_version 9)", said is not None and said.get("link_version") == 9, said)
    await link.send(overlay(8, struct.pack(">H", 0)))  # keep
    node.send("not for version 9")
    too_new = await link.until(batch_of(node.id), timeout=3)
    check("nothing of the node's version 4 on a version-9 link", link.version == 9 and too_new is None, (link.version, too_new))
    await link.close()


async def chains(node, link):
    """§4 "Chains vouch": a version-4 envelope is valid on its own signature
    or when the author's next envelope, valid, names its id (which covers
    the signature). Pushed on our chat link, for three fresh authors."""
    def shown_texts(author, since):
        return sorted(e.get("text") for e in node.events[since:] if e["type"] == "message" and e.get("author") == author.public.hex())

    async def shown(author, since, texts):
        return await node.wait(lambda e: shown_texts(author, since) == sorted(texts) or None, since=since, timeout=10)

    # An author that signs over a head whose signature is not one: taken with the envelope that names it.
    v, mark = Identity(), len(node.events)
    garbled, _ = make_envelope(v, 1, b"v one", version=4, signature=b"\x5a" * 64)
    two, _ = make_envelope(v, 1, b"v two", version=4)
    three, _ = make_envelope(v, 1, b"v three", version=4)
    await link.send(envelopes_message([garbled, two, three]))
    await shown(v, mark, ["v one", "v two", "v three"])
    check("a run of version 4 whose first signature does not verify, named by the next, valid: all three shown",
          shown_texts(v, mark) == ["v one", "v three", "v two"], shown_texts(v, mark))

    # The same alone: refused (the link stays); with the envelope that vouches for it, taken.
    w, mark = Identity(), len(node.events)
    before = counter(await node.stats(), "invalid_envelope")
    garbled, _ = make_envelope(w, 1, b"w one", version=4, signature=b"\x5a" * 64)
    two, _ = make_envelope(w, 1, b"w two", version=4)
    await link.send(envelopes_message([garbled]))
    stats = await node.counters_reach({"invalid_envelope": before + 1})
    check("that envelope alone is refused, counted invalid_envelope, the link kept",
          counter(stats, "invalid_envelope") == before + 1 and await link.barrier() and not shown_texts(w, mark),
          (counter(stats, "invalid_envelope") - before, shown_texts(w, mark)))
    await link.send(envelopes_message([garbled, two]))
    await shown(w, mark, ["w one", "w two"])
    check("sent again with the next, which names it: both shown", shown_texts(w, mark) == ["w one", "w two"], shown_texts(w, mark))

    # A peer that swaps a signature in an author's run: that one refused, the one below it taken.
    u, mark = Identity(), len(node.events)
    before = counter(await node.stats(), "invalid_envelope")
    one, _ = make_envelope(u, 1, b"u one", version=4)
    two, _ = make_envelope(u, 1, b"u two", version=4)
    three, _ = make_envelope(u, 1, b"u three", version=4)
    swapped = swap_signature(two)
    await link.send(envelopes_message([one, swapped, three]))
    stats = await node.counters_reach({"invalid_envelope": before + 1})
    await link.barrier()
    check("a signature swapped by a peer in a run: that envelope refused (invalid_envelope), the one below it shown",
          counter(stats, "invalid_envelope") == before + 1 and shown_texts(u, mark) == ["u one"],
          (counter(stats, "invalid_envelope") - before, shown_texts(u, mark)))
    await link.send(envelopes_message([two]))
    await shown(u, mark, ["u one", "u two", "u three"])
    check("the genuine one sent after it: it and the one it held back are shown",
          shown_texts(u, mark) == ["u one", "u three", "u two"], shown_texts(u, mark))


def swap_signature(envelope):
    """`envelope` (version 3 or 4, with its body) with its 64 signature bytes replaced."""
    e = read_envelope(envelope)
    at = envelope.index(e["signature"])
    return envelope[:at] + b"\x5a" * 64 + envelope[at + 64:]


async def presence(node):
    """A link of version 9 (§10, §11 "Presence"): the node sends its own
    beacon when the link comes up, signed as the document says; ours is
    shown as a presence event; the same beacon again is dropped and counted."""
    me = Identity()
    link = await Link(me, nick=None).open(node.port, versions=(9, 8, 7, 6, 5, 4, 3, 2, 1))
    check("offered 9 down to 1, the node answers peernode.9", link.version == 9, link.version)
    await link.send(overlay(8, struct.pack(">H", 0)))  # keep
    theirs = await link.until(lambda m: m if m[:1] == b"\x11" else None)
    fields = read_presence(theirs) if theirs else {}
    key = Ed25519PublicKey.from_public_bytes(node.id)
    try:
        key.verify(fields.get("signature", b""), PRESENCE_CONTEXT + fields.get("signed", b""))
        signed = True
    except Exception:
        signed = False
    check("the node's own beacon comes at link-up: its device, online, 180 s, signed as §11 says",
          theirs is not None and fields["device"] == node.id and fields["state"] == 0 and fields["lifetime"] == 180
          and fields["rest"] == 0 and signed, fields)
    mark = len(node.events)
    beacon = presence_beacon(me, state=1, reason="at lunch".encode())
    await link.send(beacon)
    shown = await node.wait(lambda e: e["type"] == "presence" and e.get("id") == me.public.hex(), since=mark)
    check("our beacon is shown: away, at lunch", shown is not None and shown.get("state") == "away" and shown.get("reason") == "at lunch", shown)
    before = counter(await node.stats(), "presence_repeated")
    await link.send(beacon)
    stats = await node.counters_reach({"presence_repeated": before + 1})
    check("the same beacon again is dropped and counted (presence_repeated)", counter(stats, "presence_repeated") == before + 1, stats.get("presence_repeated"))
    await link.close()


async def dialled(node, listener):
    """The node dials our listener for --peer."""
    link = await asyncio.wait_for(listener.links.get(), 30)
    aes = ["peernode.10.aesgcm"] if cpu_has_aes() else []
    check(f"the node dials path /peernode/1, offering {'peernode.10.aesgcm, ' if aes else ''}peernode.10 down to peernode.1",
          listener.path == "/peernode/1" and listener.offered == aes + [f"peernode.{v}" for v in (10, 9, 8, 7, 6, 5, 4, 3, 2, 1)],
          (listener.path, listener.offered))
    check("the listener answered peernode.6: the link runs ChaCha20-Poly1305", link.version == 6 and link.cipher == "ChaChaPoly",
          (link.version, link.cipher))
    check("the dialling node binds its identity", link.remote == node.id, link.remote.hex())
    keep = await link.until(lambda m: m if m[:2] == b"\x08\x08" else None)
    check("a --peer link: the node sends `keep` with its listening port",
          keep is not None and len(keep) == 4 and struct.unpack(">H", keep[2:])[0] == node.port, keep)
    up = await node.wait(lambda e: e["type"] == "peer_up" and e["id"] == listener.who.public.hex())
    check("peer_up names the listener by its claimed nick", up is not None and up.get("nick") == "listener", up)


async def linking(node, group):
    """§15 "Finding the adder": while `/device add` waits, the node sends
    type-3 datagrams signed by its account key naming its TCP port; a
    type-3 datagram from anyone else is no peer to dial."""
    mark = len(node.events)
    node.send("/device add")
    code = await node.wait(lambda e: e["type"] == "device_code", since=mark)
    beacon = await group.heard(lambda d: d[0] == 3 and d[1] == node.id, timeout=5)
    check("/device add: linking datagrams (type 3, one a second) signed by the account, naming the code's TCP port",
          code is not None and beacon is not None and beacon[2] == code["port"], (code, beacon))
    lure, found = Dialled(), Dialled()
    await lure.start()
    await found.start()
    group.send(datagram(3, lure.who, lure.port))
    group.send(datagram(1, found.who, found.port))
    # One socket reads them in order: once the announced peer is dialled, the linking one was read first.
    link = await asyncio.wait_for(found.links.get(), 15)
    check("a linking datagram from someone else is no peer: the node dials the announcement after it, not it",
          link.remote == node.id and lure.links.empty(), lure.links.qsize())
    await link.close()


async def discovery(node, group):
    announced = await group.heard(lambda d: d[0] == 1 and d[1] == node.id)
    check("the node announces itself: 152 bytes that open with the discovery key, its id and port, signed",
          announced is not None and announced[2] == node.port, announced)
    asker = Identity()
    start = time.monotonic()
    group.send(datagram(2, asker, 0))
    answer = await group.heard(lambda d: d[0] == 1 and d[1] == node.id, timeout=3)
    check("a query is answered by an announcement (within 2 s: 0-100 ms, and a busy machine)",
          answer is not None and time.monotonic() - start < 2.0,
          time.monotonic() - start)
    found = Dialled()
    await found.start()
    group.send(datagram(1, found.who, found.port))
    link = await asyncio.wait_for(found.links.get(), 15)
    check("a peer announced by datagram is dialled at its address and port, as the identity announced",
          link.remote == node.id, link.remote.hex())
    ask = await link.until(lambda m: m if m[:2] in (b"\x08\x01", b"\x08\x03") else None)
    check("and asked into the overlay (join or neighbor)", ask is not None, ask)
    await link.close()

    await linking(node, group)

    before = await node.stats()
    good = datagram(1, Identity(), 9)
    tampered = good[:-1] + bytes([good[-1] ^ 1])
    stale = datagram(1, Identity(), 9, timestamp=int(time.time() * 1000) - 60_000)
    later = Identity()
    replay = datagram(1, later, 9)
    wrong_length = datagram(1, Identity(), 9) + b"\x00"
    for d in (tampered, stale, replay, replay, wrong_length, b"PNDA\x01" + bytes(508), b"NOPE\x01" + bytes(147)):
        group.send(d)
    # One socket reads them in order: the last one counted, all are.
    after = await node.counters_reach({"discovery_drop_not_peernode": counter(before, "discovery_drop_not_peernode") + 1})

    def dropped(reason):
        name = "discovery_drop_" + reason
        return counter(after, name) - counter(before, name)
    check("a changed byte: foreign_network", dropped("foreign_network") == 1, dropped("foreign_network"))
    check("60 s old: stale", dropped("stale") == 1, dropped("stale"))
    check("the same datagram twice: replayed once", dropped("replayed") == 1, dropped("replayed"))
    check("153 bytes: malformed or truncated", dropped("malformed") + dropped("truncated") == 1,
          (dropped("malformed"), dropped("truncated")))
    check("513 bytes: oversized", dropped("oversized") == 1, dropped("oversized"))
    check("another magic: not_peernode", dropped("not_peernode") == 1, dropped("not_peernode"))


async def main():
    listener = Dialled()
    await listener.start()
    group = Multicast()
    node = Node(os.path.abspath(sys.argv[1]))
    await node.start("--peer", f"ws://127.0.0.1:{listener.port}", "--multicast", f"{GROUP[0]}:{GROUP[1]}",
                     "--multicast-if", "127.0.0.1")
    try:
        await dialled(node, listener)
        await discovery(node, group)
        me, link = await chat(node)
        await tree(node, link)
        await chains(node, link)
        await older(node)
        await presence(node)
        await handshakes(node)
        await hostile(node)
        node.send("still here")
        still = await link.until(lambda m: any(open_body(e["body"], node.id) == (1, b"still here")
                                               for _, e in batch_of(node.id)(m) or []))
        check("after all that, the first link still gets the node's posts", still, "not pushed")
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)


run_checks(main, 240)
