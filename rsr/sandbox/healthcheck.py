"""Harbor's readiness check as a shell script: run the command until it passes; failures inside
the start period do not count, `retries` consecutive failures after it fail (exit 1).

Used before the agent (the environment's healthcheck) and before each step of a multi-step task
(the step's own)."""

from __future__ import annotations

import math
import shlex

from rsr.tasks.models import HealthcheckSection

HEALTHCHECK_SCRIPT = """
rsr_hc_cmd={command}
rsr_hc_run() {{
  if command -v bash >/dev/null 2>&1; then set -- bash -c "$rsr_hc_cmd"; else set -- sh -c "$rsr_hc_cmd"; fi
  if command -v timeout >/dev/null 2>&1; then timeout {timeout} "$@"; else "$@"; fi
}}
rsr_hc_start=$(date +%s); rsr_hc_fails=0
until rsr_hc_run >/dev/null 2>&1; do
  if [ $(( $(date +%s) - rsr_hc_start )) -lt {start_period} ]; then sleep {start_interval}; continue; fi
  rsr_hc_fails=$((rsr_hc_fails + 1))
  if [ "$rsr_hc_fails" -ge {retries} ]; then
    echo "healthcheck failed after {retries} consecutive retries: $rsr_hc_cmd" >&2; exit 1
  fi
  sleep {interval}
done
"""


def healthcheck_script(hc: HealthcheckSection) -> str:
    return HEALTHCHECK_SCRIPT.format(
        command=shlex.quote(hc.command), timeout=max(1, math.ceil(hc.timeout_sec)),
        start_period=math.ceil(hc.start_period_sec), start_interval=f"{hc.start_interval_sec:g}",
        interval=f"{hc.interval_sec:g}", retries=hc.retries)
