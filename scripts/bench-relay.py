#!/usr/bin/env python3
"""Relay benchmarks, beside mosquitto in the same run.

- fan-out: one sender and a relay; LINKS receiving links opened by one lean
  receiver process (Noise handshake, counts envelopes, no signature checks);
  a burst of COUNT messages of 256 bytes: deliveries/s in total (its latency
  is queueing). Then the same with mosquitto (QoS 0, LINKS subscribers, the
  same kind of lean receiver: one process, one thread, poll(2); TCP_NODELAY
  on the broker as on our links). Printed as a ratio.
- paced: for each rate in RATES (messages/s; BENCH_RELAY_RATES, default
  250 to 20,000, and 0.7× the model's ceiling, the aim's rate), 2 seconds of messages sent one at a time to the same LINKS: p50 and p99 latency from send to arrival, for
  both (a rate sweep: where latency starts to grow is the figure to watch).
- memory and start-up: a relay on a store of STORE envelopes: time from
  start to its "relay ready" log line, then RSS with 100 idle links open.
usage: bench-relay.py PEERNODE BENCH [COUNT] [LINKS] [STORE]
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchnodes import free_port, rss_kib, start_relay  # noqa: E402

PEERNODE, BENCH = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
COUNT = int(sys.argv[3]) if len(sys.argv) > 3 else 20_000
LINKS = int(sys.argv[4]) if len(sys.argv) > 4 else 50
STORE = int(sys.argv[5]) if len(sys.argv) > 5 else 1_000_000
# The paced runs: SECONDS of messages at each rate, one at a time.
RATES = [int(r) for r in os.environ.get("BENCH_RELAY_RATES", "250,1000,4000,8000,12000,20000").split(",")]
SECONDS = 2
# The aim says "sustains": the aim's rate once more for this long, beside the sweep's 2-second runs
# (on this machine 2-second runs at 0.7x held p99 <= 50 ms where 6-second runs at 0.6x often did not:
# the WAL checkpoints, about one a second at these rates, make the relay loop's own WAL syncs and
# writes wait; docs/SCALE.md, "A relay held to sustains").
SUSTAINED_SECONDS = int(os.environ.get("BENCH_RELAY_SUSTAINED", "8"))
# Issue 15's aim: 20,000 messages/s to 50 links with p99 ≤ 50 ms.
AIM_RATE, AIM_P99_MS = 20_000, 50
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def held(run, rate, seconds):
    """Whether a paced run kept the aim: p99 within AIM_P99_MS and every delivery made."""
    return run["p99_ms"] <= AIM_P99_MS and run["deliveries"] == rate * seconds * LINKS


def relay_stages(metrics):
    """The relay's time per stage from its /metrics (median and p99 in µs, runs), one line: what holds
    it, stage by stage, beside the model's ceiling (issue 41)."""
    import urllib.request
    try:
        text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
    except OSError as error:
        return f"(its /metrics did not answer: {error})"
    stages = {}
    for line in text.splitlines():
        if not line.startswith("peernode_stage_seconds"):
            continue
        name, value = line.rsplit(" ", 1)
        stage = name.split('stage="')[1].split('"')[0]
        entry = stages.setdefault(stage, {})
        if 'quantile="0.5"' in name:
            entry["p50"] = float(value) * 1e6
        elif 'quantile="0.99"' in name:
            entry["p99"] = float(value) * 1e6
        elif name.startswith("peernode_stage_seconds_count"):
            entry["count"] = int(float(value))
        elif name.startswith("peernode_stage_seconds_sum"):
            entry["sum"] = float(value)
    return ", ".join(f"{stage} {e.get('p50', 0):.0f}/{e.get('p99', 0):.0f} µs ×{e.get('count', 0):,} (total {e.get('sum', 0):.2f} s)"
                     for stage, e in sorted(stages.items(), key=lambda kv: -kv[1].get("sum", 0)))


def worst_tenths(run):
    """Where a run's tail came from: its three worst tenths of a second (the receivers' largest latency in
    each), and how many tenths passed the aim's p99, out of how many."""
    tenths = run.get("worst_ms_by_tenth", [])
    if not tenths:
        return "no tenths recorded"
    worst = sorted(range(len(tenths)), key=lambda i: -tenths[i])[:3]
    over = sum(1 for t in tenths if t > AIM_P99_MS)
    return (f"its worst tenths of a second {', '.join(f'{tenths[i]} ms at {i / 10:.1f} s' for i in worst)}, "
            f"{over} of {len(tenths)} tenths with a message past {AIM_P99_MS} ms")


def wait_linked(process):
    line = process.stderr.readline()
    if "linked" not in line:
        sys.exit(f"bench-relay: lean peer did not link: {line.strip()}")


def fan_out(receive_cmd, send_cmd):
    receiver = subprocess.Popen(receive_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_linked(receiver)
    sender = subprocess.Popen(send_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_linked(sender)
    result = json.loads(receiver.stdout.readline())
    receiver.wait()
    sender.wait()
    return result


root = tempfile.mkdtemp(prefix="peernode-bench-relay-")
try:
    # The model (issue 41): what the primitives allow a relay to 50 links on this machine, measured now.
    model_out = subprocess.run([BENCH, "hop-ceiling", root], check=True, capture_output=True, text=True).stdout.strip().split("\n")
    print("model: " + next(line for line in model_out if line.startswith("ceiling, a relay")))
    # Beside it, what a write to one of 50 links costs as a paced relay makes them (a message or a few each).
    print("beside the model: " + next(line for line in model_out if line.startswith("writes to 50")))
    words = model_out[-1].split()
    # The benchmark's whole setup on the same 2 cores: the relay, its 50 receivers and its paced sender
    # (woken for each message, which it link-seals and writes alone; it signs before the run). Without the
    # sender, as the model stood before.
    relay_ceiling = float(words[words.index("relay50-bench-per-s") + 1])
    relay_ceiling_receivers = float(words[words.index("relay50-per-s") + 1])
    # The same with no verify counted a message (version 4: a run that waited together costs one).
    relay_ceiling_runs = float(words[words.index("relay50-bench-runs-per-s") + 1])
    print("model with version-4 runs: " + next(line for line in model_out if line.startswith("ceiling with version-4 runs")))
    # The aim's own rate, 0.7× the model measured now, is among the paced ones: the sweep's steps alone
    # would put "held" a step below it or above it. Rounded up to a hundred, never down: a rate a few
    # messages under 0.7× (5,500/s of a 7,873/s model) is below the aim even when it is held.
    aim_share = int(math.ceil(0.7 * relay_ceiling / 100) * 100)
    if aim_share not in RATES:
        RATES.append(aim_share)
        RATES.sort()
    expected = COUNT * LINKS
    metrics = f"127.0.0.1:{free_port()}"
    relay, listen, _ = start_relay(PEERNODE, os.path.join(root, "relay"), "--metrics-listen", metrics)
    ours = fan_out([BENCH, "fanout-receive", listen, str(LINKS), str(expected), "120"],
                   [BENCH, "fanout-send", listen, str(COUNT)])
    burst_stages = relay_stages(metrics)
    relay.terminate()
    relay.wait()
    # Paced, on a fresh relay (so nothing from the burst is sent again): live chat's
    # shape, one message at a time; latency here is delivery, not queueing.
    ours_paced, paced_stages = {}, {}
    for rate in RATES:
        metrics = f"127.0.0.1:{free_port()}"
        relay, listen, _ = start_relay(PEERNODE, os.path.join(root, f"relay-paced-{rate}"), "--metrics-listen", metrics)
        ours_paced[rate] = fan_out([BENCH, "fanout-receive", listen, str(LINKS), str(rate * SECONDS * LINKS), "60"],
                                   [BENCH, "fanout-send", listen, str(rate * SECONDS), str(rate)])
        paced_stages[rate] = relay_stages(metrics)
        relay.terminate()
        relay.wait()
    sustained = None
    if SUSTAINED_SECONDS > 0:
        metrics = f"127.0.0.1:{free_port()}"
        relay, listen, _ = start_relay(PEERNODE, os.path.join(root, "relay-sustained"), "--metrics-listen", metrics)
        sustained = fan_out([BENCH, "fanout-receive", listen, str(LINKS), str(aim_share * SUSTAINED_SECONDS * LINKS), "90"],
                            [BENCH, "fanout-send", listen, str(aim_share * SUSTAINED_SECONDS), str(aim_share)])
        sustained_stages = relay_stages(metrics)
        relay.terminate()
        relay.wait()

    port = free_port()
    conf = os.path.join(root, "mosquitto.conf")
    with open(conf, "w") as f:
        # TCP_NODELAY on the broker too, as on every link of ours: a fair latency figure.
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n")
    broker = subprocess.Popen([MOSQUITTO, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    theirs = fan_out([BENCH, "mqtt-receive", f"127.0.0.1:{port}", str(LINKS), str(expected), "120"],
                     [BENCH, "mqtt-send", f"127.0.0.1:{port}", str(COUNT)])
    theirs_paced = {rate: fan_out([BENCH, "mqtt-receive", f"127.0.0.1:{port}", str(LINKS), str(rate * SECONDS * LINKS), "60"],
                                  [BENCH, "mqtt-send", f"127.0.0.1:{port}", str(rate * SECONDS), str(rate)]) for rate in RATES}
    # (mosquitto keeps nothing at QoS 0, so the same broker serves both runs.)
    broker.terminate()
    broker.wait()

    per_second = lambda r: r["deliveries"] / r["seconds"]
    for name, r in (("relay", ours), ("mosquitto", theirs)):
        print(f"fan-out {name}: {r['deliveries']:,} of {expected:,} deliveries to {r['links']} links in {r['seconds']:.2f} s = "
              f"{per_second(r):,.0f}/s; latency p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms (a burst of {COUNT:,} messages of 256 bytes)")
    for rate in RATES:
        for name, r in (("relay", ours_paced[rate]), ("mosquitto", theirs_paced[rate])):
            print(f"paced {name}: {r['deliveries']:,} of {rate * SECONDS * LINKS:,} deliveries at {rate:,} messages/s to {r['links']} links "
                  f"({rate * LINKS:,} deliveries/s); latency p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms (ms resolution)")
    print(f"relay stages in the burst (median/p99 per run, the largest total first): {burst_stages}")
    for rate in RATES:
        print(f"relay stages paced at {rate:,}/s: {paced_stages[rate]}")
    def knee(paced):
        """The first rate whose p99 passes the aim or that loses deliveries."""
        bad = [rate for rate in RATES if not held(paced[rate], rate, SECONDS)]
        return f"{bad[0]:,}/s" if bad else f"none up to {RATES[-1]:,}/s"
    print(f"knee (first rate with p99 > {AIM_P99_MS} ms or deliveries lost): relay {knee(ours_paced)}, mosquitto {knee(theirs_paced)}")
    best = max((rate for rate in RATES if held(ours_paced[rate], rate, SECONDS)), default=0)
    burst = per_second(ours) / LINKS
    print(f"aim (issue 41): the relay holds ≥ 0.7× the model's ceiling ({relay_ceiling:,.0f} messages/s to 50 links, its receivers and its sender on the same cores) "
          f"with p99 ≤ {AIM_P99_MS} ms: {'met' if best >= 0.7 * relay_ceiling else 'NOT met'} (the highest paced rate held: {best:,}/s = "
          f"{best / relay_ceiling:.2f}× it, {best / relay_ceiling_receivers:.2f}× the ceiling with the receivers alone, {relay_ceiling_receivers:,.0f}/s; "
          f"the burst's rate, {burst:,.0f}/s, is {burst / relay_ceiling:.2f}× it); against the model with no verify a message "
          f"({relay_ceiling_runs:,.0f}/s): {best / relay_ceiling_runs:.2f}×, the burst {burst / relay_ceiling_runs:.2f}×")
    if sustained:
        print(f"aim (issue 41), sustained: {aim_share:,}/s ({aim_share / relay_ceiling:.2f}× the model) for {SUSTAINED_SECONDS} s: "
              f"{sustained['deliveries']:,} of {aim_share * SUSTAINED_SECONDS * LINKS:,} delivered, latency p50 {sustained['p50_ms']} ms, "
              f"p99 {sustained['p99_ms']} ms: {'met' if held(sustained, aim_share, SUSTAINED_SECONDS) else 'NOT met'} "
              f"(the 2-second run above at the same rate is the sweep's); {worst_tenths(sustained)}; its stages: {sustained_stages}")
    if AIM_RATE in ours_paced:
        r = ours_paced[AIM_RATE]
        print(f"aims: {AIM_RATE:,} messages/s to {LINKS} links with p99 ≤ {AIM_P99_MS} ms: {'met' if held(r, AIM_RATE, SECONDS) else 'NOT met'} "
              f"(p99 {r['p99_ms']} ms, {r['deliveries']:,} of {AIM_RATE * SECONDS * LINKS:,} delivered)")
    ratio = per_second(ours) / per_second(theirs)
    print(f"fan-out ratio relay/mosquitto: {ratio:.2f}x (the relay verifies, stores and encrypts per link; mosquitto QoS 0 does none)")
    print(f"aims: ≥ 0.5x mosquitto: {'met' if ratio >= 0.5 else 'NOT met'} ({ratio:.2f}x)")

    # Memory and start-up with a big store.
    store = os.path.join(root, "big")
    subprocess.run([BENCH, "make-store", store, str(STORE)], check=True, stdout=subprocess.DEVNULL)
    # The store is made as a node keeps it: a relay's first start on it drops the index of
    # message ids (once; docs/DECISIONS.md). What is measured is a relay's start on its own store.
    relay, _, first_start = start_relay(PEERNODE, store)
    relay.terminate()
    relay.wait()
    relay, listen, startup = start_relay(PEERNODE, store)
    # Idle links: they send no clock, so the relay sends them nothing.
    idle = subprocess.Popen([BENCH, "fanout-receive", listen, "100", "0", "6"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    wait_linked(idle)
    time.sleep(1)
    rss = rss_kib(relay.pid) / 1024
    idle.kill()
    idle.wait()
    relay.terminate()
    relay.wait()
    print(f"relay with {STORE:,} envelopes stored: start to ready {startup * 1000:.0f} ms (its first on a store a node made: "
          f"{first_start * 1000:.0f} ms, dropping the index of ids); RSS with 100 links {rss:.1f} MB")
    print(f"aims: start-up ≤ 300 ms: {'met' if startup <= 0.3 else 'NOT met'}; RSS ≤ 60 MB: {'met' if rss <= 60 else 'NOT met'}")
finally:
    shutil.rmtree(root, ignore_errors=True)
