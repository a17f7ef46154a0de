"""An interrupted factory run resumes from its ledger without losing or repeating work."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, read_eval_log_samples

from rsr.cli.main import main

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CONFIG = Path(__file__).resolve().parent / "fixtures" / "resume.yaml"


def _wait_for(condition, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_factory_resumes_an_interrupted_execute_stage(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    args = ["factory", "run", str(CONFIG), "--output-dir", str(out)]
    assert main([*args, "--stage", "discover", "--stage", "compress", "--stage", "plan"]) == 0

    # SIGTERM (a batch system's stop, handled as Ctrl-C) while the second execution round (the
    # slow one) is running.
    proc = subprocess.Popen([sys.executable, "-m", "rsr.cli.main", *args, "--stage", "execute"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    logs = out / "logs" / "execute"
    try:
        _wait_for(lambda: any(logs.glob("*execute-r1*.eval")), 240, "round 1 to start")
        time.sleep(3)
        assert proc.poll() is None, proc.communicate()[0]
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "interrupted by SIGTERM" in output and "run the same command again to resume" in output
    interrupted = read_eval_log(next(logs.glob("*execute-r1*.eval")), header_only=True)
    assert interrupted.status in ("cancelled", "started"), interrupted.status
    base = "terminus2~hello-world~e1#k0"
    capsys.readouterr()
    assert main(["factory", "status", str(CONFIG), "--output-dir", str(out)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert list(status["unfinished_samples"]["execute"]) == [f"{base}#m1@1"]

    assert main(args) == 0
    runs: Counter[str] = Counter()
    for log in logs.glob("*.eval"):
        for sample in read_eval_log_samples(log, all_samples_required=False):
            if sample.error is None and sample.scores:
                runs[str(sample.id)] += 1
    # m0 finished before the interruption and was not run again; m1 was run again, once.
    assert runs == {f"{base}#m0": 1, f"{base}#m1": 1}
    assert len(list((out / "logs" / "discover").glob("*.eval"))) == 1

    rows = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert sorted(r["execution_id"] for r in rows) == [f"{base}#m{i}" for i in range(2)]
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["similarity"]["same_runbook"]["pairs"] == 1
