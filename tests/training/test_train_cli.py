"""`rsr train` and `python -m rsr.training`: run, resume, and work without the [train] extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from training_helpers import TRAJECTORIES, recipe_dict, write_recipe

from rsr.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
BLOCK_TRAIN_EXTRA = (
    "import sys\n"
    "for m in ('torch', 'transformers', 'trl', 'peft', 'datasets', 'accelerate', 'tokenizers'):\n"
    "    sys.modules[m] = None  # import fails as if the extra were not installed\n"
    "from rsr.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _cli_without_train_extra(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_TRAIN_EXTRA, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_rsr_train_help_does_work_without_train_extra() -> None:
    done = _cli_without_train_extra("train", "--help")
    assert done.returncode == 0, done.stderr
    assert "merge" in done.stdout


def test_rsr_train_rejects_run_without_train_extra_saying_how_to_install() -> None:
    done = _cli_without_train_extra("train", "training/recipes/tiny-cpu.yaml")
    assert done.returncode == 2
    assert "pip install -e '.[train]'" in " ".join(done.stderr.split())


def test_rsr_train_rejects_malformed_recipe_naming_the_field(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    r = recipe_dict(tmp_path / "out", [TRAJECTORIES], train={"epochz": 1})
    assert main(["train", str(write_recipe(tmp_path / "r.yaml", r))]) == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "r.yaml: train.epochz: Extra inputs are not permitted" in err


def test_python_m_rsr_training_does_parse_its_arguments() -> None:
    done = subprocess.run([sys.executable, "-m", "rsr.training", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "RECIPE" in done.stdout


@pytest.mark.slow
def test_rsr_train_does_resume_from_the_last_checkpoint(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    r = recipe_dict(tmp_path / "run", [TRAJECTORIES],
                    train={"save_steps": 2, "logging_steps": 1, "epochs": 100})
    recipe = str(write_recipe(tmp_path / "r.yaml", r))
    assert main(["train", recipe, "--max-steps", "4"]) == 0
    assert (tmp_path / "run" / "checkpoints" / "checkpoint-4").is_dir()
    first = json.loads((tmp_path / "run" / "run_card.json").read_text())
    assert main(["train", recipe, "--max-steps", "6"]) == 0
    card = json.loads((tmp_path / "run" / "run_card.json").read_text())
    assert card["train_loss_start"] == first["train_loss_start"]  # the loss before step 1
    assert card["resumed_from"].endswith("checkpoint-4")
    assert card["global_steps"] == 6
    # The checkpoint carries the first run's log, so the curve covers every step once.
    assert [step for step, _ in card["logged_loss"]] == [1, 2, 3, 4, 5, 6]


def test_rsr_train_merge_rejects_run_without_train_extra_saying_how_to_install(
        tmp_path: Path) -> None:
    done = _cli_without_train_extra("train", "merge", str(tmp_path), "--out", str(tmp_path / "m"))
    assert done.returncode == 2, done.stderr
    assert "pip install -e '.[train]'" in " ".join(done.stderr.split())


def test_rsr_train_merge_rejects_unknown_dtype_naming_the_choices(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "merge", str(tmp_path), "--out", str(tmp_path / "m"),
                 "--dtype", "bf16"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--dtype 'bf16': expected one of auto, bfloat16, float16, float32" in err
    assert not (tmp_path / "m").exists()


def test_rsr_train_rejects_model_path_that_does_not_load_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trl")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id that is not in the cache: found before loading
    r = recipe_dict(tmp_path / "out", [TRAJECTORIES], model={"path": "rsr-no-such-org/no-such-model"})
    assert main(["train", str(write_recipe(tmp_path / "r.yaml", r))]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "model.path: hub id rsr-no-such-org/no-such-model is not in the Hugging Face cache" in err


def test_rsr_train_rejects_unknown_option_with_a_usage_error_not_a_traceback(
        capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "run", "training/recipes/tiny-cpu.yaml", "--max-step", "2"]) == 2
    err = capsys.readouterr().err
    assert "No such option: --max-step" in err and "Traceback" not in err


@pytest.mark.parametrize(("module", "what"), [("rsr.training", "recipe file not found"),
                                              ("rsr.rl", "RL config not found")])
def test_python_m_entry_points_do_reject_a_missing_file_in_one_line(module: str, what: str, tmp_path: Path) -> None:
    # They call the module's own `main` (the CLI imports it, not the reverse).
    done = subprocess.run([sys.executable, "-m", module, str(tmp_path / "none.yaml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {tmp_path / 'none.yaml'}: {what}"
