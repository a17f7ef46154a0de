"""A built wheel is a working rsr: it carries the core suite, eval specs, recipes, examples and
templates, and runs a core task with the oracle from a directory that is no checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _setup_folders() -> tuple[str, ...]:
    import ast

    tree = ast.parse((REPO / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FOLDERS":
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("setup.py defines no FOLDERS")


def test_setup_does_bundle_the_folders_rsr_resolves() -> None:
    from rsr.bundled import BUNDLED_FOLDERS

    assert _setup_folders() == BUNDLED_FOLDERS


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Built from a copy of what the sdist holds (setuptools builds in the source tree), with this
    # environment's setuptools and no index: a build that needs no network.
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for rel in ("rsr", *_setup_folders()):
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
        else:
            shutil.copytree(REPO / rel, src / rel, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(out), str(src)], check=True, capture_output=True,
                   timeout=600)
    (found,) = out.glob("rsr-*.whl")
    return found


def test_wheel_does_carry_core_suite_specs_recipes_and_templates(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("rsr/_bundled/tasks/core/hello-world/task.toml",
                     "rsr/_bundled/tasks/core/hello-world/tests/test.sh",
                     "rsr/_bundled/evals/core.yaml", "rsr/_bundled/evals/table5.yaml",
                     "rsr/_bundled/training/recipes/tiny-cpu.yaml",
                     "rsr/_bundled/examples/scripted/hello-world.yaml",
                     "rsr/tasks/scaffold/test.sh", "rsr/training/templates/rsr-chatml-v1.jinja"):
        assert required in names, required
    assert not any("__pycache__" in n for n in names)


def _without_checkout() -> dict[str, str]:
    """This environment without PYTHONPATH: rsr from the wheel, not from a checkout on the path."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _install(wheel: Path, tmp_path: Path) -> Path:
    """A fresh venv with rsr from the wheel only; returns the venv."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # The dependencies come from this environment (no downloads); rsr itself only from the wheel.
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    site.mkdir(parents=True, exist_ok=True)
    (site / "zz-deps-from-dev-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    where = subprocess.run([str(py), "-c", "import rsr, sys; print(rsr.__file__)"], cwd=tmp_path,
                           env=_without_checkout(), capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(venv)), where
    return venv


def test_wheel_does_check_a_shipped_recipe_named_rsr_and_refuse_output_into_the_package(
        wheel: Path, tmp_path: Path) -> None:
    venv = _install(wheel, tmp_path)
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    env = _without_checkout()

    def check(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "rsr"), "train", "--check",
                               "rsr:training/recipes/tiny-cpu.yaml", *extra], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=300)

    refused = check()
    assert refused.returncode == 2
    assert "output_dir:" in refused.stderr and "inside the installed rsr package" in refused.stderr
    done = check("--output-dir", "runs/tiny-cpu")
    assert done.returncode == 0, done.stderr
    assert "rows: 24" in done.stdout  # the shipped fixture, through `rsr:` in the shipped recipe
    assert f"output_dir: {elsewhere / 'runs/tiny-cpu'}" in done.stdout


@pytest.mark.docker
def test_wheel_installed_in_a_fresh_venv_does_run_a_core_task_with_the_oracle(wheel: Path, tmp_path: Path) -> None:
    venv = _install(wheel, tmp_path)
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    env = {**_without_checkout(), "INSPECT_DISPLAY": "plain", "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run([str(venv / "bin" / "rsr"), "eval", "run", "core", "--agent", "rsr/oracle",
                           "--model", "mockllm/model", "--log-dir", "logs", "-T", "tasks=hello-world",
                           "--limit", "1"], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"{venv}" in out and "_bundled/evals/core.yaml" in out  # the shipped spec ...
    from inspect_ai.log import read_eval_log

    (log_file,) = (elsewhere / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.samples and len(log.samples) == 3  # hello-world x the spec's 3 epochs
    for sample in log.samples:
        assert sample.metadata["task_dir"].startswith(str(venv)), sample.metadata["task_dir"]  # ... and suite
        assert "_bundled/tasks/core/hello-world" in sample.metadata["task_dir"]
        assert sample.scores and sample.scores["verifier"].value["passed"] == 1
