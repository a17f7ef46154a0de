"""benchmarks/train_throughput.py runs real optimizer steps and reports tokens/s and MFU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_train_throughput_tiny_does_report_tokens_per_second_and_mfu(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/train_throughput.py", "--tiny", "--peak-tflops", "1",
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "tokens/s:" in done.stdout and "MFU:" in done.stdout
    result = json.loads(out.read_text())
    assert result["steps_timed"] == 5 and result["tokens_per_s"] > 0
    assert 0 < result["mfu"] < 1
    # flops/token = 6 x matmul weights + attention term, for the tiny shape
    assert result["flops_per_token"] == 6 * result["matmul_params"] + 12 * 2 * 4 * 16 * 256
    assert result["loss_last"] < result["loss_first"]  # the optimizer really stepped
