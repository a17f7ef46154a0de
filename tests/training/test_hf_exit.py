"""An eval on Inspect's `hf/` provider exits 0 even when a sample ended (its agent timeout)
while the model was still generating.

Inspect's hf provider generates in a daemon thread that nothing cancels; a process that exits
while that thread is inside torch aborts ("terminate called without an active exception", exit
134) after printing its results. The untrained tiny model, decoding greedily towards 30,000
tokens, is still generating when the 5 s agent timeout ends the sample."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
INSPECT = Path(sys.executable).with_name("inspect")


@pytest.fixture(scope="module")
def untrained_checkpoint(tiny_tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rsr.training.config import TinyModelConfig
    from rsr.training.tiny import build_model

    out = tmp_path_factory.mktemp("hf-exit") / "ckpt"
    build_model(TinyModelConfig(), tiny_tokenizer, max_length=1024, seed=0).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out


def test_inspect_eval_with_an_hf_model_generating_past_the_agent_timeout_exits_zero(
        untrained_checkpoint: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    started = time.monotonic()
    proc = subprocess.run(
        [str(INSPECT), "eval", "rsr/core", "-T", "tasks=hello-world", "--solver", "rsr/terminus2",
         "-S", "agent_timeout_sec=5", "-S", "context_window=32768", "--max-tokens", "30000",
         "-M", "do_sample=false", "--model", f"hf/{untrained_checkpoint}",
         "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - started
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert "terminate called" not in tail, tail
    assert proc.returncode == 0, f"exit {proc.returncode} after {elapsed:.0f} s:\n{tail}"
    logs = list((tmp_path / "logs").glob("*.eval"))
    assert len(logs) == 1, tail

    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(logs[0]))
    assert log.status == "success", log.error
    sample = log.samples[0]
    # The sample ended on its agent timeout, with the model's first reply still being generated.
    assert not [m for m in sample.messages if m.role == "assistant"], sample.messages
    assert sample.error is None, sample.error
