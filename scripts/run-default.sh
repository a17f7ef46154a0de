#!/usr/bin/env bash
# Set up, then run the main job on the built-in default: the core suite under the oracle and
# the null agent through Inspect (every sandbox real), and print the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${RSR_VENV:-.venv}"
"$VENV"/bin/inspect eval rsr/core --solver rsr/oracle --log-dir logs/default "$@"
"$VENV"/bin/inspect eval rsr/core --solver rsr/null --log-dir logs/default "$@"
