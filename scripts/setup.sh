#!/usr/bin/env bash
# One-time (idempotent) setup on a fresh Debian 12 machine: Docker engine + Compose v2 + base
# image, the Python environment in .venv with every extra, and Chromium for the page tests.
# Prints one line per step with its duration and the total; the apt, pip and debootstrap output
# goes to .cache/setup.log (or $RSR_SETUP_LOG), whose last lines are shown if a step fails.
#   RSR_VENV=DIR   the virtual environment to create or update (default .venv)
#   PYTHON=EXE     the interpreter that creates it (default python3)
#   --engine       also the inference engine's environment, .venv-engine (scripts/setup-engine.sh:
#                  vLLM with its own torch; CPU build here, the regular vllm on a GPU machine)
set -euo pipefail
ENGINE=0
for arg in "$@"; do
  case "$arg" in
    --engine) ENGINE=1 ;;
    *) echo "setup.sh: unknown option '$arg' (known: --engine)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
# shellcheck source=../rsr/sandbox/setup-progress.sh
source rsr/sandbox/setup-progress.sh
progress_begin setup "${RSR_CACHE_DIR:-$PWD/.cache}/setup.log"

as_root() {
  # sudo drops the environment: hand the shared log and clock on explicitly.
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo env RSR_SETUP_LOG="$RSR_SETUP_LOG" RSR_SETUP_T0="$RSR_SETUP_T0" "$@"; fi
}

as_root bash rsr/sandbox/setup-docker.sh

PYTHON="${PYTHON:-python3}"
VENV="${RSR_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  progress_step "creating $VENV ($("$PYTHON" --version 2>&1))" "$PYTHON" -m venv "$VENV"
fi
STAMP="$VENV/.rsr-installed"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  pip=("$VENV/bin/pip" install --progress-bar off)
  progress_step "upgrading pip" "${pip[@]}" --upgrade pip
  # torch first, pinned, so no other package can pull a CUDA build.
  progress_step "installing torch 2.13.0 (CPU build, from local disk)" "${pip[@]}" "torch==2.13.0"
  progress_step "installing rsr with extras [dev,train,report] (editable)" "${pip[@]}" -e '.[dev,train,report]'
  touch "$STAMP"
else
  progress_note "python packages in $VENV are up to date with pyproject.toml"
fi
# The editable build leaves rsr.egg-info in the checkout. From the checkout's root (on sys.path)
# that copy shadows the installed metadata, Inspect then registers rsr's tasks without their
# `rsr/` prefix and `rsr eval run` fails with "rsr/core was not found in the registry".
rm -rf rsr.egg-info

if [ -x scripts/setup-browser.sh ]; then
  as_root bash scripts/setup-browser.sh >/dev/null
fi

if [ "$ENGINE" = 1 ]; then
  bash scripts/setup-engine.sh
fi

if "$VENV/bin/rsr" doctor >>"$RSR_SETUP_LOG" 2>&1; then
  progress_note "rsr doctor: all checks pass"
else
  progress_note "rsr doctor reports problems: run \`$VENV/bin/rsr doctor\` to see them"
fi
progress_end "ready"
