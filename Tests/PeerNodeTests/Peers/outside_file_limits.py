#!/usr/bin/env python3
"""The bounds of the file messages (docs/PROTOCOL.md §11's table, types
13–16, and §16 "On the link"), from the document alone, against a real node:
each at its limit (the link kept, and answered where the document says it
is) and one past it (the message refused, the link closed with 1008 and
counted `bad_gossip_message`), with the encodings the document refuses
besides (a non-canonical varint, trailing bytes, indices out of order).
A file held whole answers none past its end, whatever size a want names.
Offers (§16 "The offer"): the largest that reads, and one past each bound
shown as an offer that does not read, which /get refuses. Then a chunk nobody asked for: §16 says a receiver takes a chunk only for
a file it is fetching and a chunk it asked that peer for, so one sent
unasked is not written and is asked for again.
Prints "ok NAME" per check and "ALL OK" at the end; exits 1 otherwise.
usage: outside_file_limits.py PEERNODE
"""
import os
import sys
import tempfile

from checks import check, run_checks, scratch
from outside_files import chunk_message, linked, make_offer, offered_and_got, proof, read_indices, read_want, want
from outside_link import Node
from outside_wire import envelopes_message, make_envelope, varint

MAXIMUM_SIZE = 4_294_967_296       # FileOffer.maximumSize, 4 GiB
MAXIMUM_CHUNKS = 67_109            # FileTree.maximumChunks
MAXIMUM_INDICES = 64               # FileMessage.maximumIndices
MAXIMUM_PROOF = 17                 # FileTree.maximumProof
MAXIMUM_SEALED = 64_016            # a whole chunk and its tag
MAXIMUM_SEQUENCE = 1 << 48         # Envelope.maximumSequence


def indices_part(indices):
    return varint(len(indices)) + b"".join(varint(i) for i in indices)


def none_message(root, indices):
    return b"\x0f" + root + indices_part(indices)


def named_want(root, size, author, sequence, indices):
    return b"\x10" + root + varint(size) + author + varint(sequence) + indices_part(indices)


def raw_chunk(root, index, hashes, sealed, length=None):
    """A chunk message whose length field may say other than the bytes that follow."""
    return (b"\x0e" + root + varint(index) + bytes([len(hashes)]) + b"".join(hashes)
            + varint(len(sealed) if length is None else length) + sealed)


async def kept(node, name, message, versions=(8, 7, 6, 5, 4, 3, 2, 1), answer=None):
    """`message` at its limit: the link stays (a barrier comes back) and, when
    `answer` is given, the node's reply is the one it takes."""
    _, link = await linked(node, versions)
    await link.send(message)
    if answer:
        got = await link.until(lambda m: m if answer(m) is not None else None, 10)
        check(name, got is not None and answer(got), got and got[:80].hex())
    else:
        check(name, await link.barrier(10), "the link closed or did not answer")
    await link.close()


async def refused(node, name, message, versions=(8, 7, 6, 5, 4, 3, 2, 1)):
    """`message` one past a limit: the link closed with 1008, counted bad_gossip_message."""
    before = int((await node.stats()).get("bad_gossip_message", 0))
    _, link = await linked(node, versions)
    await link.send(message)
    code, reason = await link.close_code()
    stats = await node.counters_reach({"bad_gossip_message": before + 1}, 10)
    check(name, code == 1008 and int(stats.get("bad_gossip_message", 0)) == before + 1,
          (code, reason, before, stats.get("bad_gossip_message")))


def none_for(root, indices):
    """The node's none (15) for exactly these indices of `root`."""
    return lambda m: m[0] == 15 and m[1:33] == root and read_indices(m) == (root, indices) or None


async def wants(node):
    root = os.urandom(32)
    sixty_four = list(range(MAXIMUM_INDICES))
    await kept(node, "a want (13) of 64 indices for a root the node lacks is answered none for all 64",
               want(root, MAXIMUM_INDICES * 64_000, sixty_four), answer=none_for(root, sixty_four))
    await refused(node, "a want of 65 indices closes the link (1008, bad_gossip_message)",
                  want(root, 65 * 64_000, list(range(MAXIMUM_INDICES + 1))))
    await refused(node, "a want of no index closes the link", want(root, 64_000, []))
    await refused(node, "a want naming size 0 closes the link", want(root, 0, [0]))
    last = MAXIMUM_CHUNKS - 1
    await kept(node, "a want naming 4 GiB and its last chunk (67 108) is answered none",
               want(root, MAXIMUM_SIZE, [last]), answer=none_for(root, [last]))
    await refused(node, "a want naming 4 GiB and one byte closes the link", want(root, MAXIMUM_SIZE + 1, [0]))
    await refused(node, "a want naming chunk 67 109 of a 4 GiB file (its count) closes the link", want(root, MAXIMUM_SIZE, [MAXIMUM_CHUNKS]))
    await refused(node, "a want whose indices repeat closes the link", want(root, 10 * 64_000, [1, 1]))
    await refused(node, "a want whose indices descend closes the link", want(root, 10 * 64_000, [2, 1]))
    await refused(node, "a want whose size is an overlong varint closes the link",
                  b"\x0d" + root + b"\x81\x00" + indices_part([0]))
    await refused(node, "a want with a byte after its indices closes the link", want(root, 64_000, [0]) + b"\x00")


async def named(node):
    root, author = os.urandom(32), os.urandom(32)
    await kept(node, "a want naming its offer (16) at sequence 2^48 is answered none",
               named_want(root, 64_000, author, MAXIMUM_SEQUENCE, [0]), answer=none_for(root, [0]))
    await refused(node, "a want naming its offer at sequence 2^48 + 1 closes the link",
                  named_want(root, 64_000, author, MAXIMUM_SEQUENCE + 1, [0]))
    await refused(node, "a want naming its offer at sequence 0 closes the link", named_want(root, 64_000, author, 0, [0]))
    await refused(node, "a want naming its offer with 65 indices closes the link",
                  named_want(root, 65 * 64_000, author, 1, list(range(MAXIMUM_INDICES + 1))))


async def chunks(node):
    root, hashes = os.urandom(32), [os.urandom(32) for _ in range(MAXIMUM_PROOF)]
    sealed = os.urandom(MAXIMUM_SEALED)
    await kept(node, "a chunk (14) at index 67 108 with 17 proof hashes and 64 016 bytes, of no file fetched, is dropped, the link kept",
               raw_chunk(root, MAXIMUM_CHUNKS - 1, hashes, sealed))
    await kept(node, "a chunk of 17 sealed bytes (one byte and its tag) is read, the link kept", raw_chunk(root, 0, [], os.urandom(17)))
    await refused(node, "a chunk at index 67 109 closes the link", raw_chunk(root, MAXIMUM_CHUNKS, [], sealed))
    await refused(node, "a chunk with 18 proof hashes closes the link", raw_chunk(root, 0, hashes + [os.urandom(32)], sealed))
    await refused(node, "a chunk of 64 017 sealed bytes closes the link", raw_chunk(root, 0, [], sealed + b"\x00"))
    await refused(node, "a chunk of 16 sealed bytes (a tag and nothing) closes the link", raw_chunk(root, 0, [], os.urandom(16)))
    await refused(node, "a chunk whose length says more than follows closes the link", raw_chunk(root, 0, [], os.urandom(100), length=101))
    await refused(node, "a chunk with a byte after its sealed bytes closes the link", raw_chunk(root, 0, [], os.urandom(100)) + b"\x00")


async def nones(node):
    root = os.urandom(32)
    await kept(node, "a none (15) of 64 indices, the last 67 108, is read, the link kept",
               none_message(root, list(range(MAXIMUM_CHUNKS - MAXIMUM_INDICES, MAXIMUM_CHUNKS))))
    await refused(node, "a none of 65 indices closes the link", none_message(root, list(range(MAXIMUM_INDICES + 1))))
    await refused(node, "a none naming chunk 67 109 closes the link", none_message(root, [MAXIMUM_CHUNKS]))
    await refused(node, "a none of no index closes the link", none_message(root, []))
    await refused(node, "a none whose indices descend closes the link", none_message(root, [3, 2]))


async def offers(node):
    """§16 "The offer": the largest offer that reads, and one past each bound, pushed by us."""
    me, link = await linked(node, (7, 6, 5, 4, 3, 2, 1))
    root, plain, key = os.urandom(32), os.urandom(32), os.urandom(32)
    largest = make_offer(MAXIMUM_SIZE, root, plain, key, b"n" * 255, b"t" * 100, b"c" * 1000)
    envelope, _ = make_envelope(me, 17, largest)
    await link.send(envelopes_message([envelope]))
    shown = await node.wait(lambda e: e["type"] == "file" and e.get("author") == me.public.hex(), 20)
    check("an offer at every bound (4 GiB, a name of 255 bytes, a type of 100, a caption of 1 000) reads: name, size, type and caption as sent",
          shown is not None and shown.get("size") == MAXIMUM_SIZE and shown.get("name") == "n" * 255 and shown.get("media") == "t" * 100
          and shown.get("caption") == "c" * 1000 and shown.get("root") == root.hex(), shown)
    bad = {
        "another version (2)": b"\x02" + largest[1:],
        "size 0": make_offer(0, root, plain, key, b"zero.bin"),
        "size 4 GiB and one byte": make_offer(MAXIMUM_SIZE + 1, root, plain, key, b"big.bin"),
        "an empty name": make_offer(1000, root, plain, key, b""),
        "a type of 101 bytes": make_offer(1000, root, plain, key, b"type.bin", b"t" * 101),
        "a caption of 1 001 bytes": make_offer(1000, root, plain, key, b"caption.bin", b"", b"c" * 1001),
        "a name that is not UTF-8": make_offer(1000, root, plain, key, b"\xff\xfe.bin"),
        "a caption that is not UTF-8": make_offer(1000, root, plain, key, b"ok.bin", b"", b"\xc3"),
        "cut short in its key": make_offer(1000, root, plain, key, b"x.bin")[:90],
        "its name's length past the bytes left": make_offer(1000, root, plain, key, b"x.bin")[:-2],
    }
    for what, content in bad.items():
        mark = len(node.events)
        envelope, _ = make_envelope(me, 17, content)
        await link.send(envelopes_message([envelope]))
        event = await node.wait(lambda e: e["type"] == "file" and e.get("author") == me.public.hex(), 20, since=mark)
        refused_offer = event is not None and "a file offer that does not read" in event.get("text", "") and "root" not in event and "name" not in event
        # It is numbered like any offer (§16), so /get N names it, and is refused.
        refused_offer = refused_offer and "n" in event
        if refused_offer:
            mark = len(node.events)
            node.send(f"/get {event['n']}")
            answer = await node.wait(lambda e: e["type"] in ("error", "file_progress", "file_done", "file_failed"), 10, since=mark)
            refused_offer = answer is not None and answer["type"] == "error"
        check(f"an offer with {what} is shown numbered as one that does not read, and /get of it is refused", refused_offer, (event, node.events[-1]))
    await link.close()


async def held_whole(node, work):
    """§16: a node that holds a file whole answers none for an index past the
    file it holds by that root, whatever size the want names."""
    me, link = await linked(node, (7, 6, 5, 4, 3, 2, 1))
    data = os.urandom(100_000)  # two chunks
    path = os.path.join(work, "held.bin")
    with open(path, "wb") as f:
        f.write(data)
    mark = len(node.events)
    node.send(f"/send {path}")
    offered = await node.wait(lambda e: e["type"] == "file" and e.get("name") == "held.bin", 30, since=mark)
    if not offered:
        check("the node offers a file of its own", False, "not offered")
        return
    root = bytes.fromhex(offered["root"])
    await link.send(want(root, 10 * 64_000, [5]))
    answer = await link.until(lambda m: m if m[0] in (14, 15) and m[1:33] == root else None, 10)
    check("a want naming a larger size, for an index past the file held by that root, is answered none (the link kept)",
          answer is not None and answer[0] == 15 and read_indices(answer) == (root, [5]), answer and answer[:40].hex())
    await link.send(want(root, 10 * 64_000, [1, 5]))
    got = {}

    def take(m):
        if m[1:33] == root and m[0] == 14:
            got["chunk"] = m
        elif m[1:33] == root and m[0] == 15:
            got["none"] = read_indices(m)[1]
        return ("chunk" in got and "none" in got) or None
    await link.until(take, 10)
    check("the same want naming a chunk it holds and one past the file: the chunk sent, none for the other",
          "chunk" in got and got.get("none") == [5], got.keys())
    await link.close()


async def unasked(node, work):
    """A chunk of a file being fetched that the node did not ask us for is not taken."""
    me, link = await linked(node, (7, 6, 5, 4, 3, 2, 1))
    data = os.urandom(20 * 64_000 + 500)  # 21 chunks: more than the 16 asked of one link at once
    got = await offered_and_got(node, me, link, data, "unasked.bin", tempfile.mkdtemp(dir=work))
    if not got:
        check("the node shows our offer of 21 chunks", False, "not shown")
        return
    sealed, tree, root, first = got
    asked = set(read_want(first)[2]) if first else set()
    last = len(sealed) - 1
    check("the node's first ask is for at most 16 chunks, not the last", first is not None and 0 < len(asked) <= 16 and last not in asked, sorted(asked))
    # The last chunk, whole and with its true proof, but not asked for: not taken.
    await link.send(chunk_message(root, last, proof(last, tree), sealed[last]))
    bad_before = int((await node.stats()).get("file_bad_chunk", 0))
    served, served_last_asked = set(), False
    while True:
        for i in sorted(asked):
            await link.send(chunk_message(root, i, proof(i, tree), sealed[i]))
        served |= asked
        if len(served) == len(sealed):
            break
        message = await link.until(lambda m: m if m[0] == 13 and m[1:33] == root else None, 20)
        if message is None:
            break
        asked = set(read_want(message)[2])
        served_last_asked = served_last_asked or last in asked
    check("the chunk sent unasked is asked for all the same (it was not taken)", served_last_asked)
    done = await node.wait(lambda e: e["type"] in ("file_done", "file_failed") and e.get("root") == root.hex(), 30)
    saved = done and done.get("path") and open(done["path"], "rb").read()
    check("and the file arrives whole", done is not None and done["type"] == "file_done" and saved == data, done)
    bad_after = int((await node.stats()).get("file_bad_chunk", 0))
    check("a chunk sent unasked is not counted as a bad chunk (it verifies; it was only not asked for)", bad_after == bad_before,
          (bad_before, bad_after))
    await link.close()


async def main():
    node = Node(os.path.abspath(sys.argv[1]))
    await node.start("--no-discovery")
    work = scratch("outside-file-limits-")
    try:
        await wants(node)
        await named(node)
        await chunks(node)
        await nones(node)
        await offers(node)
        await held_whole(node, work)
        await unasked(node, work)
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)


run_checks(main, 240)
