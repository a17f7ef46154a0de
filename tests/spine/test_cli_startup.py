"""Light commands start without loading the heavy frameworks. Each case runs in a fresh
interpreter (the way `rsr` starts) and inspects sys.modules at exit: that is the reliable check
on a loaded machine; the wall time is printed for the record, not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("inspect_ai", "pandas", "torch", "transformers")

# Runs the CLI the way the `rsr` console script does, then reports which modules ended up imported.
# Package names are matched exactly: rsr.errors loads the one light module inspect_ai._util.error
# without the inspect_ai package (see there).
_PROBE = """
import json, sys
from rsr.cli.main import main
rc = main(sys.argv[1:])
loaded = sorted(sys.modules)
sys.stderr.write("RSR-PROBE " + json.dumps({"rc": rc, "modules": loaded}) + "\\n")
"""


def _run_probe(*argv: str, code: str = _PROBE) -> tuple[dict, str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    probe = [line for line in done.stderr.splitlines() if line.startswith("RSR-PROBE ")]
    assert done.returncode == 0 and probe, f"probe failed (exit {done.returncode}):\n{done.stderr}"
    return json.loads(probe[-1].removeprefix("RSR-PROBE ")), done.stdout, elapsed


@pytest.mark.parametrize("argv", [["--help"], ["tasks", "--help"], ["doctor", "--help"], ["eval", "--help"],
                                  ["train", "--help"], ["factory", "--help"], ["report", "--help"]])
def test_cli_help_does_not_import_heavy_frameworks(argv: list[str]) -> None:
    result, stdout, elapsed = _run_probe(*argv)
    print(f"rsr {' '.join(argv)}: {elapsed:.2f} s")
    assert result["rc"] == 0
    assert "Usage" in stdout
    assert [m for m in HEAVY if m in result["modules"]] == []


def test_cli_tasks_lint_loads_a_task_without_heavy_frameworks() -> None:
    result, stdout, elapsed = _run_probe("tasks", "lint", "--json", "tasks/core/hello-world")
    print(f"rsr tasks lint tasks/core/hello-world: {elapsed:.2f} s")
    rows = json.loads(stdout)
    assert result["rc"] == 0
    assert [(r["name"], r["status"]) for r in rows] == [("hello-world", "ok")]
    assert [m for m in HEAVY if m in result["modules"]] == []


def test_cli_tasks_lint_reports_an_invalid_task_without_heavy_frameworks(tmp_path: Path) -> None:
    # The error path builds TaskFormatError (an RsrError): it must not drag Inspect in either.
    bad = tmp_path / "bad-task"
    bad.mkdir()
    (bad / "task.toml").write_text("[verifier]\ntimeout_sec = 'soon'\n")
    (bad / "instruction.md").write_text("Do it.\n")
    result, stdout, _ = _run_probe("tasks", "lint", "--json", str(bad))
    rows = json.loads(stdout)
    assert result["rc"] == 1
    assert rows[0]["status"] == "invalid" and rows[0]["errors"]
    assert [m for m in HEAVY if m in result["modules"]] == []


def test_rsr_error_stays_inspects_prerequisite_error_when_inspect_loads_later() -> None:
    # rsr.errors loads Inspect's error module on its own; once Inspect itself is imported, both
    # must share one class, so Inspect's exception hook prints an RsrError without a traceback.
    code = """
import io, json, sys, contextlib
import rsr.errors
assert "inspect_ai" not in sys.modules
import inspect_ai
from inspect_ai._util.error import PrerequisiteError, exception_hook
err = rsr.errors.TaskFormatError("tasks/x/task.toml", "verifier.timeout_sec", "must be a number")
out = io.StringIO()
with contextlib.redirect_stdout(out):
    exception_hook()(type(err), err, None)
sys.stderr.write("RSR-PROBE " + json.dumps({"rc": 0, "modules": [],
    "same": rsr.errors.PrerequisiteError is PrerequisiteError,
    "caught": isinstance(err, PrerequisiteError), "printed": out.getvalue()}) + "\\n")
"""
    result, _, _ = _run_probe(code=code)
    assert result["same"] and result["caught"]
    assert result["printed"].strip() == "tasks/x/task.toml: verifier.timeout_sec: must be a number"
