#!/usr/bin/env python3
"""Independent check of the golden envelopes against docs/PROTOCOL.md.

Written from the document alone, with Python's hashlib and the
`cryptography` package (Debian's python3-cryptography): parses each envelope
field by field, re-derives the network key, room ids and message id, and
verifies the Ed25519 signature over the envelope context. For version 2
(kind sealed, bodies padded) it also derives the direct conversation's room
and key from the pair's X25519 shared key and opens every body, calling
libsodium through ctypes for the primitives `cryptography` lacks
(XChaCha20-Poly1305, the Ed25519-to-X25519 conversion). Exits non-zero with
the reason on the first mismatch.
"""
import ctypes
import hashlib
import hmac
import json
import struct
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives import serialization

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-envelopes.json"
SEALED_FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-envelopes-2.json"
ERASABLE_FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-envelopes-3.json"
CHAINED_FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-envelopes-4.json"
TYPING_FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-typing.json"
DEVICE_LINK_FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-device-link.json"
MEMBERSHIP_FIXTURE = ROOT / "Tests/PeerNodeTests/Fixtures/golden-membership.json"
# Padded plaintext sizes of version-2 bodies (PROTOCOL.md §5).
BUCKETS = [256 << i for i in range(9)] + [65538]
KINDS = {1: "text", 2: "action", 3: "nick", 4: "join", 5: "leave", 6: "receipt", 7: "invite", 8: "tombstone",
         9: "edit", 10: "reaction", 11: "reply", 12: "device"}
MAX_ERASURES = 17


def fail(message):
    print("check-golden: " + message, file=sys.stderr)
    sys.exit(1)


def network_key(name):
    return hashlib.blake2b(b"peernode/1 network-key\x00" + name.encode(), digest_size=32).digest()


def derive(key, label, data):
    return hashlib.blake2b(label.encode() + b"\x00" + data, digest_size=32, key=key).digest()


def public_key(seed_hex):
    private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def parse(data):
    """Parse per PROTOCOL.md §4; returns the fields and the signed length."""
    o = 0

    def take(n):
        nonlocal o
        if o + n > len(data):
            fail("truncated envelope")
        chunk = data[o:o + n]
        o += n
        return chunk

    f = {"version": take(1)[0], "author": take(32), "sequence": struct.unpack(">Q", take(8))[0], "previous": take(32)}
    count = struct.unpack(">H", take(2))[0]
    f["dependencies"] = [(take(32), struct.unpack(">Q", take(8))[0]) for _ in range(count)]
    f["timestamp"] = struct.unpack(">Q", take(8))[0]
    f["room"] = take(32)
    f["kind"] = take(1)[0] if f["version"] == 1 else None
    body_length = struct.unpack(">I", take(4))[0]
    f["body"] = take(body_length)
    signed = o
    f["signature"] = take(64)
    if o != len(data):
        fail("trailing bytes")
    return f, signed


def check_header(version, item, f, data, signed, names, ids):
    """The fields every version shares; records the item's id in `ids`."""
    name = item["name"]
    if f["version"] != version:
        fail(f"{name}: version {f['version']}")
    if f["author"] != public_key(item["author_seed"]):
        fail(f"{name}: author")
    if f["sequence"] != item["sequence"] or f["timestamp"] != item["timestamp"]:
        fail(f"{name}: sequence or timestamp")
    deps = [(names[a], s) for a, s in item["dependencies"]]
    if f["dependencies"] != deps or deps != sorted(deps):
        fail(f"{name}: dependencies")
    message_id = hashlib.blake2b(data[:signed], digest_size=32).digest()
    if message_id.hex() != item["id"]:
        fail(f"{name}: id")
    ids[name] = message_id
    previous = bytes(32) if item["previous"] == "00" * 32 else ids[item["previous"]]
    if f["previous"] != previous:
        fail(f"{name}: previous")


def checked(fixture, version, names):
    """Each envelope of a fixture, parsed, with the fields every version
    shares and its signature checked: (item, fields)."""
    ids = {}
    for item in json.loads(fixture.read_text())["envelopes"]:
        data = bytes.fromhex(item["bytes"])
        f, signed = parse(data)
        check_header(version, item, f, data, signed, names, ids)
        Ed25519PublicKey.from_public_bytes(f["author"]).verify(
            f["signature"], b"peernode/1 envelope\x00" + data[:signed])
        yield item, f


def main():
    net = network_key(json.loads(FIXTURE.read_text())["network_name"])
    alice, bob = public_key("11" * 32), public_key("22" * 32)
    count = 0
    for item, f in checked(FIXTURE, 1, {"alice": alice, "bob": bob}):
        name = item["name"]
        count += 1
        if KINDS.get(f["kind"]) != item["kind"]:
            fail(f"{name}: kind")
        if item["room"].startswith("#"):
            room = derive(net, "peernode/1 room-id", item["room"].encode())
        else:
            low, high = sorted([alice, bob])
            room = derive(net, "peernode/1 dm-room", low + high)
        if f["room"] != room or room.hex() != item["room_id"]:
            fail(f"{name}: room id")
        if len(f["body"]) != len(item["plaintext"].encode()) + 40:
            fail(f"{name}: body length")
    sealed = check_sealed(net, alice, bob)
    erasable = check_erasable(net, alice, bob)
    chained = check_erasable(net, alice, bob, CHAINED_FIXTURE, 4)
    typing = check_typing(alice)
    frames = check_device_link(alice)
    check_membership(alice)
    print(f"check-golden: {count} envelopes of version 1, {sealed} of version 2 and {erasable} of version 3 and {chained} of version 4 ok; {typing} typing notices ok; "
          f"CPace draft vectors and {frames} device-link frames ok; a membership event, a new conversation key and an invite with epochs ok")


def check_typing(alice):
    """The typing notices (PROTOCOL.md §11, "Typing"): type 12, room, typer,
    time, forwards, signature over the typing context; 138 bytes."""
    item = json.loads(TYPING_FIXTURE.read_text())
    net = network_key(item["network_name"])
    room = derive(net, "peernode/1 room-id", item["room"].encode())
    for name, forwards in (("message", 0), ("forwarded", 1)):
        data = bytes.fromhex(item[name])
        if len(data) != 138 or data[0] != 12:
            fail(f"typing {name}: length or type")
        f_room, typer, (time,), f_forwards, signature = data[1:33], data[33:65], struct.unpack(">Q", data[65:73]), data[73], data[74:138]
        if f_room != room or typer != alice or time != item["time"] or f_forwards != forwards:
            fail(f"typing {name}: fields")
        try:
            Ed25519PublicKey.from_public_bytes(typer).verify(signature, b"peernode/1 typing\x00" + f_room + typer + data[65:73])
        except Exception:
            fail(f"typing {name}: signature")
    return 2


def sodium():
    lib = ctypes.CDLL("libsodium.so.23")
    if lib.sodium_init() < 0:
        fail("sodium_init failed")
    return lib


def conversation(lib, own_seed_hex, peer_public):
    """The pair's shared key (X25519 of the converted keys, then
    crypto_box_curve25519xchacha20poly1305_beforenm), and from it the
    version-2 conversation seed and key (PROTOCOL.md §2)."""
    seed = bytes.fromhex(own_seed_hex)
    own_secret = seed + public_key(own_seed_hex)
    curve_secret, curve_peer, shared = (ctypes.create_string_buffer(32) for _ in range(3))
    if lib.crypto_sign_ed25519_sk_to_curve25519(curve_secret, own_secret) != 0 or \
            lib.crypto_sign_ed25519_pk_to_curve25519(curve_peer, peer_public) != 0:
        fail("key conversion failed")
    if lib.crypto_box_curve25519xchacha20poly1305_beforenm(shared, curve_peer, curve_secret) != 0:
        fail("beforenm failed")
    k = shared.raw
    room_seed = hashlib.blake2b(b"peernode/2 dm-room\x00", digest_size=32, key=k).digest()
    key = hashlib.blake2b(b"peernode/2 dm-key\x00", digest_size=32, key=k).digest()
    return room_seed, key


def open_sealed(lib, key, author, room, body):
    """XChaCha20-Poly1305 IETF with associated data "peernode/2 body" ‖ 0 ‖
    author ‖ room; then the padding taken off. Returns (kind, content)."""
    if len(body) - 40 not in BUCKETS:
        fail(f"body of {len(body)} bytes is not a padded size")
    nonce, sealed = body[:24], body[24:]
    ad = b"peernode/2 body\x00" + author + room
    plain = ctypes.create_string_buffer(len(sealed))
    length = ctypes.c_ulonglong()
    if lib.crypto_aead_xchacha20poly1305_ietf_decrypt(
            plain, ctypes.byref(length), None, sealed, ctypes.c_ulonglong(len(sealed)),
            ad, ctypes.c_ulonglong(len(ad)), nonce, key) != 0:
        fail("body does not open")
    padded = plain.raw[:length.value]
    unpadded = padded.rstrip(b"\x00")
    if not unpadded.endswith(b"\x80") or len(unpadded) < 2:
        fail("bad padding")
    return unpadded[0], unpadded[1:-1]


def check_sealed(net, alice, bob):
    lib = sodium()
    room_seed, dm_key = conversation(lib, "11" * 32, bob)
    if conversation(lib, "22" * 32, alice) != (room_seed, dm_key):
        fail("the two parties derive different conversations")
    count = 0
    for item, f in checked(SEALED_FIXTURE, 2, {"alice": alice, "bob": bob}):
        name = item["name"]
        count += 1
        if item["room"].startswith("#"):
            room = derive(net, "peernode/1 room-id", item["room"].encode())
            key = derive(net, "peernode/1 room-key", item["room"].encode())
        else:
            room = derive(net, "peernode/2 dm-room", room_seed)
            key = dm_key
        if f["room"] != room or room.hex() != item["room_id"]:
            fail(f"{name}: room id")
        kind, content = open_sealed(lib, key, f["author"], f["room"], f["body"])
        if KINDS.get(kind) != item["kind"] or content != item["plaintext"].encode():
            fail(f"{name}: kind or content")
    return count


class Reader:
    def __init__(self, data):
        self.data, self.o = data, 0

    def take(self, n):
        if self.o + n > len(self.data):
            fail("truncated envelope")
        chunk = self.data[self.o:self.o + n]
        self.o += n
        return chunk

    def u(self, fmt, n):
        return struct.unpack(fmt, self.take(n))[0]


def parse_head3(r, version=3):
    """A version-3 (or 4) head (PROTOCOL.md §4): the signed bytes and the
    signature. Returns the fields and the bytes the id hashes: the signed
    bytes (version 3), the signed bytes and the signature (version 4)."""
    start = r.o
    f = {"version": r.take(1)[0], "author": r.take(32), "sequence": r.u(">Q", 8), "previous": r.take(32)}
    if f["version"] != version:
        fail(f"version {f['version']} where {version} is expected")
    count = r.u(">H", 2)
    f["dependencies"] = [(r.take(32), r.u(">Q", 8)) for _ in range(count)]
    f["timestamp"] = r.u(">Q", 8)
    f["room"] = r.take(32)
    erased = r.take(1)[0]
    if erased > MAX_ERASURES:
        fail("too many erasures")
    f["erases"] = [r.u(">Q", 8) for _ in range(erased)]
    if f["erases"] != sorted(set(f["erases"])) or any(s < 1 or s >= f["sequence"] for s in f["erases"]):
        fail("erasures not canonical")
    f["body_length"] = r.u(">I", 4)
    if f["body_length"] - 40 not in BUCKETS:
        fail("body length not a padded size")
    f["body_hash"] = r.take(32)
    signed = r.data[start:r.o]
    signature = r.take(64)
    Ed25519PublicKey.from_public_bytes(f["author"]).verify(signature, b"peernode/1 envelope\x00" + signed)
    return f, signed + signature if version == 4 else signed


def parse3(data, version=3):
    """A whole version-3 (or 4) envelope: head, form byte, then the body (its
    BLAKE2b-256 must be the signed hash) or the proof (the head of the
    author's later envelope that erases this one). Returns the fields and the id."""
    r = Reader(data)
    f, signed = parse_head3(r, version)
    form = r.take(1)[0]
    if form == 0:
        f["body"] = r.take(f["body_length"])
        if hashlib.blake2b(f["body"], digest_size=32).digest() != f["body_hash"]:
            fail("body hash")
        f["erased_by"] = None
    elif form == 1:
        proof, _ = parse_head3(r, version)
        if proof["author"] != f["author"] or proof["sequence"] <= f["sequence"] or f["sequence"] not in proof["erases"]:
            fail("proof does not erase this envelope")
        f["body"], f["erased_by"] = b"", proof["sequence"]
    else:
        fail(f"form {form}")
    if r.o != len(data):
        fail("trailing bytes")
    return f, hashlib.blake2b(signed, digest_size=32).digest()


def check_erasable(net, alice, bob, path=ERASABLE_FIXTURE, version=3):
    lib = sodium()
    fixture = json.loads(path.read_text())
    names = {"alice": alice, "bob": bob}
    room = derive(net, "peernode/1 room-id", fixture["room"].encode())
    key = derive(net, "peernode/1 room-key", fixture["room"].encode())
    ids, by_name = {}, {}
    for item in fixture["envelopes"]:
        name = item["name"]
        f, message_id = parse3(bytes.fromhex(item["bytes"]), version)
        if f["erased_by"] is not None or message_id.hex() != item["id"] or f["author"] != names[item["author"]]:
            fail(f"{name}: id, author or form")
        previous = bytes(32) if item["previous"] == "00" * 32 else ids[item["previous"]]
        deps = [(names[a], int(s)) for a, s in item["dependencies"]]
        if f["previous"] != previous or f["dependencies"] != deps or f["room"] != room or f["erases"] != item["erases"]:
            fail(f"{name}: previous, dependencies, room or erasures")
        kind, content = open_sealed(lib, key, f["author"], room, f["body"])
        if KINDS.get(kind) != item["kind"] or content.hex() != item["content"]:
            fail(f"{name}: kind or content")
        if item["kind"] in ("edit", "reaction", "reply"):
            # The 72-byte reference: author 32 | sequence 8 | id 32 of an earlier item.
            author, sequence, target_id = content[:32], struct.unpack(">Q", content[32:40])[0], content[40:72]
            if not any(names[i["author"]] == author and i["sequence"] == sequence and ids[n] == target_id for n, i in by_name.items()):
                fail(f"{name}: reference")
        ids[name], by_name[name] = message_id, item
    for item in fixture["envelopes"]:
        if item.get("pruned_bytes"):
            f, message_id = parse3(bytes.fromhex(item["pruned_bytes"]), version)
            erasing = by_name[item["pruned_by"]]
            if message_id != ids[item["name"]] or f["erased_by"] != erasing["sequence"] or f["body"]:
                fail(f"{item['name']}: pruned form")
    return len(fixture["envelopes"])



# --- PROTOCOL.md §15: CPace (ristretto255, SHA-512) and the device link ---

def lv(data):
    """prepend_len: the length as LEB128, then the bytes."""
    n, out = len(data), b""
    while True:
        low = n & 0x7f
        n >>= 7
        out += bytes([low | (0x80 if n else 0)])
        if not n:
            return out + data


def lv_cat(*parts):
    return b"".join(lv(p) for p in parts)


DSI = b"CPaceRistretto255"


def cpace_generator(lib, prs, ci, sid):
    pad = max(0, 128 - 1 - len(lv(prs)) - len(lv(DSI)))
    h = hashlib.sha512(lv_cat(DSI, prs, b"\x00" * pad, ci, sid)).digest()
    point = ctypes.create_string_buffer(32)
    if lib.crypto_core_ristretto255_from_hash(point, h) != 0:
        fail("from_hash failed")
    return point.raw


def scalar_mult(lib, scalar, point):
    out = ctypes.create_string_buffer(32)
    if lib.crypto_scalarmult_ristretto255(out, scalar, point) != 0:
        fail("scalar multiplication gave the identity")
    return out.raw


def cpace_isk(sid, k, ya, ada, yb, adb):
    return hashlib.sha512(lv_cat(DSI + b"_ISK", sid, k) + lv_cat(ya, ada) + lv_cat(yb, adb)).digest()


def check_cpace_draft(lib):
    """The draft's ristretto255 test vectors, so this implementation of
    CPace is checked against a third party before it checks the fixture."""
    ci = bytes.fromhex("0b415f696e69746961746f720b425f726573706f6e646572")
    sid = bytes.fromhex("7e4b4791d6a8ef019b936c79fb7f2c57")
    g = cpace_generator(lib, b"Password", ci, sid)
    if g.hex() != "222b6b195fe84b1652badb6f6a3ae3d24341e7306967f0b8115b40d5698c7e56":
        fail("CPace draft vector: generator")
    ya = scalar_mult(lib, bytes.fromhex("da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d08"), g)
    yb_scalar = bytes.fromhex("d2316b454718c35362d83d69df6320f38578ed5984651435e2949762d900b80d")
    yb = scalar_mult(lib, yb_scalar, g)
    isk = cpace_isk(sid, scalar_mult(lib, yb_scalar, ya), ya, b"ADa", yb, b"ADb")
    if isk.hex() != ("b69effbf61b51d56401c0f65601abe428de8206feaaf0e32198896dcae7b35cd"
                     "2b38950a39dfd5d4a79164614c2984f7daa460b588c1e80c3fa2068af7900447"):
        fail("CPace draft vector: ISK")


def xchacha_open(lib, key, sealed):
    nonce, body = sealed[:24], sealed[24:]
    plain = ctypes.create_string_buffer(max(1, len(body)))
    length = ctypes.c_ulonglong()
    if lib.crypto_aead_xchacha20poly1305_ietf_decrypt(plain, ctypes.byref(length), None, body,
                                                       ctypes.c_ulonglong(len(body)), None, ctypes.c_ulonglong(0), nonce, key) != 0:
        fail("device link: a sealed frame does not open")
    return plain.raw[:length.value]


def check_certificate(data, account, device, name, issued, epoch, conversation_key):
    if len(data) > 205:
        fail("certificate too long")
    n = data[108]
    if data[:32] != account or data[32:64] != device or struct.unpack(">Q", data[64:72])[0] != issued \
            or struct.unpack(">I", data[72:76])[0] != epoch or data[76:108] != conversation_key \
            or data[109:109 + n] != name or len(data) != 109 + n + 64:
        fail("certificate fields")
    Ed25519PublicKey.from_public_bytes(account).verify(data[109 + n:], b"peernode/1 device-certificate\x00" + data[:109 + n])


def check_device_link(alice):
    """The golden transcript: both shares from the fixed scalars, the tags,
    the sealed device name and grant, the certificate inside."""
    lib = sodium()
    check_cpace_draft(lib)
    item = json.loads(DEVICE_LINK_FIXTURE.read_text())
    h = {k: bytes.fromhex(item[k]) for k in ("sid", "ya", "yb", "hello", "answer", "confirm", "welcome", "certificate",
                                             "nonce_confirm", "nonce_welcome", "isk")}
    net = network_key(item["network_name"])
    device = public_key("33" * 32)
    prs = item["code"].replace("-", "").encode()
    ci = hashlib.blake2b(b"peernode/1 device-link\x00", digest_size=32, key=net).digest()
    g = cpace_generator(lib, prs, ci, h["sid"])
    ya, yb = scalar_mult(lib, h["ya"], g), scalar_mult(lib, h["yb"], g)
    if h["hello"] != b"PNDL\x01" + h["sid"] + ya + device:
        fail("device link: hello")
    k = scalar_mult(lib, h["ya"], yb)
    if k != scalar_mult(lib, h["yb"], ya):
        fail("device link: K differs")
    isk = cpace_isk(h["sid"], k, ya, device, yb, alice)
    if isk != h["isk"]:
        fail("device link: ISK")
    mac_key = hashlib.sha512(b"CPaceMac" + h["sid"] + isk).digest()
    ta = hmac.new(mac_key, lv_cat(ya, device), hashlib.sha512).digest()
    tb = hmac.new(mac_key, lv_cat(yb, alice), hashlib.sha512).digest()
    if h["answer"] != yb + alice + tb:
        fail("device link: answer")
    joiner_key = hashlib.blake2b(b"peernode/1 device-link joiner\x00", digest_size=32, key=isk).digest()
    adder_key = hashlib.blake2b(b"peernode/1 device-link adder\x00", digest_size=32, key=isk).digest()
    if h["confirm"][:64] != ta or h["confirm"][64:88] != h["nonce_confirm"] or xchacha_open(lib, joiner_key, h["confirm"][64:]) != b"laptop":
        fail("device link: confirm")
    if h["welcome"][:24] != h["nonce_welcome"]:
        fail("device link: welcome nonce")
    grant = xchacha_open(lib, adder_key, h["welcome"])
    r = Reader(grant)
    cert = r.take(r.u(">B", 1))
    if cert != h["certificate"]:
        fail("device link: the grant's certificate")
    secret = r.take(32)
    if secret != b"\x88" * 32:
        fail("device link: conversation secret")
    box_public = ctypes.create_string_buffer(32)
    lib.crypto_scalarmult_curve25519_base(box_public, secret)
    check_certificate(cert, alice, device, b"laptop", item["issued"], 1, box_public.raw)
    if r.take(r.u(">B", 1)) != b"alice":
        fail("device link: nick")
    if r.u(">H", 2) != 1 or r.take(32) != b"\x44" * 32 or r.take(32) != b"\x55" * 32 or r.take(r.u(">B", 1)) != b"#plans":
        fail("device link: private room")
    if r.u(">H", 2) != 1 or r.take(r.u(">B", 1)) != b"#general":
        fail("device link: public room")
    if r.u(">H", 2) != 1 or r.take(32) != public_key("22" * 32) or r.u(">H", 2) != 0:
        fail("device link: trusted or blocked")
    if r.u(">H", 2) != 1 or r.take(32) != b"\x44" * 32 or r.take(32) != b"\x66" * 32 or r.u(">I", 4) != 3 or r.take(32) != b"\x77" * 32:
        fail("device link: room keys")
    if r.u(">H", 2) != 1 or r.u(">I", 4) != 1 or r.take(32) != b"\x99" * 32 or r.o != len(r.data):
        fail("device link: older secrets or trailing bytes")
    return 4


def seal_open(lib, sealed, secret):
    """crypto_box_seal_open of `sealed` with an X25519 secret (PROTOCOL.md §14, §15)."""
    public = ctypes.create_string_buffer(32)
    lib.crypto_scalarmult_curve25519_base(public, secret)
    out = ctypes.create_string_buffer(len(sealed) - 48)
    if lib.crypto_box_seal_open(out, sealed, ctypes.c_ulonglong(len(sealed)), public, secret) != 0:
        fail("membership: a sealed key does not open")
    return out.raw


def check_membership(alice):
    """The kick, the new conversation key and the PNI2 invite of
    golden-membership.json, field by field as PROTOCOL.md §14 and §15 lay them out."""
    lib = sodium()
    fixture = json.loads(MEMBERSHIP_FIXTURE.read_text())
    carol, device = public_key("33" * 32), public_key("44" * 32)
    # "PNMB" ‖ action ‖ target ‖ role ‖ epoch ‖ parent ‖ key count ‖ keys ‖ limit count ‖ limits
    r = Reader(bytes.fromhex(fixture["membership"]))
    if r.take(4) != b"PNMB" or r.u(">B", 1) != 2 or r.take(32) != carol or r.u(">B", 1) != 0 or r.u(">I", 4) != 3 or r.take(32) != b"\x22" * 32:
        fail("membership: head (kick of carol, member, epoch 3, parent 22…)")
    if r.u(">H", 2) != 1 or r.take(32) != alice or r.u(">I", 4) != 1:
        fail("membership: the sealed key's account and conversation epoch")
    if seal_open(lib, r.take(80), b"\x88" * 32) != b"\x77" * 32:
        fail("membership: the room key sealed to alice's epoch-1 key")
    if r.u(">B", 1) != 1 or r.take(32) != carol or r.u(">Q", 8) != 7 or r.o != len(r.data):
        fail("membership: the limit (carol's key, last 7) or trailing bytes")
    # "PNCK" ‖ epoch ‖ public key ‖ count ‖ (device ‖ sealed secret)
    r = Reader(bytes.fromhex(fixture["rekey"]))
    next_public = ctypes.create_string_buffer(32)
    lib.crypto_scalarmult_curve25519_base(next_public, b"\x99" * 32)
    if r.take(4) != b"PNCK" or r.u(">I", 4) != 2 or r.take(32) != next_public.raw or r.u(">B", 1) != 1 or r.take(32) != device:
        fail("rekey: head (epoch 2, public key of 99…, one device)")
    # The device's Ed25519 key converted to X25519 opens its copy.
    ed_secret = ctypes.create_string_buffer(64)
    ed_public = ctypes.create_string_buffer(32)
    lib.crypto_sign_seed_keypair(ed_public, ed_secret, b"\x44" * 32)
    device_x = ctypes.create_string_buffer(32)
    lib.crypto_sign_ed25519_sk_to_curve25519(device_x, ed_secret)
    if seal_open(lib, r.take(80), device_x.raw) != b"\x99" * 32 or r.o != len(r.data):
        fail("rekey: the secret sealed to the device, or trailing bytes")
    # "PNI2" ‖ room id ‖ first key ‖ count ‖ (event ‖ epoch ‖ key) ‖ name
    r = Reader(bytes.fromhex(fixture["invite"]))
    if r.take(4) != b"PNI2" or r.take(32) != b"\x44" * 32 or r.take(32) != b"\x55" * 32 or r.u(">H", 2) != 1:
        fail("invite: head")
    if r.take(32) != b"\x66" * 32 or r.u(">I", 4) != 3 or r.take(32) != b"\x77" * 32 or r.take(len(r.data) - r.o) != b"#plans":
        fail("invite: the epoch key or the name")


if __name__ == "__main__":
    main()
