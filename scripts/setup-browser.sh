#!/usr/bin/env bash
# Installs Chromium (Debian package) for the leaderboard page tests, which render the built
# static site headless and check its rows. Idempotent: does nothing when a chromium binary is
# already on PATH. Prints the binary's path on stdout so CI can export RSR_CHROMIUM; progress
# goes to stderr, apt's output to the set-up log (see rsr/sandbox/setup-progress.sh).
set -euo pipefail
# shellcheck source=../rsr/sandbox/setup-progress.sh
source "$(dirname "$0")/../rsr/sandbox/setup-progress.sh"
progress_begin setup-browser "${RSR_CACHE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache}/setup.log"

find_chromium() {
  for bin in "${RSR_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    [ -n "$bin" ] || continue
    if command -v "$bin" >/dev/null 2>&1; then command -v "$bin"; return 0; fi
  done
  return 1
}

if path="$(find_chromium)"; then
  progress_note "chromium present: $path"
  progress_end "browser ready"
  echo "$path"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  progress_note "must run as root to install chromium (apt-get install -y chromium)"; exit 2
fi

install_chromium() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends chromium fonts-dejavu-core
}

# A smoke run proves the binary starts headless on this machine (missing shared libs show here).
smoke_run() {
  local path; path="$(find_chromium)" || { echo "chromium installed but not found on PATH"; exit 1; }
  "$path" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$(mktemp -d)" --dump-dom 'data:text/html,<p id=ok>ok</p>' >"$1"
  grep -q 'id="ok"' "$1" || { echo "chromium's headless page lacks the marker:"; cat "$1"; exit 1; }
}

progress_step "installing chromium and fonts-dejavu-core (apt)" install_chromium
progress_step "checking that chromium renders a page headless" smoke_run "$(mktemp)"
path="$(find_chromium)"
progress_note "chromium ready: $path"
progress_end "browser ready"
echo "$path"
