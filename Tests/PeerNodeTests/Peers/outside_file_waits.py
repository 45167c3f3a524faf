#!/usr/bin/env python3
"""An ask for a chunk the node is still fetching (docs/PROTOCOL.md §16, "On
the link"), from the document alone, against a real node. P offers a file
and serves it when we say; the node fetches it; Q asks the node for chunks:
  - a chunk the node asked P for and does not hold yet is not answered at
    once: the ask waits, and is answered with the chunk as soon as it came;
  - one P never serves is answered none once it waited 0.5 s (looked at
    every 0.25 s, so within 0.75 s), not before;
  - one the node asked nobody for yet is answered none at once.
Prints "ok NAME" per check and "ALL OK" at the end; exits 1 otherwise.
usage: outside_file_waits.py PEERNODE
"""
import os
import sys
import time

from checks import check, run_checks, scratch
from outside_files import chunk_message, linked, offered_and_got, proof, read_chunk, read_indices, read_want, want
from outside_link import Node

PATIENCE = 0.5      # WaitingAsks.patience


def read_want_indices(m):
    return read_indices(m)[1]
LOOKED_EVERY = 0.25


async def main():
    node = Node(os.path.abspath(sys.argv[1]))
    await node.start("--no-discovery")
    work = scratch("outside-file-waits-")
    try:
        p_me, p = await linked(node)
        data = os.urandom(40 * 64_000)
        got = await offered_and_got(node, p_me, p, data, "waited.bin", work)
        if not got:
            check("the node shows P's offer", False, "not shown")
            return
        sealed, tree, root, first = got
        asked_of_p = set(read_want(first)[2]) if first else set()
        check("the node asks P for the first chunks", {0, 1, 2, 3} <= asked_of_p, sorted(asked_of_p))
        q_me, q = await linked(node)

        def answer_to(index):
            def match(m):
                if m[0] == 14 and m[1:33] == root and read_chunk(m)[1] == index:
                    return ("chunk", m)
                if m[0] == 15 and m[1:33] == root:
                    return ("none", m)
                return None
            return match

        # 1. Chunk 0, asked of P, not here yet: Q's ask waits, and is answered as soon as P serves it. (P's
        # chunk goes well before the ask would be given up; on a machine so loaded that the node took it in
        # only after the patience, the answer is a none, and the same is tried once more with chunk 3.)
        for index in (0, 3):
            await q.send(want(root, len(data), [index]))
            early = await q.until(answer_to(index), PATIENCE * 0.3)
            await p.send(chunk_message(root, index, proof(index, tree), sealed[index]))
            started = time.monotonic()
            got = await q.until(answer_to(index), 5)
            took = time.monotonic() - started
            if early is not None or got is None or got[0] == "chunk":
                break
        check("an ask for a chunk the node asked another for is not answered at once", early is None, early)
        check(f"it is answered with the chunk once it came and verified (here {took:.2f} s after)", got is not None and got[0] == "chunk"
              and read_chunk(got[1])[3] == sealed[index], (got and got[0], round(took, 3)))

        # 2. Chunk 1, asked of P, which never serves it: none once the ask waited the patience, not before.
        started = time.monotonic()
        await q.send(want(root, len(data), [1]))
        got = await q.until(answer_to(1), 5)
        took = time.monotonic() - started
        # Not before the patience; the upper bound leaves a loaded machine room (what it rules out is an ask left
        # to the asker's own 15 s timeout).
        check(f"one never served is answered none after waiting 0.5 s (within 0.75 s on a quiet machine; here {took:.2f} s)",
              got is not None and got[0] == "none" and PATIENCE - 0.05 <= took <= PATIENCE + LOOKED_EVERY + 1.5, (got and got[0], round(took, 3)))

        # 3. A chunk past everything asked so far (asked of nobody, or of Q itself): none at once, so before the
        # answer to an ask sent just after it for a chunk asked of P (which waits the patience).
        last = len(sealed) - 1
        await q.send(want(root, len(data), [last]))
        await q.send(want(root, len(data), [2]))
        order = []

        def answers(m):
            if m[1:33] == root and m[0] in (14, 15):
                order.append(read_chunk(m)[1] if m[0] == 14 else ("none", tuple(sorted(read_want_indices(m)))))
            return len(order) >= 2 or None
        await q.until(answers, 5)
        check("a chunk asked of nobody yet is answered none at once, before an ask waiting for P sent after it",
              order[:1] == [("none", (last,))], order)
        await p.close()
        await q.close()
    finally:
        status = await node.stop()
    check("the node stops cleanly (status 0)", status == 0, status)


run_checks(main, 120)
