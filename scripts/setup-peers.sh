#!/usr/bin/env bash
# Installs the test peers written by others, if missing:
#   Python `websockets` and `noiseprotocol` (PyPI) into .build/peers-venv, made with Debian's python3;
#   Node's `ws` comes from Debian's node-ws (scripts/setup-system.sh test).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/peers-venv
want_websockets=17.4
want_noise=0.3.1
if ! "$venv/bin/python" -c "import websockets, noise, sys; sys.exit(websockets.__version__ != '$want_websockets')" 2>/dev/null; then
  echo "installing test peers into $venv: websockets==$want_websockets noiseprotocol==$want_noise"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "websockets==$want_websockets" "noiseprotocol==$want_noise"
fi
if ! NODE_PATH=/usr/share/nodejs node -e "require('ws')" 2>/dev/null; then
  echo "Node's ws is missing: scripts/setup-system.sh test installs Debian's node-ws and nodejs" >&2
  exit 1
fi
