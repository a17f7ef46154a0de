#!/usr/bin/env bash
# The whole test suite, Docker sandboxes included (CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --engine
VENV="${RSR_VENV:-.venv}"
# CI has Docker, Chromium, a Python 3.12 for Harbor (the differential tests) and the vLLM engine
# environment (tests/engine): missing ones fail, never skip.
export RSR_REQUIRE_DOCKER=1 RSR_REQUIRE_BROWSER=1 RSR_REQUIRE_HARBOR=1 RSR_REQUIRE_ENGINE=1
"$VENV"/bin/ruff check $(ls -d rsr tests benchmarks 2>/dev/null)
exec "$VENV"/bin/pytest -q -p no:cacheprovider --durations=25 "$@"
