#!/usr/bin/env python3
"""A peer written from docs/PROTOCOL.md alone, against a real node.

It shares no code with the node: the link (§10) is Python `websockets`
and `noiseprotocol`, envelopes (§4, §5) are built with hashlib,
`cryptography` and libsodium through ctypes, and gossip messages (§11) by
hand. Where this file and the node disagree, the document is what is wrong
or unclear, and is fixed.

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
  handshakes: another network key, nick claims too long or with the
           separator dot, the unknown-author cap (§10, §11);
  hostile: on links of fresh identities, every malformed or over-limit
           message the document says is refused, and checks the close code;
           then the limits that drop instead of close (hop count,
           membership rate, repeated join, made-up shuffle entries, the
           invalid-envelope limit at 16 and one past it);
  and at the end that the first link still carries alice's posts.

Prints "ok NAME" per check, "FAIL NAME: why" on a failure, "ALL OK" at the
end when every check passed; exits 1 otherwise.
usage: outside_peer.py PEERNODE
"""
import asyncio
import ctypes
import ctypes.util
import hashlib
import json
import os
import random
import socket
import struct
import sys
import tempfile
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from noise.connection import Keypair, NoiseConnection
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

PEERNODE = os.path.abspath(sys.argv[1])
failures = []


def check(name, condition, detail=""):
    if condition:
        print("ok", name, flush=True)
    else:
        failures.append(name)
        print(f"FAIL {name}: {detail}", flush=True)
    return condition


# ---- §2 key derivations, §3 contexts --------------------------------------

def blake2b256(data, key=b""):
    return hashlib.blake2b(data, digest_size=32, key=key).digest()


NETWORK_KEY = blake2b256(b"peernode/1 network-key\x00lan")


def derive(label, data):
    return blake2b256(label + b"\x00" + data, key=NETWORK_KEY)


GENERAL_ID = derive(b"peernode/1 room-id", b"#general")
GENERAL_KEY = derive(b"peernode/1 room-key", b"#general")
ENVELOPE_CONTEXT = b"peernode/1 envelope\x00"
HANDSHAKE_CONTEXT = b"peernode/1 handshake\x00"
TYPING_CONTEXT = b"peernode/1 typing\x00"
BUCKETS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 65538]

sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert sodium.sodium_init() >= 0


def xchacha_seal(key, nonce, plaintext, ad):
    out = ctypes.create_string_buffer(len(plaintext) + 16)
    out_len = ctypes.c_ulonglong()
    rc = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
        out, ctypes.byref(out_len), plaintext, ctypes.c_ulonglong(len(plaintext)), ad, ctypes.c_ulonglong(len(ad)),
        None, nonce, key)
    assert rc == 0
    return out.raw[:out_len.value]


def xchacha_open(key, nonce, ciphertext, ad):
    out = ctypes.create_string_buffer(max(1, len(ciphertext)))
    out_len = ctypes.c_ulonglong()
    rc = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        out, ctypes.byref(out_len), None, ciphertext, ctypes.c_ulonglong(len(ciphertext)), ad,
        ctypes.c_ulonglong(len(ad)), nonce, key)
    return out.raw[:out_len.value] if rc == 0 else None


class Identity:
    """An Ed25519 identity, and its X25519 static key for Noise (§10)."""

    def __init__(self):
        self.seed = os.urandom(32)
        self.ed = Ed25519PrivateKey.from_private_bytes(self.seed)
        self.public = self.ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        x = bytearray(hashlib.sha512(self.seed).digest()[:32])  # RFC 8032 §5.1.5
        x[0] &= 248
        x[31] &= 127
        x[31] |= 64
        self.x_secret = bytes(x)
        self.sequence = 0
        self.last_id = bytes(32)

    def sign(self, context, data):
        return self.ed.sign(context + data)


P = 2**255 - 19


def ed_to_x25519_public(pk):
    y = int.from_bytes(pk, "little") & ((1 << 255) - 1)
    return ((1 + y) * pow(1 - y, P - 2, P) % P).to_bytes(32, "little")


# ---- §5 bodies, §4 envelopes ---------------------------------------------

def seal_body(kind, content, author, room=GENERAL_ID, key=GENERAL_KEY):
    plain = bytes([kind]) + content
    size = next(b for b in BUCKETS if b > len(plain))
    padded = plain + b"\x80" + bytes(size - len(plain) - 1)
    nonce = os.urandom(24)
    ad = b"peernode/2 body\x00" + author + room
    return nonce + xchacha_seal(key, nonce, padded, ad)


def open_body(body, author, room=GENERAL_ID, key=GENERAL_KEY):
    ad = b"peernode/2 body\x00" + author + room
    plain = xchacha_open(key, body[:24], body[24:], ad)
    if plain is None:
        return None
    end = plain.rstrip(b"\x00")
    if not end.endswith(b"\x80"):
        return None
    return plain[0], end[:-1][1:]


def make_envelope(who, kind, content, erase=(), timestamp=None):
    """A version-3 envelope of `who`'s next sequence; returns (bytes, id)."""
    who.sequence += 1
    body = seal_body(kind, content, who.public)
    head = bytes([3]) + who.public + struct.pack(">Q", who.sequence) + who.last_id
    head += struct.pack(">H", 0)  # no dependencies
    head += struct.pack(">Q", timestamp if timestamp is not None else int(time.time() * 1000)) + GENERAL_ID
    head += bytes([len(erase)]) + b"".join(struct.pack(">Q", s) for s in erase)
    head += struct.pack(">I", len(body)) + blake2b256(body)
    message_id = blake2b256(head)
    signed = head + who.sign(ENVELOPE_CONTEXT, head)
    who.last_id = message_id
    return signed + b"\x00" + body, message_id


def read_envelope(data):
    """Parses a version-3 envelope field by field (§4); checks its body
    hash and signature. Returns a dict, or raises ValueError."""
    if data[0] != 3:
        raise ValueError(f"version {data[0]}")
    author, (sequence,), previous = data[1:33], struct.unpack(">Q", data[33:41]), data[41:73]
    (n,) = struct.unpack(">H", data[73:75])
    at = 75 + 40 * n
    (timestamp,) = struct.unpack(">Q", data[at:at + 8])
    room = data[at + 8:at + 40]
    e = data[at + 40]
    erased = [struct.unpack(">Q", data[at + 41 + 8 * i:at + 49 + 8 * i])[0] for i in range(e)]
    at += 41 + 8 * e
    (body_length,) = struct.unpack(">I", data[at:at + 4])
    body_hash = data[at + 4:at + 36]
    head_end = at + 36
    signature = data[head_end:head_end + 64]
    form = data[head_end + 64]
    rest = data[head_end + 65:]
    Ed25519PublicKey.from_public_bytes(author).verify(signature, ENVELOPE_CONTEXT + data[:head_end])
    if form == 0:
        if len(rest) != body_length or blake2b256(rest) != body_hash:
            raise ValueError("body length or hash")
        if body_length - 40 not in BUCKETS:
            raise ValueError("body not padded")
    return {"author": author, "sequence": sequence, "previous": previous, "timestamp": timestamp, "room": room,
            "erased": erased, "form": form, "body": rest, "id": blake2b256(data[:head_end])}


# ---- §11 gossip messages -------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data, at):
    value, shift = 0, 0
    for i in range(10):
        byte = data[at + i]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at + i + 1
    raise ValueError("varint longer than 10 bytes")


def entries(pairs):
    return varint(len(pairs)) + b"".join(a + varint(s) for a, s in sorted(pairs))


def read_entries(data, at):
    count, at = read_varint(data, at)
    out = []
    for _ in range(count):
        author = data[at:at + 32]
        sequence, at = read_varint(data, at + 32)
        out.append((author, sequence))
    return out, at


def envelopes_message(items, hops=0):
    return b"\x03" + varint(len(items)) + b"".join(bytes([hops]) + varint(len(e)) + e for e in items)


def read_batch(message):
    count, at = read_varint(message, 1)
    out = []
    for _ in range(count):
        hops = message[at]
        length, at = read_varint(message, at + 1)
        out.append((hops, message[at:at + length]))
        at += length
    return out


def request_message(ranges):
    return b"\x04" + varint(len(ranges)) + b"".join(a + varint(f) + varint(c) for a, f, c in ranges)


def overlay(kind, fields=b""):
    return bytes([8, kind]) + fields


def peer_entry(identity_key, port, ip=(127, 0, 0, 1)):
    return identity_key + bytes(ip) + struct.pack(">H", port)


def typing_notice(who, room=GENERAL_ID, forwards=0, when=None):
    signed = room + who.public + struct.pack(">Q", when if when is not None else int(time.time() * 1000))
    return b"\x0c" + signed + bytes([forwards]) + who.sign(TYPING_CONTEXT, signed)


# ---- §10 links -----------------------------------------------------------

class Link:
    """A link dialled to the node: WebSocket, Noise with the identity
    binding, chunks."""

    CHUNK = 65518

    def __init__(self, who, nick=b"outsider", network=NETWORK_KEY):
        self.who, self.nick, self.network = who, nick, network

    async def open(self, port, versions=(6, 5, 4, 3, 2, 1)):
        """Dials the node and shakes hands as the initiator."""
        ws = await connect(f"ws://127.0.0.1:{port}/peernode/1",
                           subprotocols=[f"peernode.{v}" for v in versions], max_size=2**17, ping_interval=None)
        return await self.handshake(ws, initiator=True)

    async def handshake(self, ws, initiator):
        """Noise XXpsk0 (§10), the identity binding (and our nick claim) in
        messages 2 and 3; checks the node's binding."""
        self.ws = ws
        self.version = int(ws.subprotocol.split(".")[1])
        noise = NoiseConnection.from_name(b"Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b")
        noise.set_psks(self.network)
        noise.set_prologue(f"peernode/{self.version}".encode())
        noise.set_keypair_from_private_bytes(Keypair.STATIC, self.who.x_secret)
        noise.set_as_initiator() if initiator else noise.set_as_responder()
        noise.start_handshake()
        handshake = noise.noise_protocol.handshake_state
        state = handshake.symmetric_state
        seen = {}
        encrypt, decrypt = state.encrypt_and_hash, state.decrypt_and_hash

        def encrypt_and_hash(plaintext):
            if plaintext == b"BIND":  # over h as it is when the payload is encrypted
                plaintext = self.who.public + self.who.sign(HANDSHAKE_CONTEXT, bytes(state.h))
                if self.nick:
                    plaintext += bytes([len(self.nick)]) + self.nick
            return encrypt(plaintext)

        def decrypt_and_hash(ciphertext):
            seen["h"] = bytes(state.h)
            return decrypt(ciphertext)

        state.encrypt_and_hash, state.decrypt_and_hash = encrypt_and_hash, decrypt_and_hash
        if initiator:
            await ws.send(noise.write_message(b""))
            binding = bytes(noise.read_message(await ws.recv()))
        else:
            first = await ws.recv()
            if len(first) != 48:
                raise ValueError(f"handshake message 1 is {len(first)} bytes")
            noise.read_message(first)
            await ws.send(noise.write_message(b"BIND"))
            binding = bytes(noise.read_message(await ws.recv()))
        h = seen["h"]
        self.remote = binding[:32]
        if ed_to_x25519_public(self.remote) != handshake.rs.public_bytes:
            raise ValueError("the node's identity does not match its static key")
        Ed25519PublicKey.from_public_bytes(self.remote).verify(binding[32:96], HANDSHAKE_CONTEXT + h)
        self.remote_nick = binding[97:97 + binding[96]] if len(binding) > 96 else b""
        if len(binding) > 96 and len(binding) != 97 + binding[96]:
            raise ValueError("the nick claim's length does not match the payload")
        if initiator:
            await ws.send(noise.write_message(b"BIND"))
        self.noise = noise
        self.queue = asyncio.Queue()
        self.reader = asyncio.create_task(self.read())
        return self

    async def send(self, message):
        parts = [message[i:i + self.CHUNK] for i in range(0, len(message), self.CHUNK)] or [b""]
        for i, part in enumerate(parts):
            await self.send_raw_plaintext(bytes([1 if i < len(parts) - 1 else 0]) + part)

    async def send_raw_plaintext(self, plaintext):
        await self.ws.send(self.noise.encrypt(plaintext))

    async def read(self):
        """Reads every frame as it comes (so pings are answered and the node
        never sees us stop reading), joins chunks into messages."""
        message = b""
        try:
            async for frame in self.ws:
                chunk = self.noise.decrypt(frame)
                if chunk[0] not in (0, 1):
                    raise ValueError(f"chunk flags {chunk[0]}")
                message += chunk[1:]
                if chunk[0] == 0:
                    await self.queue.put(message)
                    message = b""
        except ConnectionClosed:
            pass
        finally:
            await self.queue.put(None)

    async def receive(self, timeout=15):
        """The next whole gossip message; None once the link is closed."""
        return await asyncio.wait_for(self.queue.get(), timeout)

    async def until(self, want, timeout=20):
        """Reads messages until `want(message)` returns something."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await self.receive(left)
            except (asyncio.TimeoutError, TimeoutError):
                break
            if message is None:
                return None
            found = want(message)
            if found:
                return found
        return None

    async def close_code(self, timeout=10):
        """Waits for the node to close the link: (code, reason), or (None, "still open")."""
        try:
            await asyncio.wait_for(asyncio.shield(self.reader), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return None, "still open"
        return self.ws.close_code, self.ws.close_reason

    async def close(self):
        await self.ws.close()


# ---- the node ------------------------------------------------------------

class Node:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="outside-peer-")
        self.events = []

    async def start(self, *extra):
        self.process = await asyncio.create_subprocess_exec(
            PEERNODE, "--data-dir", self.dir, "--json", "--listen", "127.0.0.1:0", "--nick", "alice", *extra,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self.reader = asyncio.create_task(self.read())
        ready = await self.wait(lambda e: e["type"] == "ready", 60)
        self.id = bytes.fromhex(ready["id"])
        self.port = int(ready["listen"].rsplit(":", 1)[1])

    async def read(self):
        while line := await self.process.stdout.readline():
            self.events.append(json.loads(line))

    async def wait(self, match, timeout=20, since=0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.events[since:]:
                if match(e):
                    return e
            await asyncio.sleep(0.05)
        return None

    def send(self, line):
        self.process.stdin.write(line.encode() + b"\n")

    async def stats(self):
        mark = len(self.events)
        self.send("/stats")
        return await self.wait(lambda e: e["type"] == "stats", since=mark) or {}

    async def peers(self):
        mark = len(self.events)
        self.send("/peers")
        head = await self.wait(lambda e: e["type"] == "peers", since=mark)
        await asyncio.sleep(0.3)
        return head or {}, [e for e in self.events[mark:] if e["type"] == "peer"]

    async def stop(self):
        self.process.stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), 30)
        except asyncio.TimeoutError:
            self.process.kill()
            return None


def counter(stats, name):
    return int(stats.get(name, 0))


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
    link = await Link(me).open(node.port)
    check("link version 6 agreed in the WebSocket handshake", link.version == 6, link.version)
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
    found = []
    deadline = time.monotonic() + 30  # receipts go every 2 s; a loaded machine is slower
    while time.monotonic() < deadline:
        await link.send(request_message([(node.id, 1, 1000)]))
        got = await link.until(batch_of(node.id))
        found = receipts(got)
        if any(state == 1 and (me.public, 1) in marks for state, marks in found):
            break
        await asyncio.sleep(0.5)
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
    await asyncio.sleep(0.5)
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
    await asyncio.sleep(0.5)
    await push_from_x("three")
    again = await link.until(full_from_x, timeout=5)
    check("grafted: the author's next post comes in full again", again is not None and again[0][1]["sequence"] == 3, again)
    await source.close()


async def older(node):
    """A link that speaks only version 4 (§10): the node's version-3
    envelopes are held back from it and counted, and no typing notice
    (type 12) goes on it."""
    link = await Link(Identity(), nick=None).open(node.port, versions=(4, 3, 2, 1))
    check("offered 4 down to 1, the node answers peernode.4", link.version == 4, link.version)
    await link.send(overlay(8, struct.pack(">H", 0)))  # keep
    before = counter(await node.stats(), "envelopes_too_new_for_link")
    node.send("/typing")
    node.send("not for version 4")
    too_new = await link.until(lambda m: m if m[0] == 12 or batch_of(node.id)(m) else None, timeout=3)
    check("nothing of the node's version 3, and no typing notice, on a version-4 link", too_new is None, too_new)
    held = counter(await node.stats(), "envelopes_too_new_for_link") - before
    check("what was held back is counted (envelopes_too_new_for_link)", held >= 1, held)
    await link.close()


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
    after = await node.stats()
    for name in ("wrong_network_key", "malformed_handshake"):
        check(f"counted {name}", counter(after, name) - counter(before, name) == 1, counter(after, name) - counter(before, name))
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
    await asyncio.sleep(0.5)
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
    await asyncio.sleep(1)
    after = await node.stats()
    limited = counter(after, "overlay_limited") - counter(before, "overlay_limited")
    check("40 membership messages at once: about 8 dropped (overlay_limited)", 6 <= limited <= 8, limited)
    joins = counter(after, "overlay_joins_ignored") - counter(before, "overlay_joins_ignored")
    check("a second join within 60 s is ignored (overlay_joins_ignored)", joins == 1, joins)
    closed, _ = await link.close_code(timeout=1)
    check("a peer over the membership rate stays linked", closed is None, closed)

    # Typing notices: 8 per link per second; node-wide 32 passed on at once
    # (then 32 a second), the rest shown but not passed on.
    links = [await Link(Identity(), nick=None).open(node.port) for _ in range(7)]
    before = await node.stats()
    for link in links:
        for n in [typing_notice(Identity()) for _ in range(9)]:
            await link.send(n)
    await asyncio.sleep(1)
    after = await node.stats()
    moved = {name: counter(after, name) - counter(before, name) for name in ("typing_dropped", "typing_not_passed_on")}
    # A link's 9 may straddle a second of the node's clock: then its 9th is taken.
    check("9 typing notices on each of 7 links: the 9th of each dropped (8 per link per second)", 5 <= moved["typing_dropped"] <= 7, moved)
    check("of the 56 taken, some shown but not passed on (32 at once node-wide, 24 past it if all came at once)",
          1 <= moved["typing_not_passed_on"] <= 24, moved)
    for link in links:
        await link.close()

    # forwardJoin (it makes the node dial whoever it names) only from a neighbour.
    before = counter(await node.stats(), "overlay_forward_join_dropped")
    link = await Link(Identity(), nick=None).open(node.port)
    await link.send(overlay(2, one(9) + b"\x00"))
    await asyncio.sleep(0.3)
    dropped = counter(await node.stats(), "overlay_forward_join_dropped") - before
    check("a forwardJoin from a link that is not a neighbour is dropped (overlay_forward_join_dropped)", dropped == 1, dropped)
    await link.close()

    # Made-up peers in shuffles: the reserve never holds more than 36.
    for _ in range(6):
        link = await Link(Identity(), nick=None).open(node.port)
        await link.send(overlay(6, bytes([8]) + b"".join(one(port) for port in range(1, 9))))
    head, rows = await node.peers()
    reserve = [r for r in rows if r.get("view") == "reserve"]
    check("48 made-up peers shuffled in: the reserve holds at most 36", head.get("reserve", 99) <= 36 and len(reserve) <= 36,
          (head, len(reserve)))
    linked = [r for r in rows if r.get("state") == "linked" and r.get("view") == "neighbour"]
    check("and neighbours stay within --max-links", len(linked) <= int(head.get("max_links", 6)), len(linked))


class Dialled:
    """Our listener, for the node's `--peer`: answers its WebSocket
    handshake with `version`, shakes hands as the Noise responder."""

    def __init__(self, version=6):
        self.version, self.who = version, Identity()
        self.links = asyncio.Queue()

    async def start(self):
        def choose(ws, offered):
            self.offered = list(offered)
            return f"peernode.{self.version}"

        self.server = await serve(self.handle, "127.0.0.1", 0, select_subprotocol=choose, max_size=2**17, ping_interval=None)
        self.port = self.server.sockets[0].getsockname()[1]

    async def handle(self, ws):
        self.path = ws.request.path
        link = await Link(self.who, nick=b"listener").handshake(ws, initiator=False)
        await self.links.put(link)
        await link.reader


async def dialled(node, listener):
    """The node dials our listener for --peer."""
    link = await asyncio.wait_for(listener.links.get(), 30)
    check("the node dials path /peernode/1, offering peernode.6 down to peernode.1",
          listener.path == "/peernode/1" and listener.offered == [f"peernode.{v}" for v in (6, 5, 4, 3, 2, 1)],
          (listener.path, listener.offered))
    check("the dialling node binds its identity", link.remote == node.id, link.remote.hex())
    keep = await link.until(lambda m: m if m[:2] == b"\x08\x08" else None)
    check("a --peer link: the node sends `keep` with its listening port",
          keep is not None and len(keep) == 4 and struct.unpack(">H", keep[2:])[0] == node.port, keep)
    up = await node.wait(lambda e: e["type"] == "peer_up" and e["id"] == listener.who.public.hex())
    check("peer_up names the listener by its claimed nick", up is not None and up.get("nick") == "listener", up)


# ---- §12 discovery ---------------------------------------------------------

DISCOVERY_KEY = derive(b"peernode/1 discovery", b"")
GROUP = ("239.255.73.73", random.randint(20000, 60000))


def datagram(kind, who, port, timestamp=None):
    """A discovery datagram (§12): always 152 bytes."""
    timestamp = timestamp if timestamp is not None else int(time.time() * 1000)
    fields = bytes([kind]) + who.public + struct.pack(">H", port) + struct.pack(">Q", timestamp)
    body = fields + who.sign(b"peernode/1 announcement\x00", b"PNDA\x01" + fields)
    nonce = os.urandom(24)
    return b"PNDA\x01" + nonce + xchacha_seal(DISCOVERY_KEY, nonce, body, b"PNDA\x01")


def read_datagram(data):
    """(type, node id, port, timestamp) of a datagram that opens and verifies; None otherwise."""
    if len(data) != 152 or data[:5] != b"PNDA\x01":
        return None
    body = xchacha_open(DISCOVERY_KEY, data[5:29], data[29:], b"PNDA\x01")
    if body is None or len(body) != 107:
        return None
    kind, node, (port, timestamp), signature = body[0], body[1:33], struct.unpack(">HQ", body[33:43]), body[43:]
    Ed25519PublicKey.from_public_bytes(node).verify(signature, b"peernode/1 announcement\x00PNDA\x01" + body[:43])
    return kind, node, port, timestamp


class Multicast:
    """The group on loopback: a socket that hears it and one that sends to it."""

    def __init__(self):
        self.hear = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        self.hear.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.hear.bind(("", GROUP[1]))
        membership = socket.inet_aton(GROUP[0]) + socket.inet_aton("127.0.0.1")
        self.hear.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        self.hear.setblocking(False)
        self.say = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        self.say.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        self.say.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        self.say.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)

    def send(self, data):
        self.say.sendto(data, GROUP)

    async def heard(self, want, timeout=10):
        """The first datagram for which want(read_datagram(d)) holds."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(loop.sock_recv(self.hear, 1024), left)
            except (asyncio.TimeoutError, TimeoutError):
                return None
            try:
                read = read_datagram(data)
            except Exception:
                read = None
            if read and want(read):
                return read
        return None


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

    before = await node.stats()
    good = datagram(1, Identity(), 9)
    tampered = good[:-1] + bytes([good[-1] ^ 1])
    stale = datagram(1, Identity(), 9, timestamp=int(time.time() * 1000) - 60_000)
    later = Identity()
    replay = datagram(1, later, 9)
    wrong_length = datagram(1, Identity(), 9) + b"\x00"
    for d in (tampered, stale, replay, replay, wrong_length, b"PNDA\x01" + bytes(508), b"NOPE\x01" + bytes(147)):
        group.send(d)
    await asyncio.sleep(1)
    after = await node.stats()

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
    node = Node()
    await node.start("--peer", f"ws://127.0.0.1:{listener.port}", "--multicast", f"{GROUP[0]}:{GROUP[1]}",
                     "--multicast-if", "127.0.0.1")
    try:
        await dialled(node, listener)
        await discovery(node, group)
        me, link = await chat(node)
        await tree(node, link)
        await older(node)
        await handshakes(node)
        await hostile(node)
        node.send("still here")
        still = await link.until(lambda m: any(open_body(e["body"], node.id) == (1, b"still here")
                                               for _, e in batch_of(node.id)(m) or []))
        check("after all that, the first link still gets the node's posts", still, "not pushed")
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)
    print("ALL OK" if not failures else f"{len(failures)} FAILED: {', '.join(failures)}", flush=True)


async def bounded():
    try:
        await asyncio.wait_for(main(), 240)
    except (asyncio.TimeoutError, TimeoutError):
        print("FAIL the whole run took more than 240 s", flush=True)
        failures.append("time")


asyncio.run(bounded())
sys.exit(1 if failures else 0)
