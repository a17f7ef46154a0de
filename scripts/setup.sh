#!/usr/bin/env bash
# One-time (idempotent) setup on a fresh Debian 12 machine: Docker engine + Compose v2 + base
# image, the Python environment in .venv with every extra, and Chromium for the page tests.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[setup] %s\n' "$*" >&2; }

if [ "$(id -u)" = 0 ]; then
  bash rsr/sandbox/setup-docker.sh
else
  sudo bash rsr/sandbox/setup-docker.sh
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PYTHON" -m venv .venv
fi
STAMP=.venv/.rsr-installed
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  log "installing rsr with extras [dev,train,report] (torch 2.13.0 CPU comes from local disk)"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  # torch first, pinned, so no other package can pull a CUDA build.
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -e '.[dev,train,report]'
  touch "$STAMP"
fi

if [ -x scripts/setup-browser.sh ]; then
  if [ "$(id -u)" = 0 ]; then bash scripts/setup-browser.sh >/dev/null; else sudo bash scripts/setup-browser.sh >/dev/null; fi
fi
log "ready: $(.venv/bin/rsr doctor >/dev/null 2>&1 && echo 'rsr doctor ok' || echo 'rsr doctor reports problems')"
