#!/usr/bin/env bash
# Set up, then run the main job on the built-in default: the core suite under the oracle and
# the null agent through Inspect (every sandbox real), and end with one verdict line.
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
# Inspect draws its progress only on a terminal; into a file or a pipe, print progress lines.
[ -t 1 ] || export INSPECT_DISPLAY="${INSPECT_DISPLAY:-plain}"
run="logs/default/$(date -u +%Y%m%dT%H%M%SZ)"
echo "== 1/2 oracle: each task's reference solution (solution/solve.sh); every task should pass =="
"$VENV"/bin/inspect eval rsr/core --solver rsr/oracle --tags oracle --log-dir "$run/oracle" --sandbox-prebuilt "$@" || true
echo "== 2/2 null agent: does nothing; every task should fail =="
"$VENV"/bin/inspect eval rsr/core --solver rsr/null --tags null --log-dir "$run/null" --sandbox-prebuilt "$@" || true
echo "== logs: $run/oracle, $run/null =="
"$VENV"/bin/rsr report verdict --oracle "$run/oracle" --null "$run/null"
