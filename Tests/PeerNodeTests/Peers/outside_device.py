"""§15 "Linking a device" live, for outside_rooms.py: we join the node's
account as a new device through `/device add` (CPace from the document:
libsodium's ristretto255 through ctypes, hashlib, hmac), read the grant
field by field, sign our claim, and then follow each other's changes in
the account's own room."""
import asyncio
import ctypes
import hashlib
import hmac
import os
import struct

from checks import check
from outside_keys import ACCOUNTS_ID, ACCOUNTS_KEY, CERTIFICATE_CONTEXT, x25519_base
from outside_sealed import linked, opened_in
from outside_wire import (Identity, blake2b256, derive, envelopes_message, make_envelope, sodium, xchacha_open,
                          xchacha_seal)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

DSI = b"CPaceRistretto255"


def leb128(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lv_cat(*parts):
    return b"".join(leb128(len(p)) + p for p in parts)


def generator(code_digits, sid):
    prs, ci = code_digits, derive(b"peernode/1 device-link", b"")
    zeros = max(0, 128 - 1 - len(lv_cat(prs)) - len(lv_cat(DSI)))
    out = ctypes.create_string_buffer(32)
    sodium.crypto_core_ristretto255_from_hash(out, hashlib.sha512(lv_cat(DSI, prs, bytes(zeros), ci, sid)).digest())
    return out.raw


def scalarmult(scalar, point):
    out = ctypes.create_string_buffer(32)
    if sodium.crypto_scalarmult_ristretto255(out, scalar, point) != 0:
        raise ValueError("identity element")
    return out.raw


def random_scalar():
    out = ctypes.create_string_buffer(32)
    sodium.crypto_core_ristretto255_scalar_random(out)
    return out.raw


def sealed(isk, purpose, plaintext):
    key = blake2b256(purpose + b"\x00", key=isk)
    nonce = os.urandom(24)
    return nonce + xchacha_seal(key, nonce, plaintext, b"")


def unsealed(isk, purpose, data):
    return xchacha_open(blake2b256(purpose + b"\x00", key=isk), data[:24], data[24:], b"")


async def frame(reader):
    (length,) = struct.unpack(">I", await asyncio.wait_for(reader.readexactly(4), 30))
    return await asyncio.wait_for(reader.readexactly(length), 30)


def read_grant(g):
    """The grant's fields (§15 "Grant"), in order; raises on anything left over."""
    at = 0

    def take(n):
        nonlocal at
        if at + n > len(g):
            raise ValueError("grant too short")
        at += n
        return g[at - n:at]

    def count():
        return struct.unpack(">H", take(2))[0]
    out = {"certificate": take(take(1)[0]), "secret": take(32), "nick": take(take(1)[0])}
    out["private"] = [(take(32), take(32), take(take(1)[0])) for _ in range(count())]
    out["public"] = [take(take(1)[0]) for _ in range(count())]
    out["trusted"] = [take(32) for _ in range(count())]
    out["blocked"] = [take(32) for _ in range(count())]
    out["room_keys"] = [(take(32), take(32), struct.unpack(">I", take(4))[0], take(32)) for _ in range(count())]
    out["older"] = [(struct.unpack(">I", take(4))[0], take(32)) for _ in range(count())]
    if at != len(g):
        raise ValueError(f"{len(g) - at} bytes after the grant")
    return out


def read_certificate(c):
    n = c[108]
    fields, signature = c[:109 + n], c[109 + n:]
    (issued, epoch) = struct.unpack(">QI", c[64:76])
    Ed25519PublicKey.from_public_bytes(c[:32]).verify(signature, CERTIFICATE_CONTEXT + fields)
    return {"account": c[:32], "device": c[32:64], "issued": issued, "epoch": epoch, "conversation": c[76:108],
            "name": c[109:109 + n], "rest": len(signature) - 64}


async def exchange(port, digits, account, device, name):
    """The joiner's side of one connection: (Tb checked, the welcome's
    plaintext or None when the adder closed instead)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        sid, y = os.urandom(16), random_scalar()
        ya = scalarmult(y, generator(digits, sid))
        hello = b"PNDL\x01" + sid + ya + device.public
        writer.write(struct.pack(">I", len(hello)) + hello)
        answer = await frame(reader)
        if len(answer) != 128 or answer[32:64] != account:
            return False, None
        yb, tb = answer[:32], answer[64:]
        isk = hashlib.sha512(lv_cat(DSI + b"_ISK", sid, scalarmult(y, yb)) + lv_cat(ya, device.public) + lv_cat(yb, account)).digest()
        mac_key = hashlib.sha512(b"CPaceMac" + sid + isk).digest()
        if not hmac.compare_digest(tb, hmac.new(mac_key, lv_cat(yb, account), hashlib.sha512).digest()):
            return False, None
        confirm = hmac.new(mac_key, lv_cat(ya, device.public), hashlib.sha512).digest() + sealed(isk, b"peernode/1 device-link joiner", name)
        writer.write(struct.pack(">I", len(confirm)) + confirm)
        try:
            welcome = await frame(reader)
        except asyncio.IncompleteReadError:
            return True, None
        return True, unsealed(isk, b"peernode/1 device-link adder", welcome)
    finally:
        writer.close()


async def join(node, device, name):
    """`/device add` on the node, and the joiner's exchanges against it: a
    name the nick rules refuse first, then `name`. The grant, or None."""
    mark = len(node.events)
    node.send("/device add")
    shown = await node.wait(lambda e: e["type"] == "device_code", since=mark)
    check("/device add shows an 8-digit code and its port", shown is not None and len(shown.get("code", "")) == 9, shown)
    if shown is None:
        return None
    digits = shown["code"].replace("-", "").encode()
    tag_ok, plain = await exchange(shown["port"], digits, node.id, device, b"two words")
    check("the answer names alice's account and its Tb checks (CPace as the document says); a confirm with the right Ta "
          "but a device name the nick rules refuse (a space) ends the exchange", tag_ok and plain is None, (tag_ok, plain))
    tag_ok, plain = await exchange(shown["port"], digits, node.id, device, name)
    check("a second connection with the same code (one try of 3 spent) and a good name: the welcome opens with the adder's key",
          tag_ok and plain is not None, (tag_ok, plain))
    linked_event = await node.wait(lambda e: e["type"] == "device_linked", since=mark)
    check("the node announces the device linked, by the name we sent", linked_event is not None
          and linked_event.get("name") == name.decode() and linked_event.get("device") == device.public.hex(), linked_event)
    return read_grant(plain) if plain else None


def own_room(secret):
    own_key = blake2b256(b"peernode/1 own-devices key\x00" + secret)
    return derive(b"peernode/1 own-devices room", own_key), own_key


async def as_device(node, held):
    device = Identity()
    grant = await join(node, device, b"outside-laptop")
    if grant is None:
        return
    cert = read_certificate(grant["certificate"])
    check("the grant's certificate: signed by the account, for our device key and name, conversation epoch 1",
          cert["account"] == node.id and cert["device"] == device.public and cert["name"] == b"outside-laptop"
          and cert["epoch"] == 1 and cert["rest"] == 0, cert)
    check("the grant's secret is the certificate's conversation key", x25519_base(grant["secret"]) == cert["conversation"])
    check("the grant carries the nick and the public rooms alice is in",
          grant["nick"] == b"alice" and b"#general" in grant["public"], (grant["nick"], grant["public"]))

    check("no older secrets: the account's conversation keys from epoch 1 up to the certificate's, which is 1 and given above",
          grant["older"] == [], grant["older"])
    private = {name.decode(): (room, key) for room, key, name in grant["private"]}
    check("the grant carries the private rooms alice holds, with their first keys",
          private.get("#hideout") == held["#hideout"] and private.get("#plans") == held["#plans"], sorted(private))
    plans = held["#plans"][0]
    epochs = {(event, epoch): key for room, event, epoch, key in grant["room_keys"] if room == plans}
    event_id, key1 = held["#plans epoch 1"]
    check("and #plans' epoch keys: epoch 0 (the first key), 1 (from its invite event), 2 (the kick), 3 (a second "
          "invite) and 4 (the new key after that invitee's leave)",
          epochs.get((event_id, 1)) == key1 and held["#plans"][1] in [k for (_, e), k in epochs.items() if e == 0]
          and sorted(e for _, e in epochs) == [0, 1, 2, 3, 4], sorted(e for _, e in epochs))

    link, seen = await linked(node, device, b"alice")
    mark = len(node.events)
    claim, _ = make_envelope(device, 12, grant["certificate"], room=ACCOUNTS_ID, key=ACCOUNTS_KEY)
    await link.send(envelopes_message([claim]))
    claimed = await node.wait(lambda e: e["type"] == "device" and e.get("device") == device.public.hex(), since=mark)
    check("our claim with the grant's certificate is accepted: we are a device of alice's account",
          claimed is not None and claimed.get("account") == node.id.hex(), claimed)

    own, own_key = own_room(grant["secret"])
    node.send("/join #followed")

    def follow(kind, content, e):
        return content if kind == 16 and content[:4] == b"PNFW" else None
    joined = await seen.find(opened_in(node.id, own, own_key, follow))
    check("alice's /join is a follow (kind 16) in the account's own room, whose key derives from the epoch's secret: "
          "joined #followed", joined == b"PNFW\x01#followed", joined)
    mine, _ = make_envelope(device, 16, b"PNFW\x01#from-the-laptop", room=own, key=own_key)
    await link.send(envelopes_message([mine]))
    followed = await node.wait(lambda e: e["type"] == "followed", since=mark)
    check("our follow (joined #from-the-laptop) is done on alice's node too", followed is not None
          and followed.get("change") == "joined" and followed.get("about") == "#from-the-laptop"
          and followed.get("device") == device.public.hex(), followed)
