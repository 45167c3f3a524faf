"""The keys and bodies of docs/PROTOCOL.md §2 (direct conversations),
§14 (invites, membership events) and §15 (device certificates, claims,
revocations, conversation keys), written from the document alone for
`outside_rooms.py`: libsodium's box functions through ctypes."""
import ctypes
import struct
import time

from outside_wire import blake2b256, derive, ed_to_x25519_public, sodium

ACCOUNTS_ID = derive(b"peernode/1 accounts-room", b"")
ACCOUNTS_KEY = derive(b"peernode/1 accounts-key", b"")
CERTIFICATE_CONTEXT = b"peernode/1 device-certificate\x00"


# ---- libsodium's boxes ------------------------------------------------------

def box_beforenm(their_x25519_public, our_x25519_secret):
    out = ctypes.create_string_buffer(32)
    if sodium.crypto_box_curve25519xchacha20poly1305_beforenm(out, their_x25519_public, our_x25519_secret) != 0:
        raise ValueError("beforenm")
    return out.raw


def box_keypair():
    public, secret = ctypes.create_string_buffer(32), ctypes.create_string_buffer(32)
    sodium.crypto_box_keypair(public, secret)
    return public.raw, secret.raw


def x25519_base(secret):
    out = ctypes.create_string_buffer(32)
    sodium.crypto_scalarmult_curve25519_base(out, secret)
    return out.raw


def seal_to(public, message):
    """crypto_box_seal to an X25519 public key."""
    out = ctypes.create_string_buffer(len(message) + 48)
    sodium.crypto_box_seal(out, message, ctypes.c_ulonglong(len(message)), public)
    return out.raw


def seal_open(sealed, public, secret):
    """crypto_box_seal_open; None when it does not open."""
    out = ctypes.create_string_buffer(max(1, len(sealed) - 48))
    if sodium.crypto_box_seal_open(out, sealed, ctypes.c_ulonglong(len(sealed)), public, secret) != 0:
        return None
    return out.raw[:len(sealed) - 48]


# ---- §2 direct conversations ------------------------------------------------

def conversation(their_x25519_public, our_x25519_secret):
    """(room id, body key) of a direct conversation (envelope version 2),
    from the two parties' X25519 keys (identities converted, or §15
    conversation keys)."""
    direct = box_beforenm(their_x25519_public, our_x25519_secret)
    secret = blake2b256(b"peernode/2 dm-room\x00", key=direct)
    return derive(b"peernode/2 dm-room", secret), blake2b256(b"peernode/2 dm-key\x00", key=direct)


def conversation_with(me, their_identity):
    """The conversation between identity `me` (epoch 0) and an identity key (epoch 0)."""
    return conversation(ed_to_x25519_public(their_identity), me.x_secret)


# ---- §14 membership events --------------------------------------------------

ACTIONS = {0: "create", 1: "invite", 2: "kick", 3: "ban", 4: "role", 5: "leave", 6: "rotate"}


def membership_event(action, target, role, epoch, parent, keys=(), limits=()):
    """A membership event's content; `keys` are (account, conversation epoch, sealed key)."""
    body = b"PNMB" + bytes([action]) + target + bytes([role]) + struct.pack(">I", epoch) + parent
    body += struct.pack(">H", len(keys)) + b"".join(a + struct.pack(">I", e) + s for a, e, s in keys)
    return body + bytes([len(limits)]) + b"".join(d + struct.pack(">Q", s) for d, s in limits)


def read_membership(content):
    """The fields of a membership event, or None when the body is not exactly one."""
    if len(content) < 4 + 1 + 32 + 1 + 4 + 32 + 2 + 1 or content[:4] != b"PNMB":
        return None
    action, target, role = content[4], content[5:37], content[37]
    (epoch,) = struct.unpack(">I", content[38:42])
    parent = content[42:74]
    (count,) = struct.unpack(">H", content[74:76])
    at = 76
    keys = []
    for _ in range(count):
        if len(content) < at + 116:
            return None
        keys.append((content[at:at + 32], struct.unpack(">I", content[at + 32:at + 36])[0], content[at + 36:at + 116]))
        at += 116
    if len(content) < at + 1:
        return None
    limit_count = content[at]
    at += 1
    limits = []
    for _ in range(limit_count):
        if len(content) < at + 40:
            return None
        limits.append((content[at:at + 32], struct.unpack(">Q", content[at + 32:at + 40])[0]))
        at += 40
    if at != len(content) or action not in ACTIONS or role > 2:
        return None
    return {"action": ACTIONS[action], "target": target, "role": role, "epoch": epoch, "parent": parent,
            "keys": keys, "limits": limits}


def invite_v2(room, first, keys, name):
    """A "PNI2" invite's content: `keys` are (membership event id, epoch, room key)."""
    return b"PNI2" + room + first + struct.pack(">H", len(keys)) + b"".join(
        i + struct.pack(">I", e) + k for i, e, k in keys) + name.encode()


def read_invite_v2(content):
    """A "PNI2" invite: (room id, first key, [(event id, epoch, key)], name), or None."""
    if len(content) < 4 + 64 + 2 or content[:4] != b"PNI2":
        return None
    room, first = content[4:36], content[36:68]
    (count,) = struct.unpack(">H", content[68:70])
    at = 70 + 68 * count
    if len(content) <= at:
        return None
    keys = [(content[70 + 68 * i:102 + 68 * i], struct.unpack(">I", content[102 + 68 * i:106 + 68 * i])[0],
             content[106 + 68 * i:138 + 68 * i]) for i in range(count)]
    return room, first, keys, content[at:].decode()


# ---- §15 devices ------------------------------------------------------------

def certificate(account, device, epoch, conversation_public, name, issued=None):
    """A device certificate: the account's word that `device` is one of its devices."""
    issued = issued if issued is not None else int(time.time() * 1000)
    fields = account.public + device.public + struct.pack(">QI", issued, epoch) + conversation_public
    fields += bytes([len(name)]) + name
    return fields + account.sign(CERTIFICATE_CONTEXT, fields)


def rekey(epoch, conversation_public, entries=()):
    """A `rekey` content: (device key, sealed secret) entries."""
    return b"PNCK" + struct.pack(">I", epoch) + conversation_public + bytes([len(entries)]) + b"".join(d + s for d, s in entries)
