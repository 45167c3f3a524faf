"""The byte layouts of docs/PROTOCOL.md, written from the document alone
for `outside_peer.py`: key derivations (§2, §3), bodies and envelopes
(§4, §5), gossip messages (§11) and discovery datagrams (§12). Python's
hashlib and `cryptography`, and libsodium through ctypes for what
`cryptography` lacks (XChaCha20-Poly1305)."""
import ctypes
import ctypes.util
import hashlib
import os
import random
import struct
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

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


def make_envelope(who, kind, content, erase=(), timestamp=None, room=GENERAL_ID, key=GENERAL_KEY, dependencies=(),
                  version=3, signature=None):
    """A version-3 (or 4) envelope of `who`'s next sequence in `room`, its body
    sealed with `key`; `dependencies` are (author, sequence) pairs; `signature`
    replaces the one `who` would make (the id of version 4 covers what is
    there). Returns (bytes, id)."""
    who.sequence += 1
    body = seal_body(kind, content, who.public, room, key)
    head = bytes([version]) + who.public + struct.pack(">Q", who.sequence) + who.last_id
    head += struct.pack(">H", len(dependencies)) + b"".join(a + struct.pack(">Q", s) for a, s in sorted(dependencies))
    head += struct.pack(">Q", timestamp if timestamp is not None else int(time.time() * 1000)) + room
    head += bytes([len(erase)]) + b"".join(struct.pack(">Q", s) for s in erase)
    head += struct.pack(">I", len(body)) + blake2b256(body)
    signed = head + (signature if signature is not None else who.sign(ENVELOPE_CONTEXT, head))
    message_id = blake2b256(signed if version == 4 else head)
    who.last_id = message_id
    return signed + b"\x00" + body, message_id


def read_envelope(data):
    """Parses a version-3 or 4 envelope field by field (§4); checks its body
    hash and signature. Returns a dict, or raises ValueError. The id is
    BLAKE2b-256 of the signed bytes (version 3), or of the signed bytes and
    the signature (version 4)."""
    if data[0] not in (3, 4):
        raise ValueError(f"version {data[0]}")
    author, (sequence,), previous = data[1:33], struct.unpack(">Q", data[33:41]), data[41:73]
    (n,) = struct.unpack(">H", data[73:75])
    dependencies = [(data[75 + 40 * i:107 + 40 * i], struct.unpack(">Q", data[107 + 40 * i:115 + 40 * i])[0]) for i in range(n)]
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
    id_end = head_end + 64 if data[0] == 4 else head_end
    return {"author": author, "sequence": sequence, "previous": previous, "timestamp": timestamp, "room": room,
            "dependencies": dependencies, "erased": erased, "form": form, "body": rest, "id": blake2b256(data[:id_end]),
            "version": data[0], "signature": signature}


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


PRESENCE_CONTEXT = b"peernode/1 presence\x00"


def presence_beacon(who, state=0, lifetime=180, nick=b"", reason=b"", when=None):
    """A presence beacon (§11 "Presence", type 17): device ‖ time ‖ state ‖ lifetime ‖ nick ‖ reason, then the signature."""
    signed = (who.public + struct.pack(">Q", when if when is not None else int(time.time() * 1000)) + bytes([state])
              + struct.pack(">H", lifetime) + bytes([len(nick)]) + nick + bytes([len(reason)]) + reason)
    return b"\x11" + signed + who.sign(PRESENCE_CONTEXT, signed)


def read_presence(message):
    """A type 17 read as §11 lays it out: its fields, and the bytes its signature covers."""
    body = message[1:]
    device, when, state, lifetime = body[:32], struct.unpack(">Q", body[32:40])[0], body[40], struct.unpack(">H", body[41:43])[0]
    nick_len = body[43]
    nick = body[44:44 + nick_len]
    reason_len = body[44 + nick_len]
    reason = body[45 + nick_len:45 + nick_len + reason_len]
    end = 45 + nick_len + reason_len
    return {"device": device, "time": when, "state": state, "lifetime": lifetime, "nick": nick, "reason": reason,
            "signed": body[:end], "signature": body[end:], "rest": len(body) - end - 64}


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
