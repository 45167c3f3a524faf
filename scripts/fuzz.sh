#!/usr/bin/env bash
# Builds each libFuzzer target and runs it for SECONDS (default 180) from the
# committed seed corpus. Prints executions and crashes per target; exits
# non-zero if any target crashed. Crash inputs land in fuzz-out/<target>/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-180}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(frames handshake envelope announcement link gossip overlay ui accounts)
export SWIFT_BACKTRACE=enable=no
failed=0
summary=()
for t in "${targets[@]}"; do
  product="fuzz-$t"
  # Optimized (3x the executions of a debug build); -enable-testing for the targets that reach internals.
  if ! swift build -c release -Xswiftc -enable-testing --sanitize fuzzer --product "$product" --scratch-path .build/fuzz \
      >/tmp/peernode-fuzz-build.log 2>&1; then
    cat /tmp/peernode-fuzz-build.log >&2
    echo "fuzz: building $product failed" >&2
    exit 1
  fi
  work=".build/fuzz-corpus/$t"
  out="fuzz-out/$t"
  mkdir -p "$work" "$out"
  log=".build/fuzz-$t.log"
  # The committed seeds stay read-only; new inputs go to the work corpus.
  .build/fuzz/release/"$product" "$work" "Fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$out/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
  crashes=$(ls "$out" 2>/dev/null | grep -c -E '^(crash|leak|timeout|oom)-' || true)
  summary+=("$t: $runs executions, $crashes crashes (rc $rc)")
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    tail -30 "$log" >&2
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $failed
