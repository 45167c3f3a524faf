#!/usr/bin/env python3
"""Independent check of the golden envelopes against docs/PROTOCOL.md.

Written from the document alone, with Python's hashlib and the
`cryptography` package (Debian's python3-cryptography): parses each envelope
field by field, re-derives the network key, room ids and message id, and
verifies the Ed25519 signature over the envelope context. Exits non-zero
with the reason on the first mismatch.
"""
import hashlib
import json
import struct
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives import serialization

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "Tests/GossipTests/Fixtures/golden-envelopes.json"
KINDS = {1: "text", 2: "action", 3: "nick", 4: "join", 5: "leave", 6: "receipt", 7: "invite", 8: "tombstone"}


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
    f["kind"] = take(1)[0]
    body_length = struct.unpack(">I", take(4))[0]
    f["body"] = take(body_length)
    signed = o
    f["signature"] = take(64)
    if o != len(data):
        fail("trailing bytes")
    return f, signed


def main():
    golden = json.loads(FIXTURE.read_text())
    net = network_key(golden["network_name"])
    alice, bob = public_key("11" * 32), public_key("22" * 32)
    names = {"alice": alice, "bob": bob}
    ids = {}
    for item in golden["envelopes"]:
        data = bytes.fromhex(item["bytes"])
        f, signed = parse(data)
        name = item["name"]
        if f["version"] != 1:
            fail(f"{name}: version {f['version']}")
        if f["author"] != public_key(item["author_seed"]):
            fail(f"{name}: author")
        if f["sequence"] != item["sequence"] or f["timestamp"] != item["timestamp"]:
            fail(f"{name}: sequence or timestamp")
        if KINDS.get(f["kind"]) != item["kind"]:
            fail(f"{name}: kind")
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
        if item["room"].startswith("#"):
            room = derive(net, "peernode/1 room-id", item["room"].encode())
        else:
            low, high = sorted([alice, bob])
            room = derive(net, "peernode/1 dm-room", low + high)
        if f["room"] != room or room.hex() != item["room_id"]:
            fail(f"{name}: room id")
        if len(f["body"]) != len(item["plaintext"].encode()) + 40:
            fail(f"{name}: body length")
        Ed25519PublicKey.from_public_bytes(f["author"]).verify(
            f["signature"], b"peernode/1 envelope\x00" + data[:signed])
    print(f"check-golden: {len(ids)} envelopes ok")


if __name__ == "__main__":
    main()
