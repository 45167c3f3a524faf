#!/usr/bin/env bash
# Installs the Debian packages peernode needs, when they are missing.
# Usage: scripts/setup-system.sh run|test
#   run  — what building and running a node needs
#   test — that, plus what the tests use (the sqlite3 shell, python3-venv,
#          systemd-analyze for the unit, tcpdump for the capture test,
#          chromium for the web page, gdb for a hung test's stacks, ...)
#   bench — test's packages, plus libwebsockets-dev, gcc and bc (WebSocket benchmark), mosquitto (relay benchmark), nginx-light and curl (files benchmark), linux-perf (the hop's timeline)
# Runs apt-get as root, or through sudo when that works without a password
# prompt; otherwise it stops with a plain message naming the packages.
set -euo pipefail

mode="${1:-run}"
packages=(libsodium-dev libsqlite3-dev pkg-config)
if [ "$mode" = "test" ] || [ "$mode" = "bench" ]; then
  packages+=(sqlite3 python3 python3-venv python3-cryptography strace nodejs node-ws iproute2 iptables systemd tcpdump chromium gdb)
fi
if [ "$mode" = "bench" ]; then
  packages+=(libwebsockets-dev gcc bc mosquitto nginx-light curl linux-perf)
fi
# Tests of this script add packages here (e.g. one that does not exist).
read -r -a extra <<< "${PEERNODE_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "peernode needs these Debian packages: ${missing[*]}" >&2
  echo "Install them as root (apt-get install ${missing[*]}) or run make as a user with sudo." >&2
  exit 1
fi

echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
