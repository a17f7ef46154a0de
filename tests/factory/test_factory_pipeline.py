"""Pipeline behaviour that needs no sandbox: budgets, stage prerequisites, status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsr.cli.main import main
from rsr.errors import RsrError
from rsr.factory.config import load_config
from rsr.factory.ledger import FactoryPaths, State, budget_left
from rsr.factory.pipeline import run

CONFIG = """
output_dir: out
pool: {suites: [core], tasks: [hello-world]}
models: {model: mockllm/model}
budgets: {max_rollouts: 10, max_tokens: 5000, max_sandbox_minutes: 2}
"""


@pytest.fixture
def cfg_path(tmp_path: Path) -> Path:
    path = tmp_path / "factory.yaml"
    path.write_text(CONFIG)
    return path


def test_budget_left_counts_every_stage(cfg_path: Path) -> None:
    cfg = load_config(cfg_path)
    state = State(costs={"discover": {"rollouts": 6, "tokens": 100, "sandbox_seconds": 30},
                         "execute": {"rollouts": 3, "tokens": 100, "sandbox_seconds": 30}})
    assert budget_left(cfg, state) == (1, None)
    state.costs["plan"] = {"tokens": 4800}
    assert budget_left(cfg, state) == (0, "token budget (5000) spent")
    state.costs["plan"] = {"tokens": 0, "sandbox_seconds": 60}
    assert budget_left(cfg, state) == (0, "sandbox budget (2.0 min) spent")


def test_pipeline_skips_discovery_when_the_budget_is_spent(cfg_path: Path) -> None:
    cfg_path.write_text(CONFIG.replace("max_rollouts: 10", "max_rollouts: 0"))
    cfg = load_config(cfg_path)
    state = run(cfg, ["discover"])
    assert "discover" in state.finished
    assert not FactoryPaths(cfg.output_dir).logs("discover").exists()


def test_pipeline_names_the_missing_stage(cfg_path: Path) -> None:
    with pytest.raises(RsrError, match=r"stage plan needs .*sources\.jsonl; run `rsr factory run "
                                       r"CONFIG --stage compress`"):
        run(load_config(cfg_path), ["plan"])


def test_cli_rejects_unknown_stage(cfg_path: Path) -> None:
    assert main(["factory", "run", str(cfg_path), "--stage", "rewrite"]) == 2


def test_status_of_a_fresh_run_lists_every_stage_as_remaining(
        cfg_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["factory", "status", str(cfg_path)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["remaining"] == ["discover", "compress", "plan", "execute", "filter", "export"]
    assert status["funnel"]["kept"] == 0 and status["budget"]["rollouts_left"] == 10
