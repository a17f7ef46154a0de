"""`rsr rl` before the cold start, `rsr rl --check`, and user errors under `accelerate launch`:
one line naming what is missing and the command that makes it, before anything heavy loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsr.cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def rl_tiny(tmp_path: Path) -> Path:
    """examples/rl-tiny.yaml in a project of its own (its tasks linked in), before the cold start."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "rl-tiny").symlink_to(REPO / "tasks" / "rl-tiny")
    config = tmp_path / "examples" / "rl-tiny.yaml"
    config.write_text((REPO / "examples" / "rl-tiny.yaml").read_text())
    return config


def test_rsr_rl_before_the_cold_start_does_name_the_checkpoint_and_its_command(
        rl_tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path / "tasks")  # anywhere: the config's paths are its folder's
    started = time.monotonic()
    assert main(["rl", str(rl_tiny)]) == 2
    assert time.monotonic() - started < 20  # before: a Hugging Face repo-id error after ~30 s
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"{rl_tiny}: model: checkpoint {tmp_path / 'runs/rl-tiny/sft/final'} does not exist" in err
    assert "make it with: python benchmarks/rl_tiny.py --out runs/rl-tiny" in err
    assert not (tmp_path / "runs" / "rl-tiny" / "rl").exists()  # nothing written


def test_rsr_rl_check_does_pass_a_runnable_config_and_list_every_problem_of_another(
        rl_tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    final = tmp_path / "runs" / "rl-tiny" / "sft" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    assert main(["rl", "--check", str(rl_tiny)]) == 0
    out = capsys.readouterr().out
    assert f"model: {final}" in out and "tasks: 2" in out and f"output_dir: {tmp_path / 'runs/rl-tiny/rl'}" in out

    broken = rl_tiny.with_name("broken.yaml")
    broken.write_text(rl_tiny.read_text().replace("../tasks/rl-tiny", "../tasks/rl-tiy")
                      .replace("../runs/rl-tiny/sft/final", "../runs/rl-tiny/sft"))
    assert main(["rl", "--check", str(broken), "--output-dir", str(rl_tiny)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "3 problems" in err
    assert f"model: {tmp_path / 'runs/rl-tiny/sft'} is not a checkpoint directory" in err
    assert f"suite.path: {tmp_path / 'tasks/rl-tiy'} does not exist (resolved against {tmp_path / 'examples'}" in err
    assert f"output_dir: {rl_tiny / ''}".rstrip("/") in err and "is a file" in err


@pytest.mark.parametrize("module", ["rsr.rl", "rsr.training"])
def test_python_m_entry_points_do_print_a_user_error_on_rank_zero_only(
        module: str, rl_tiny: Path, tmp_path: Path) -> None:
    config = rl_tiny if module == "rsr.rl" else tmp_path / "missing-recipe.yaml"
    error_file = tmp_path / f"{module}-error.json"
    runs = {}
    for rank in ("0", "1"):
        env = {**os.environ, "RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": "2",
               "TORCHELASTIC_ERROR_FILE": str(error_file) + rank}
        runs[rank] = subprocess.run([sys.executable, "-m", module, str(config)], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=120)
    assert runs["0"].returncode == runs["1"].returncode == 2
    assert runs["1"].stderr == ""  # one line per launch, not one per GPU
    (line,) = runs["0"].stderr.strip().splitlines()
    assert line.startswith("error: ") and str(config) in line
    # torch elastic's failure summary shows this message instead of "To enable traceback see ...".
    assert json.loads(Path(str(error_file) + "0").read_text())["message"]["message"] == line
    assert not Path(str(error_file) + "1").exists()


def test_torchrun_launch_does_print_a_user_error_once_and_name_it_as_the_root_cause(
        rl_tiny: Path, tmp_path: Path) -> None:
    # accelerate launch's multi-process launcher is torch elastic's (torchrun); 3 CPU ranks here.
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.is_file():
        pytest.skip("torchrun is not installed (the [train] extra)")
    done = subprocess.run([str(torchrun), "--nproc_per_node", "3", "-m", "rsr.rl", str(rl_tiny)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(ours) == 1 and "make it with: python benchmarks/rl_tiny.py" in ours[0], done.stderr
    summary = done.stderr[done.stderr.index("Root Cause"):]
    assert f"traceback : {ours[0]}" in summary  # not "To enable traceback see ..."
