"""Python `noiseprotocol` as the other end of a peernode link handshake.

usage: noise_peer.py initiator|responder PSK_HEX ED25519_SEED_HEX [MODE [CIPHER]]
MODE: normal (default), bad-identity (binds someone else's Ed25519 key),
bad-signature (a signature that does not verify).
CIPHER: ChaChaPoly (default) or AESGCM.

Messages travel as hex lines on stdin/stdout. After the handshake it checks
the peer's identity binding (Ed25519 key converts to the Noise static key it
saw; signature over the handshake hash), prints "identity HEX", then sends
"hello from python" three times (nonces 0, 1 and 2) and expects "hello from
swift" three times; then rekeys both directions (Noise §11.3), sends
"rekeyed python" and expects "rekeyed swift", printing "ok".
"""
import hashlib
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from noise.connection import Keypair, NoiseConnection

role, psk, seed = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "normal"
cipher = sys.argv[5] if len(sys.argv) > 5 else "ChaChaPoly"
CONTEXT = b"peernode/1 handshake\x00"
P = 2**255 - 19

ed = Ed25519PrivateKey.from_private_bytes(seed)
ed_pub = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
# X25519 secret of an Ed25519 key (RFC 8032 §5.1.5: the first half of SHA-512(seed)).
x_secret = bytearray(hashlib.sha512(seed).digest()[:32])
x_secret[0] &= 248
x_secret[31] &= 127
x_secret[31] |= 64


def ed_to_x25519_public(pk):
    """Birational map from edwards25519 y to Montgomery u = (1 + y) / (1 - y)."""
    y = int.from_bytes(pk, "little") & ((1 << 255) - 1)
    u = (1 + y) * pow(1 - y, P - 2, P) % P
    return u.to_bytes(32, "little")


def line():
    text = sys.stdin.readline()
    if not text:
        sys.exit("peer closed")
    return bytes.fromhex(text.strip())


def send(data):
    print(data.hex(), flush=True)


noise = NoiseConnection.from_name(f"Noise_XXpsk0_25519_{cipher}_BLAKE2b".encode())
noise.set_psks(psk)
noise.set_prologue(b"peernode/1")
noise.set_keypair_from_private_bytes(Keypair.STATIC, bytes(x_secret))
noise.set_as_initiator() if role == "initiator" else noise.set_as_responder()
noise.start_handshake()

handshake_state = noise.noise_protocol.handshake_state  # the connection drops it once done
state = handshake_state.symmetric_state
seen = {}
original_encrypt, original_decrypt = state.encrypt_and_hash, state.decrypt_and_hash


def encrypt_and_hash(plaintext):
    if plaintext == b"BIND":
        # The binding is made at the moment the payload is encrypted, over h as it is then.
        if mode == "bad-identity":
            other = Ed25519PrivateKey.generate()
            pub = other.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            plaintext = pub + other.sign(CONTEXT + bytes(state.h))
        else:
            signature = bytearray(ed.sign(CONTEXT + bytes(state.h)))
            if mode == "bad-signature":
                signature[0] ^= 1
            plaintext = ed_pub + bytes(signature)
    return original_encrypt(plaintext)


def decrypt_and_hash(ciphertext):
    seen["h"] = bytes(state.h)
    return original_decrypt(ciphertext)


state.encrypt_and_hash = encrypt_and_hash
state.decrypt_and_hash = decrypt_and_hash

try:
    order = ["w", "r", "w"] if role == "initiator" else ["r", "w", "r"]
    for step, what in enumerate(order):
        if what == "w":
            send(noise.write_message(b"" if step == 0 else b"BIND"))
        else:
            payload = bytes(noise.read_message(line()))
            if step > 0:
                seen["binding"], seen["binding_h"] = payload, seen["h"]
except Exception as e:  # a refused handshake: say why and stop
    print("error", type(e).__name__, e, flush=True)
    sys.exit(3)

binding, h = seen["binding"], seen["binding_h"]
remote_static = handshake_state.rs.public_bytes
assert len(binding) == 96, "binding length"
assert ed_to_x25519_public(binding[:32]) == remote_static, "identity does not match static key"
Ed25519PublicKey.from_public_bytes(binding[:32]).verify(binding[32:], CONTEXT + h)
print("identity", binding[:32].hex(), flush=True)
for _ in range(3):
    send(noise.encrypt(b"hello from python"))
for _ in range(3):
    assert noise.decrypt(line()) == b"hello from swift", "transport"
noise.rekey_outbound_cipher()
noise.rekey_inbound_cipher()
send(noise.encrypt(b"rekeyed python"))
assert noise.decrypt(line()) == b"rekeyed swift", "transport after rekey"
print("ok", flush=True)
