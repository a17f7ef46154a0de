"""factory.yaml: strict keys, errors naming file and field, relative paths, role defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsr.errors import RsrError
from rsr.factory.config import load_config

MINIMAL = """
output_dir: out
pool: {suites: [core], tasks: [hello-world]}
models: {model: mockllm/model}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "factory.yaml"
    path.write_text(text)
    return path


def test_config_resolves_paths_against_the_config_folder(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, MINIMAL + "export: {eval_paths: [evals]}\n"))
    assert cfg.output_dir == (tmp_path / "out").resolve()
    assert cfg.export.eval_paths == [(tmp_path / "evals").resolve()]
    assert cfg.models.for_role("critic") == "mockllm/model"
    assert (cfg.plan.k, cfg.execute.m, cfg.execute.temperature) == (4, 4, 0.7)


def test_config_rejects_unknown_keys_naming_file_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, MINIMAL + "plan: {k: 2, rounds: 3}\n")
    with pytest.raises(RsrError, match=r"factory\.yaml: plan\.rounds: Extra inputs"):
        load_config(path)


def test_config_rejects_a_pool_without_tasks(tmp_path: Path) -> None:
    path = _write(tmp_path, "output_dir: out\npool: {}\nmodels: {model: m/x}\n")
    with pytest.raises(RsrError, match="pool: Value error, name at least one suite or path"):
        load_config(path)


def test_config_rejects_an_unknown_harness(tmp_path: Path) -> None:
    path = _write(tmp_path, MINIMAL + "discovery: {harnesses: [{name: react}]}\n")
    with pytest.raises(RsrError, match=r"discovery\.harnesses\.0\.name"):
        load_config(path)


def test_smoke_example_config_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    cfg = load_config(root / "examples" / "factory-smoke.yaml")
    assert Path(cfg.models.model_args["fixture"]).is_file()
    assert cfg.export.eval_paths[0].is_dir()


@pytest.mark.parametrize(("old", "new", "field"), [
    ("planner: rsr-scripted/planner", "planner: rsr-scripted/planer", "models.roles.planner"),
    ("auditor: rsr-scripted/auditor", "auditor: rsr-scriptd/auditor", "models.roles.auditor"),
], ids=["role-typo", "provider-typo"])
def test_factory_run_rejects_model_typo_before_any_stage_runs(tmp_path: Path, capsys, old: str,
                                                              new: str, field: str) -> None:
    import shutil

    from rsr.cli.main import main

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "examples/factory-smoke", tmp_path / "factory-smoke")
    text = (repo / "examples/factory-smoke.yaml").read_text()
    assert old in text
    config = _write(tmp_path, text.replace(old, new).replace("../runs/factory-smoke", "out"))
    assert main(["factory", "run", str(config)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"factory.yaml: {field}: model" in err and new.split(": ")[1] in err
    assert not (tmp_path / "out" / "logs").exists()  # discovery never started
