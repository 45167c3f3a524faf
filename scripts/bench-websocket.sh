#!/usr/bin/env bash
# WebSocket echo benchmark: ours, libwebsockets, Node ws and Python websockets,
# side by side in one run on loopback, driven by the same lean C load
# generator (Benchmarks/websocket/wsload.c). Prints messages/s per case, the
# ratio of ours to each peer, ping-pong latency, and our server's peak memory.
# Usage: scripts/bench-websocket.sh [SECONDS_PER_RUN] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-3}"
runs="${2:-3}"
out=.build/bench
mkdir -p "$out"
gcc -O2 -Wall -o "$out/wsload" Benchmarks/websocket/wsload.c
gcc -O2 -Wall -o "$out/lws_echo" Benchmarks/websocket/lws_echo.c -lwebsockets
swift build -c release --product peernode-ws-echo >/dev/null
swift build -c release --product peernode >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME COMMAND...: runs a server that prints "PORT n"; sets $port and $pid.
start() {
  local name=$1; shift
  "$@" >"$out/$name.out" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    port=$(awk '/^PORT /{print $2; exit}' "$out/$name.out")
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  echo "bench: $name did not start:" >&2
  cat "$out/$name.out" >&2
  exit 1
}

cases=("1 1 64" "1 64 64" "32 16 256" "1 16 65536")
labels=("1 conn ping-pong 64 B" "1 conn 64 pipelined 64 B" "32 conns x 16 in flight 256 B" "1 conn x 16 in flight 64 KiB")

# measure PORT CASE: median messages/s over $runs runs (and, for ping-pong, latency of the median run).
measure() {
  local port=$1 c=$2 results=()
  for _ in $(seq "$runs"); do
    results+=("$("$out/wsload" 127.0.0.1 "$port" $c "$seconds")")
  done
  printf '%s\n' "${results[@]}" | sort -t= -k2 -n | sed -n "$(( (runs + 1) / 2 ))p"
}

declare -A rate p50 p99
servers=(ours lws node python)
peak_kb=0
for s in "${servers[@]}"; do
  case $s in
    ours) start ours .build/release/peernode-ws-echo 0 ;;
    lws) p=$(free_port); start lws "$out/lws_echo" "$p" ;;
    node) start node env NODE_PATH=/usr/share/nodejs node Benchmarks/websocket/node_echo.js ;;
    python) start python .build/peers-venv/bin/python Benchmarks/websocket/py_echo.py ;;
  esac
  for i in "${!cases[@]}"; do
    line=$(measure "$port" "${cases[$i]}")
    rate[$s,$i]=$(sed -E 's/.*messages_per_second=([0-9.]+).*/\1/' <<<"$line")
    p50[$s,$i]=$(sed -E 's/.*p50_us=([0-9.]+).*/\1/' <<<"$line")
    p99[$s,$i]=$(sed -E 's/.*p99_us=([0-9.]+).*/\1/' <<<"$line")
    if [ "$s" = ours ] && [ "$i" = 2 ]; then
      peak_kb=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
    fi
  done
  kill "$pid" 2>/dev/null || true
done

echo "WebSocket echo on loopback — $(nproc) cores shared by server and load generator; median of $runs runs of ${seconds}s"
printf '%-32s %12s %12s %12s %12s   %8s %8s %8s\n' "case (messages/s)" ours libwebsockets "node ws" "py websockets" "vs lws" "vs node" "vs py"
for i in "${!cases[@]}"; do
  o=${rate[ours,$i]}
  printf '%-32s %12.0f %12.0f %12.0f %12.0f   %7.2fx %7.2fx %7.2fx\n' "${labels[$i]}" "$o" "${rate[lws,$i]}" "${rate[node,$i]}" "${rate[python,$i]}" \
    "$(echo "$o / ${rate[lws,$i]}" | bc -l)" "$(echo "$o / ${rate[node,$i]}" | bc -l)" "$(echo "$o / ${rate[python,$i]}" | bc -l)"
done
printf '%-32s %12s %12s %12s %12s\n' "ping-pong latency p50 / p99 us" "${p50[ours,0]}/${p99[ours,0]}" "${p50[lws,0]}/${p99[lws,0]}" "${p50[node,0]}/${p99[node,0]}" "${p50[python,0]}/${p99[python,0]}"
echo "our server's peak memory (VmHWM) after the 32-connection case: ${peak_kb} kB"
# A node's link round trip in /peers (a WebSocket ping on a Noise link
# between two nodes), beside the ping-pong above; issue 15: within 2x.
rtt=$(python3 scripts/link-rtt.py .build/release/peernode)
ratio=$(echo "$rtt / ${p50[ours,0]}" | bc -l)
printf 'link round trip in /peers: %s us = %.2fx our ping-pong p50 (aim: within 2x: %s)\n' "$rtt" "$ratio" \
  "$(echo "$ratio <= 2" | bc -l | sed 's/1/met/;s/0/NOT met/')"
# The probe goes between two idle nodes, the ping-pong above runs hot: what
# two wake-ups from idle cost on this machine, measured now (no WebSocket, no node),
# and a WebSocket ping to our echo server when it was idle, like the probe.
read -r cold hot <<<"$(python3 scripts/wake-floor.py)"
printf 'round trip between two idle processes on this machine (socketpair, least of 25): %s us, back to back %s us: the probe pays %s us of wake-ups\n' \
  "$cold" "$hot" "$((cold - hot))"
start ours-cold .build/release/peernode-ws-echo 0
cold_ping=$(python3 scripts/cold-ping.py "$port")
cold_ratio=$(echo "$rtt / $cold_ping" | bc -l)
printf 'a WebSocket ping to our echo server while it was idle (least of 25, 0.2 s apart): %s us; the /peers round trip is %.2fx that\n' \
  "$cold_ping" "$cold_ratio"
