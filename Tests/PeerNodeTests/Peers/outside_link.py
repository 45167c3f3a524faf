"""The other ends `outside_peer.py` talks to a node through: a link it
dials or is dialled on (§10: WebSocket, Noise with the identity binding,
chunks), the multicast group on loopback (§12), and the node itself, a
`peernode --json` process."""
import asyncio
import json
import socket
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from noise.connection import Keypair, NoiseConnection
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

from checks import scratch
from outside_wire import GROUP, HANDSHAKE_CONTEXT, NETWORK_KEY, Identity, ed_to_x25519_public, read_datagram

# ---- §10 links -----------------------------------------------------------

def cpu_has_aes():
    """Whether this CPU has the instructions a node needs for AES-256-GCM
    links (§10: AES-NI and carry-less multiply), read from /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return "aes" in flags and "pclmulqdq" in flags


class Link:
    """A link dialled to the node: WebSocket, Noise with the identity
    binding, chunks."""

    CHUNK = 65518

    def __init__(self, who, nick=b"outsider", network=NETWORK_KEY):
        self.who, self.nick, self.network = who, nick, network

    async def open(self, port, versions=(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), aesgcm=False, offered=None, cipher=None):
        """Dials the node and shakes hands as the initiator. `aesgcm`: offer
        `peernode.N.aesgcm` before `peernode.N` for N >= 10 (§10); `offered`:
        exactly these subprotocols; `cipher`: run this one whatever was agreed."""
        if offered is None:
            offered = [name for v in versions for name in ([f"peernode.{v}.aesgcm"] if aesgcm and v >= 10 else []) + [f"peernode.{v}"]]
        ws = await connect(f"ws://127.0.0.1:{port}/peernode/1", subprotocols=offered, max_size=2**17, ping_interval=None)
        return await self.handshake(ws, initiator=True, cipher=cipher)

    async def handshake(self, ws, initiator, cipher=None):
        """Noise XXpsk0 (§10) with the cipher the subprotocol names, the
        identity binding (and our nick claim) in messages 2 and 3; checks the
        node's binding."""
        self.ws = ws
        parts = ws.subprotocol.lower().split(".")
        self.version = int(parts[1])
        self.cipher = cipher or ("AESGCM" if parts[2:] == ["aesgcm"] else "ChaChaPoly")
        noise = NoiseConnection.from_name(f"Noise_XXpsk0_25519_{self.cipher}_BLAKE2b".encode())
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
        self.full_clocks, self.barriers = 0, 0
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
                    self.full_clocks += message[:1] == b"\x01"
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

    async def barrier(self, timeout=20):
        """Asks for the node's full clock (type 6) and waits for it (type 1):
        the node reads a link's messages in order, so everything sent on this
        link before has been handled (and counted) once the answer is here.
        Full clocks are counted as they arrive: the node's first message on a
        new link is one, and each barrier asks for one more."""
        self.barriers += 1
        await self.send(b"\x06")
        return await self.until(lambda m: self.full_clocks >= 1 + self.barriers, timeout) is not None

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
    def __init__(self, peernode):
        self.peernode = peernode
        self.dir = scratch("outside-peer-")
        self.events = []
        self.arrived = asyncio.Condition()

    async def start(self, *extra):
        self.process = await asyncio.create_subprocess_exec(
            self.peernode, "--data-dir", self.dir, "--json", "--listen", "127.0.0.1:0", "--nick", "alice", *extra,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        self.reader = asyncio.create_task(self.read())
        ready = await self.wait(lambda e: e["type"] == "ready", 60)
        self.id = bytes.fromhex(ready["id"])
        self.port = int(ready["listen"].rsplit(":", 1)[1])

    async def read(self):
        while line := await self.process.stdout.readline():
            async with self.arrived:
                self.events.append(json.loads(line))
                self.arrived.notify_all()

    async def wait(self, match, timeout=20, since=0):
        """The first event from index `since` on that matches, as soon as it comes (None after `timeout`)."""
        def found():
            return next((e for e in self.events[since:] if match(e)), None)
        try:
            async with self.arrived:
                await asyncio.wait_for(self.arrived.wait_for(found), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return None
        return found()

    async def counters_reach(self, wanted, timeout=20):
        """/stats until each counter of `wanted` (name: value) is at least that much; the last answer."""
        deadline = time.monotonic() + timeout
        stats = {}
        while time.monotonic() < deadline:
            stats = await self.stats()
            if all(int(stats.get(name, 0)) >= value for name, value in wanted.items()):
                break
        return stats

    def send(self, line):
        self.process.stdin.write(line.encode() + b"\n")

    async def stats(self):
        mark = len(self.events)
        self.send("/stats")
        return await self.wait(lambda e: e["type"] == "stats", since=mark) or {}

    async def peers(self):
        mark = len(self.events)
        self.send("/peers")
        head = await self.wait(lambda e: e["type"] == "peers", since=mark) or {}
        # The head says how many rows follow it.
        rows = int(head.get("rows", 0))
        await self.wait(lambda e: sum(x["type"] == "peer" for x in self.events[mark:]) >= rows, since=mark)
        return head, [e for e in self.events[mark:] if e["type"] == "peer"][:rows]

    async def stop(self):
        self.process.stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), 30)
        except asyncio.TimeoutError:
            self.process.kill()
            return None


class Dialled:
    """Our listener, for the node's `--peer`: answers its WebSocket
    handshake with `version` (AES-GCM if `aesgcm` and the node offers it),
    shakes hands as the Noise responder."""

    def __init__(self, version=6, aesgcm=False):
        self.version, self.aesgcm, self.who = version, aesgcm, Identity()
        self.links = asyncio.Queue()

    async def start(self):
        def choose(ws, offered):
            self.offered = list(offered)
            aes = f"peernode.{self.version}.aesgcm"
            return aes if self.aesgcm and aes in self.offered else f"peernode.{self.version}"

        self.server = await serve(self.handle, "127.0.0.1", 0, select_subprotocol=choose, max_size=2**17, ping_interval=None)
        self.port = self.server.sockets[0].getsockname()[1]

    async def handle(self, ws):
        self.path = ws.request.path
        link = await Link(self.who, nick=b"listener").handshake(ws, initiator=False)
        await self.links.put(link)
        await link.reader


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
