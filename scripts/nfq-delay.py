#!/usr/bin/env python3
"""Delays every packet a netfilter queue hands it by DELAY_MS, then accepts
it: netem's `delay` for kernels built without sch_netem. Speaks the
nfnetlink_queue protocol itself (no library): bind the queue, ask for
packet metadata only, and answer each packet id with an ACCEPT verdict once
its time has come. Packets keep their order. Run inside the namespace whose
nftables rule sends packets to `queue num QUEUE` (scripts/netlab impair).
usage: nfq-delay.py QUEUE DELAY_MS
"""
import heapq
import os
import select
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
# Packets the kernel holds for us at most (more are dropped, as a full netem queue would).
QUEUE_MAXLEN = 16384


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def message(kind, queue, attributes, flags=NLM_F_REQUEST, seq=0):
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + b"".join(attributes)
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq, 0) + body


def messages(data):
    """(type, payload after the nlmsghdr) for each netlink message in one read."""
    offset = 0
    while offset + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("=IHHII", data, offset)
        if length < 16:
            return
        yield kind, data[offset + 16:offset + length]
        offset += (length + 3) & ~3


def attributes(payload):
    offset = 4  # nfgenmsg
    while offset + 4 <= len(payload):
        length, kind = struct.unpack_from("=HH", payload, offset)
        if length < 4:
            return
        yield kind & 0x3FFF, payload[offset + 4:offset + length]
        offset += (length + 3) & ~3


def configure(sock, queue, attrs, seq):
    sock.send(message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK, seq))
    for kind, payload in messages(sock.recv(65536)):
        if kind == NLMSG_ERROR:
            (error,) = struct.unpack_from("=i", payload, 0)
            if error != 0:
                sys.exit(f"nfq-delay: configuring queue {queue} failed: {os.strerror(-error)}")


def main():
    queue, delay = int(sys.argv[1]), float(sys.argv[2]) / 1000
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    configure(sock, queue, [attribute(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, socket.htons(socket.AF_INET)))], 1)
    configure(sock, queue, [attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)),
                            attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN))], 2)
    print(f"nfq-delay: queue {queue}, {delay * 1000:.0f} ms", flush=True)
    due = []  # (time, packet id), in arrival order
    while True:
        timeout = max(0.0, due[0][0] - time.monotonic()) if due else None
        readable, _, _ = select.select([sock], [], [], timeout)
        if readable:
            try:
                data = sock.recv(1 << 20)
            except OSError:  # ENOBUFS: the kernel dropped some; those packets are lost, as under load
                continue
            now = time.monotonic()
            for kind, payload in messages(data):
                if kind != (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                    continue
                for attr, value in attributes(payload):
                    if attr == NFQA_PACKET_HDR:
                        (packet,) = struct.unpack_from("!I", value, 0)
                        heapq.heappush(due, (now + delay, packet))
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, packet = heapq.heappop(due)
            sock.send(message(NFQNL_MSG_VERDICT, queue, [attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet))]))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
