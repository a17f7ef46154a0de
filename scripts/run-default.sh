#!/usr/bin/env bash
# Set up, then run the main job on the built-in default: the core suite under the oracle and
# the null agent through Inspect (every sandbox real), and print the summary.
# The core suite's images are built first as one set-up step, their build output in the set-up
# log, so the evals start from prebuilt images and print only their own progress and results.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../rsr/sandbox/setup-progress.sh
source rsr/sandbox/setup-progress.sh
progress_begin run-default "${RSR_CACHE_DIR:-$PWD/.cache}/setup.log"
bash scripts/setup.sh
VENV="${RSR_VENV:-.venv}"
progress_step "building the core suite's images (minutes the first time, seconds once cached)" \
  "$VENV"/bin/rsr tasks check core --only build
progress_end "set-up and images ready"
"$VENV"/bin/inspect eval rsr/core --solver rsr/oracle --tags oracle --log-dir logs/default --sandbox-prebuilt "$@"
"$VENV"/bin/inspect eval rsr/core --solver rsr/null --tags null --log-dir logs/default --sandbox-prebuilt "$@"
