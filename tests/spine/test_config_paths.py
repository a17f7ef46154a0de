"""One rule for relative paths (rsr/config_paths.py): a config file's are its folder's, for
inputs and outputs alike, from any working directory; the command line's are the working
directory's; `rsr:REL` names a shipped file; nothing falls back silently to the checkout.

Every test here runs from a directory that is not the checkout, as a user's shell would be."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from rsr.cli.main import main

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/training/fixtures/trajectories.jsonl"
TINY = yaml.safe_load((REPO / "training/recipes/tiny-cpu.yaml").read_text())


def _recipe(path: Path, datasets: list[str], output_dir: str, **extra: object) -> Path:
    data = {**TINY, "data": {**TINY["data"], "datasets": [{"path": d} for d in datasets]},
            "output_dir": output_dir, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory that is neither the checkout nor the config's folder."""
    cwd = tmp_path / "shell"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def _err(capsys: pytest.CaptureFixture) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_recipe_does_resolve_inputs_and_outputs_against_its_folder(
        tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture) -> None:
    shutil.copy(FIXTURE, tmp_path / "rows.jsonl")
    recipe = _recipe(tmp_path / "project" / "recipes" / "r.yaml", ["../../rows.jsonl"], "../runs/r")
    assert main(["train", "--check", "../project/recipes/r.yaml"]) == 0
    out = capsys.readouterr().out
    assert "rows: 24" in out and f"output_dir: {tmp_path / 'project' / 'runs' / 'r'}" in out

    from rsr.training.config import load_recipe

    loaded = load_recipe(recipe)
    assert loaded.data.datasets[0].path == tmp_path / "rows.jsonl"
    assert loaded.output_dir == tmp_path / "project" / "runs" / "r"


def test_recipe_rejects_a_checkout_path_that_is_not_under_its_folder_naming_field_and_folder(
        tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture) -> None:
    # Before: `tests/training/fixtures/...` silently became the checkout's file.
    _recipe(tmp_path / "cfg" / "r.yaml", ["tests/training/fixtures/trajectories.jsonl"], "out")
    assert main(["train", "--check", str(tmp_path / "cfg" / "r.yaml")]) == 2
    err = _err(capsys)
    assert f"{tmp_path / 'cfg' / 'r.yaml'}: data.datasets[0].path:" in err
    assert f"{tmp_path / 'cfg' / 'tests/training/fixtures/trajectories.jsonl'} does not exist" in err
    assert f"resolved against {tmp_path / 'cfg'}, the config's folder" in err


def test_rsr_train_check_does_report_every_problem_at_once(
        tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "a-file").write_text("")
    bad_row = tmp_path / "bad.jsonl"
    bad_row.write_text('{"messages": [{"role": "assistant", "content": "hi"}]}\n')
    recipe = _recipe(tmp_path / "r.yaml", ["missing-1.jsonl", "missing-2", "bad.jsonl"], "a-file/out",
                     model={"path": "./no-checkpoint"})
    assert main(["train", "--check", str(recipe), "--accelerate-config", "none.yaml"]) == 2
    err = _err(capsys)
    assert "6 problems" in err
    for field in ("model.path:", "data.datasets[0].path:", "data.datasets[1].path:",
                  "data.datasets[2].path:", "output_dir:", "--accelerate-config:"):
        assert field in err, field
    assert "bad.jsonl: row 0: the first non-system message must be the user prompt" in err
    assert f"{tmp_path / 'a-file'} is a file" in err
    assert f"{elsewhere / 'none.yaml'} does not exist" in err  # a command-line path: the shell's


def test_rsr_train_check_does_load_no_model_library(tmp_path: Path) -> None:
    import subprocess

    shutil.copy(FIXTURE, tmp_path / "rows.jsonl")
    recipe = _recipe(tmp_path / "r.yaml", ["rows.jsonl"], "out")
    code = ("import sys\nfrom rsr.cli.main import main\nrc = main(['train', '--check', sys.argv[1]])\n"
            "heavy = [m for m in ('torch', 'transformers', 'trl', 'peft', 'datasets') if m in sys.modules]\n"
            "print('heavy:', heavy)\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(recipe)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "heavy: []" in done.stdout


def test_recipe_argument_is_the_working_directory_s_and_rsr_prefix_names_the_shipped_one(
        elsewhere: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--check", "training/recipes/tiny-cpu.yaml"]) == 2
    err = _err(capsys)
    assert f"relative to the working directory {elsewhere}" in err
    assert "rsr ships one: rsr:training/recipes/tiny-cpu.yaml" in err
    assert main(["train", "--check", "rsr:training/recipes/tiny-cpu.yaml", "--output-dir", "mine"]) == 0
    out = capsys.readouterr().out
    assert f"output_dir: {elsewhere / 'mine'}" in out and "rows: 24" in out  # rsr: data found


def test_rsr_prefix_rejects_a_file_rsr_does_not_ship(tmp_path: Path, elsewhere: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    recipe = _recipe(tmp_path / "r.yaml", ["rsr:runs/factory/dataset.jsonl"], "out")
    assert main(["train", "--check", str(recipe)]) == 2
    assert "rsr:runs/factory/dataset.jsonl: rsr ships no such file" in _err(capsys)


def test_factory_and_rounds_configs_do_take_output_dir_override_from_the_working_directory(
        elsewhere: Path) -> None:
    from rsr.factory.config import load_config
    from rsr.rounds.config import load_rounds_config

    factory = load_config(REPO / "examples/factory-smoke.yaml")
    assert factory.output_dir == REPO / "runs/factory-smoke"  # the config's folder's
    assert factory.export.eval_paths == [REPO / "examples/factory-smoke/eval-tasks"]
    assert load_config(REPO / "examples/factory-smoke.yaml", "mine").output_dir == elsewhere / "mine"
    rounds = load_rounds_config(REPO / "examples/rounds-smoke.yaml", "mine", check_tasks=False)
    assert rounds.output_dir == elsewhere / "mine"
    assert rounds.train.recipe == REPO / "training/recipes/tiny-rounds-smoke.yaml"


def test_rl_config_does_resolve_model_suite_and_output_against_its_folder(elsewhere: Path) -> None:
    from rsr.rl.config import load_rl_config

    cfg = load_rl_config(REPO / "examples/rl-tiny.yaml")
    assert cfg.model == str(REPO / "runs/rl-tiny/sft/final")
    assert cfg.suite.path == REPO / "tasks/rl-tiny"
    assert cfg.output_dir == REPO / "runs/rl-tiny/rl"
    big = load_rl_config(REPO / "training/rl/grpo-qwen-27b.yaml")
    assert big.model == str(REPO / "checkpoints/lora-qwen-27b-merged")


def test_model_reference_does_keep_a_hub_id_and_resolve_a_local_path(tmp_path: Path) -> None:
    from rsr.config_paths import resolve_model

    assert resolve_model("Qwen/Qwen3.5-27B", tmp_path) == "Qwen/Qwen3.5-27B"
    assert resolve_model("runs/x/final", tmp_path) == str(tmp_path / "runs/x/final")
    assert resolve_model("./ckpt", tmp_path) == str(tmp_path / "ckpt")
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert resolve_model("org/name", tmp_path) == str(tmp_path / "org/name")  # exists: local


def test_rsr_train_from_another_directory_does_read_and_write_where_the_recipe_says(
        tmp_path: Path, elsewhere: Path) -> None:
    pytest.importorskip("trl")
    import json

    shutil.copy(FIXTURE, tmp_path / "rows.jsonl")
    _recipe(tmp_path / "project" / "recipes" / "r.yaml", ["../../rows.jsonl"], "../runs/r")
    assert main(["train", "../project/recipes/r.yaml", "--max-steps", "1"]) == 0
    card = json.loads((tmp_path / "project" / "runs" / "r" / "run_card.json").read_text())
    assert card["datasets"][0]["path"] == str(tmp_path / "rows.jsonl")
    assert card["final_dir"] == str(tmp_path / "project" / "runs" / "r" / "final")
    assert list(elsewhere.iterdir()) == []  # nothing written where the command ran


def test_eval_spec_does_resolve_a_suite_path_argument_against_its_folder(tmp_path: Path, elsewhere: Path) -> None:
    from rsr.report.evalset import load_eval_set

    spec = tmp_path / "specs" / "mine.yaml"
    spec.parent.mkdir()
    spec.write_text("name: mine\nsuites:\n  - {task: rsr/harbor, args: {path: ../my-tasks}}\n")
    assert load_eval_set(spec).suites[0].args["path"] == str(tmp_path / "my-tasks")
