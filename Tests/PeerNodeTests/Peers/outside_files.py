#!/usr/bin/env python3
"""Files (docs/PROTOCOL.md §16), from the document alone, against a real node.

The offer (kind 17), the chunks sealed under the file's key with index
nonces, the chunk tree and its proofs, and link messages 13–15 on link
version 7 are built and read here by hand (hashlib, libsodium through
ctypes), as outside_peer.py does the rest of the document:
  fetch:   the node offers a file; we read its offer, ask for every chunk,
           check each proof against the root, open each chunk and the whole
           against the offer's hash; a want for a root it does not hold is
           answered none; a want past the file's end closes the link (1008);
  serve:   we offer a file; the node's /get asks us for it and gets it,
           whole and checked; a second file served with a bad chunk is
           caught (file_bad_chunk) and we are asked nothing more for it;
  named:   on a version-8 link the node's ask names the offer (type 16:
           its author and sequence); once a tombstone erases the offer,
           the node answers none for the file (its chunks are gone);
  older:   a file message on a version-6 link, and an ask naming its
           offer (type 16) on a version-7 link, are dropped and counted
           (file_message_dropped), the link kept.
Prints "ok NAME" per check and "ALL OK" at the end; exits 1 otherwise.
usage: outside_files.py PEERNODE
"""
import asyncio
import os
import struct
import sys
import tempfile

from checks import check, run_checks, scratch
from outside_link import Node
from outside_sealed import linked as sealed_linked
from outside_wire import (GENERAL_ID, GENERAL_KEY, Identity, blake2b256, envelopes_message, make_envelope,
                          open_body, read_batch, read_envelope, read_varint, varint, xchacha_open, xchacha_seal)

CHUNK = 64000
NONCE = b"peernode/1 file\x00"


def nonce(i):
    return NONCE + struct.pack(">Q", i)


def leaf(i, sealed):
    return blake2b256(b"\x00" + struct.pack(">Q", i) + sealed)


def node_hash(left, right):
    return blake2b256(b"\x01" + left + right)


def levels(leaves):
    out = [leaves]
    while len(out[-1]) > 1:
        top = out[-1]
        out.append([node_hash(top[i], top[i + 1]) if i + 1 < len(top) else top[i] for i in range(0, len(top), 2)])
    return out


def proof(i, tree):
    out = []
    for level in tree[:-1]:
        if i ^ 1 < len(level):
            out.append(level[i ^ 1])
        i //= 2
    return out


def verify(leaf_hash, i, chunks, hashes, root):
    """§16: fold the proof in, bottom up, leaving out levels where the node was carried up alone."""
    h, width, used = leaf_hash, chunks, 0
    if i >= chunks:
        return False
    while width > 1:
        if i ^ 1 < width:
            if used >= len(hashes):
                return False
            h = node_hash(h, hashes[used]) if i % 2 == 0 else node_hash(hashes[used], h)
            used += 1
        i //= 2
        width = (width + 1) // 2
    return used == len(hashes) and h == root


def read_offer(content):
    """The offer's layout (§16), field by field."""
    assert content[0] == 1, "offer version"
    size = struct.unpack(">Q", content[1:9])[0]
    root, plain, key = content[9:41], content[41:73], content[73:105]
    at = 105
    name = content[at + 1:at + 1 + content[at]].decode()
    at += 1 + content[at]
    kind = content[at + 1:at + 1 + content[at]].decode()
    at += 1 + content[at]
    return {"size": size, "root": root, "plain": plain, "key": key, "name": name, "type": kind, "caption": content[at:].decode()}


def make_offer(size, root, plain, key, name, kind=b"", caption=b""):
    return b"\x01" + struct.pack(">Q", size) + root + plain + key + bytes([len(name)]) + name + bytes([len(kind)]) + kind + caption


def want(root, size, indices):
    return b"\x0d" + root + varint(size) + varint(len(indices)) + b"".join(varint(i) for i in indices)


def read_chunk(message):
    root = message[1:33]
    index, at = read_varint(message, 33)
    count = message[at]
    at += 1
    hashes = [message[at + 32 * k:at + 32 * (k + 1)] for k in range(count)]
    at += 32 * count
    length, at = read_varint(message, at)
    return root, index, hashes, message[at:at + length]


def chunk_message(root, index, hashes, sealed):
    return b"\x0e" + root + varint(index) + bytes([len(hashes)]) + b"".join(hashes) + varint(len(sealed)) + sealed


def read_want(message):
    """A want (13, or 16 naming its offer): root, the file's size, the indices."""
    size, at = read_varint(message, 33)
    if message[0] == 16:
        at += 32
        _, at = read_varint(message, at)
    count, at = read_varint(message, at)
    out = []
    for _ in range(count):
        value, at = read_varint(message, at)
        out.append(value)
    return message[1:33], size, out


def read_indices(message):
    count, at = read_varint(message, 33)
    out = []
    for _ in range(count):
        value, at = read_varint(message, at)
        out.append(value)
    return message[1:33], out


def seal_file(plaintext):
    key = os.urandom(32)
    sealed = [xchacha_seal(key, nonce(i), plaintext[i * CHUNK:(i + 1) * CHUNK], b"") for i in range((len(plaintext) + CHUNK - 1) // CHUNK)]
    tree = levels([leaf(i, s) for i, s in enumerate(sealed)])
    return key, sealed, tree


async def offered_and_got(node, me, link, data, name, into):
    """Offers `data` as `name` from `me` on `link` (an offer made by hand) and has the
    node /get it into `into`: (sealed chunks, tree, root, the node's first want),
    or None when the node does not show the offer."""
    key, sealed, tree = seal_file(data)
    root = tree[-1][0]
    envelope, _ = make_envelope(me, 17, make_offer(len(data), root, blake2b256(data), key, name.encode()))
    await link.send(envelopes_message([envelope]))
    shown = await node.wait(lambda e: e["type"] == "file" and e.get("name") == name, 20)
    if not shown:
        return None
    node.send(f"/get {shown['n']} {into}")
    first = await link.until(lambda m: m if m[0] == 13 and m[1:33] == root else None, 20)
    return sealed, tree, root, first


async def linked(node, versions=(7, 6, 5, 4, 3, 2, 1)):
    """A new identity's link, kept (pushes come to us), its clock sent."""
    me = Identity()
    link, _ = await sealed_linked(node, me, b"outsider", versions)
    return me, link


async def fetch(node, work):
    me, link = await linked(node, versions=(10, 9, 8, 7, 6, 5, 4, 3, 2, 1))
    check("link version 10 agreed (the node's own posts are of version 4)", link.version == 10, link.version)
    data = os.urandom(150_000) + b"MARKER" * 1000
    path = os.path.join(work, "report.bin")
    with open(path, "wb") as f:
        f.write(data)
    node.send(f"/send {path} the figures")

    def offered(message):
        if message[0] != 3:
            return None
        for _, raw in read_batch(message):
            e = read_envelope(raw)
            body = e["author"] == node.id and e["form"] == 0 and open_body(e["body"], node.id, GENERAL_ID, GENERAL_KEY)
            if body and body[0] == 17:
                return read_offer(body[1])
        return None
    offer = await link.until(offered, 30)
    check("the node's offer is pushed as kind 17 and reads as §16 lays it out", offer is not None and offer["size"] == len(data)
          and offer["name"] == "report.bin" and offer["caption"] == "the figures" and offer["type"] == "", offer)
    if not offer:
        return
    check("the offer's hash is BLAKE2b-256 of the file", offer["plain"] == blake2b256(data))
    chunks = (offer["size"] + CHUNK - 1) // CHUNK
    await link.send(want(offer["root"], offer["size"], list(range(chunks))))
    got = {}

    def take(message):
        if message[0] == 14:
            root, index, hashes, sealed = read_chunk(message)
            got[index] = (root, hashes, sealed)
        return len(got) == chunks or None
    await link.until(take, 30)
    check(f"every chunk ({chunks}) comes as a type-14 message", len(got) == chunks, sorted(got))
    proofs = all(verify(leaf(i, s), i, chunks, h, offer["root"]) and r == offer["root"] for i, (r, h, s) in got.items())
    check("each chunk's proof leads to the offer's root", proofs)
    plain = b"".join(xchacha_open(offer["key"], nonce(i), got[i][2], b"") or b"?" for i in range(chunks))
    check("each chunk opens with the offer's key at its own index, and the whole is the file", plain == data)
    check("sealed chunks are 64 000 bytes and their tag, the last the rest", all(len(got[i][2]) == 64_016 for i in range(chunks - 1))
          and len(got[chunks - 1][2]) == len(data) - (chunks - 1) * CHUNK + 16)
    other = os.urandom(32)
    await link.send(want(other, 1000, [0]))
    none = await link.until(lambda m: m if m[0] == 15 else None, 10)
    check("a want for a root the node does not hold is answered none (type 15) with its indices",
          none is not None and read_indices(none) == (other, [0]), none and none.hex())
    await link.send(want(offer["root"], offer["size"], [chunks]))
    code, reason = await link.close_code()
    check("a want past the file's end closes the link (1008)", code == 1008, (code, reason))


async def serve(node, work):
    me, link = await linked(node)
    data = os.urandom(100_000)
    key, sealed, tree = seal_file(data)
    root = tree[-1][0]
    content = make_offer(len(data), root, blake2b256(data), key, b"from-outside.bin", b"", b"made by hand")
    envelope, _ = make_envelope(me, 17, content)
    await link.send(envelopes_message([envelope]))
    shown = await node.wait(lambda e: e["type"] == "file" and e.get("author") == me.public.hex(), 20)
    check("the node shows our offer as a file, with its name, size and hash", shown is not None and shown.get("name") == "from-outside.bin"
          and shown.get("size") == len(data) and shown.get("hash") == blake2b256(data).hex() and shown.get("root") == root.hex(), shown)
    if not shown:
        return
    into = tempfile.mkdtemp(dir=work)
    node.send(f"/get {shown['n']} {into}")
    asked, check_size = set(), False
    while len(asked) < len(sealed):
        message = await link.until(lambda m: m if m[0] == 13 else None, 20)
        if message is None:
            break
        got_root, size_read, indices = read_want(message)
        check_size = size_read == len(data) and got_root == root
        for i in indices:
            asked.add(i)
            await link.send(chunk_message(root, i, proof(i, tree), sealed[i]))
    check("the node's want names our root and the file's size", check_size, "no want")
    done = await node.wait(lambda e: e["type"] in ("file_done", "file_failed") and e.get("root") == root.hex(), 30)
    saved = done and done.get("path") and open(done["path"], "rb").read()
    check("the node fetched our file, checked it and saved it whole", done is not None and done["type"] == "file_done" and saved == data, done)

    # A second file, its first chunk served wrong.
    data = os.urandom(130_000)
    key, sealed, tree = seal_file(data)
    root = tree[-1][0]
    envelope, _ = make_envelope(me, 17, make_offer(len(data), root, blake2b256(data), key, b"second.bin"))
    await link.send(envelopes_message([envelope]))
    shown = await node.wait(lambda e: e["type"] == "file" and e.get("name") == "second.bin", 20)
    node.send(f"/get {shown['n']} {into}")
    message = await link.until(lambda m: m if m[0] == 13 else None, 20)
    bad = bytearray(sealed[0])
    bad[5] ^= 0xFF
    await link.send(chunk_message(root, 0, proof(0, tree), bytes(bad)))
    stats = await node.counters_reach({"file_bad_chunk": 1})
    check("a chunk that does not verify is counted (file_bad_chunk)", int(stats.get("file_bad_chunk", 0)) >= 1, stats)
    again = await link.until(lambda m: m if m[0] == 13 and m[1:33] == root else None, 3)
    check("and its peer is asked nothing more for that file", again is None, again and again.hex())
    await link.close()


def read_offer_named(message):
    """A want naming its offer (16): the offer's author and sequence."""
    _, at = read_varint(message, 33)
    sequence, _ = read_varint(message, at + 32)
    return message[at:at + 32], sequence


async def named(node, work):
    me, link = await linked(node, versions=(8, 7, 6, 5, 4, 3, 2, 1))
    check("link version 8 agreed", link.version == 8, link.version)
    data = os.urandom(70_000)
    key, sealed, tree = seal_file(data)
    root = tree[-1][0]
    envelope, _ = make_envelope(me, 17, make_offer(len(data), root, blake2b256(data), key, b"named.bin"))
    offer_sequence = me.sequence
    await link.send(envelopes_message([envelope]))
    shown = await node.wait(lambda e: e["type"] == "file" and e.get("name") == "named.bin", 20)
    if not shown:
        check("the node shows our third offer", False, "not shown")
        return
    node.send(f"/get {shown['n']} {tempfile.mkdtemp(dir=work)}")
    asked = set()
    first = None
    while len(asked) < len(sealed):
        message = await link.until(lambda m: m if m[0] in (13, 16) and m[1:33] == root else None, 20)
        if message is None:
            break
        first = first or message
        for i in read_want(message)[2]:
            asked.add(i)
            await link.send(chunk_message(root, i, proof(i, tree), sealed[i]))
    check("on a version-8 link the node's ask is type 16 and names the offer's author and sequence",
          first is not None and first[0] == 16 and read_offer_named(first) == (me.public, offer_sequence), first and first[:80].hex())
    done = await node.wait(lambda e: e["type"] in ("file_done", "file_failed") and e.get("root") == root.hex(), 30)
    check("the file fetched by type-16 asks arrives whole", done is not None and done["type"] == "file_done", done)
    await link.send(want(root, len(data), [0]))
    served = await link.until(lambda m: m if m[0] in (14, 15) and m[1:33] == root else None, 10)
    check("the node serves the file it fetched", served is not None and served[0] == 14, served and served[:1].hex())
    tombstone, _ = make_envelope(me, 8, b"", erase=(offer_sequence,))
    await link.send(envelopes_message([tombstone]))
    await node.wait(lambda e: e["type"] == "delete", 20)
    await link.send(want(root, len(data), [0]))
    answer = await link.until(lambda m: m if m[0] in (14, 15) and m[1:33] == root else None, 10)
    check("once a tombstone erases the offer, the node answers none for its file", answer is not None and answer[0] == 15,
          answer and answer[:1].hex())
    await link.close()


async def older(node):
    me, link = await linked(node, versions=(6, 5, 4, 3, 2, 1))
    check("a version-6 link is agreed when we offer 6 at most", link.version == 6, link.version)
    before = int((await node.stats()).get("file_message_dropped", 0))
    await link.send(want(os.urandom(32), 1000, [0]))
    kept = await link.barrier()
    after = int((await node.stats()).get("file_message_dropped", 0))
    check("a file message on a version-6 link is dropped and counted, the link kept", kept and after == before + 1, (kept, before, after))
    await link.close()
    me, link = await linked(node, versions=(7, 6, 5, 4, 3, 2, 1))
    check("a version-7 link is agreed when we offer 7 at most", link.version == 7, link.version)
    before = int((await node.stats()).get("file_message_dropped", 0))
    root = os.urandom(32)
    await link.send(b"\x10" + root + varint(1000) + me.public + varint(1) + varint(1) + varint(0))
    kept = await link.barrier()
    after = int((await node.stats()).get("file_message_dropped", 0))
    check("an ask naming its offer (type 16) on a version-7 link is dropped and counted, the link kept",
          kept and after == before + 1, (kept, before, after))
    await link.close()


async def main():
    node = Node(os.path.abspath(sys.argv[1]))
    await node.start("--no-discovery")
    work = scratch("outside-files-")
    try:
        await fetch(node, work)
        await serve(node, work)
        await named(node, work)
        await older(node)
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)


if __name__ == "__main__":
    run_checks(main, 180)
