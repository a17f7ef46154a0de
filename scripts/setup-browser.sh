#!/usr/bin/env bash
# Installs Chromium (Debian package) for the leaderboard page tests, which render the built
# static site headless and check its rows. Idempotent: does nothing when a chromium binary is
# already on PATH. Prints the binary's path on stdout so CI can export RSR_CHROMIUM.
set -euo pipefail
log() { printf '[setup-browser] %s\n' "$*" >&2; }

find_chromium() {
  for bin in "${RSR_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    [ -n "$bin" ] || continue
    if command -v "$bin" >/dev/null 2>&1; then command -v "$bin"; return 0; fi
  done
  return 1
}

if path="$(find_chromium)"; then
  log "chromium already installed: $path"
  echo "$path"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "must run as root to install chromium (apt-get install -y chromium)"; exit 2
fi

log "installing chromium from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
path="$(find_chromium)" || { log "chromium installed but not found on PATH"; exit 1; }
# A smoke run proves the binary starts headless on this machine (missing shared libs show here).
"$path" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run \
  --user-data-dir="$(mktemp -d)" --dump-dom 'data:text/html,<p id=ok>ok</p>' 2>/dev/null \
  | grep -q 'id="ok"' || { log "chromium failed its headless smoke run"; exit 1; }
log "chromium ready: $path"
echo "$path"
