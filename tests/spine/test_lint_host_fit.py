"""`rsr tasks lint` refuses a task that loads but cannot run, naming the file and the field or
line (CRLF scripts, a relative workdir, a Dockerfile that ends as a non-root user), warns in one
line about what this host cannot give (cpus, memory) and about a difficulty the catalog does not
know, and says why a folder holds no task. `rsr tasks catalog` refuses a suite with an invalid
task instead of leaving it out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rsr.cli.main import main

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "tasks" / "core" / "hello-world"


def _task(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(HELLO, tmp_path / name))


def _lint(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[dict]]:
    rc = main(["tasks", "lint", "--json", *map(str, paths)])
    return rc, json.loads(capsys.readouterr().out)


def test_lint_refuses_crlf_in_test_sh_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = _task(tmp_path, "crlf")
    script = task / "tests" / "test.sh"
    script.write_bytes(script.read_bytes().replace(b"\n", b"\r\n"))
    rc, rows = _lint(capsys, task)
    assert rc == 1 and rows[0]["status"] == "invalid"
    assert rows[0]["errors"][0]["file"] == str(script) and "CRLF" in rows[0]["errors"][0]["message"]


def test_lint_refuses_a_relative_workdir_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = _task(tmp_path, "relative")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('workdir = "/app"', 'workdir = "app"'))
    rc, rows = _lint(capsys, task)
    assert rc == 1 and rows[0]["errors"] == [
        {"file": str(toml), "field": "environment.workdir",
         "message": "'app' is relative; the sandbox needs an absolute path, e.g. /app"}]


def test_lint_refuses_a_dockerfile_ending_as_a_non_root_user_naming_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = _task(tmp_path, "nobody")
    dockerfile = task / "environment" / "Dockerfile"
    lines = dockerfile.read_text().splitlines()
    dockerfile.write_text("\n".join([*lines, "USER nobody"]) + "\n")
    rc, rows = _lint(capsys, task)
    assert rc == 1
    assert rows[0]["errors"][0]["file"] == f"{dockerfile}:{len(lines) + 1}"
    assert "`USER nobody`" in rows[0]["errors"][0]["message"]
    # Ending as root again is fine: setup runs as root, the agent's user is the task's business.
    dockerfile.write_text("\n".join([*lines, "USER nobody", "USER root"]) + "\n")
    assert _lint(capsys, task)[0] == 0


def test_lint_warns_about_cpus_beyond_this_host_and_an_unknown_difficulty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    task = _task(tmp_path, "big")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1", f"cpus = {(os.cpu_count() or 1) * 4}")
                    .replace('difficulty = "easy"', 'difficulty = "extreme"'))
    rc, rows = _lint(capsys, task)
    assert rc == 0 and rows[0]["status"] == "ok"
    warned = " | ".join(rows[0]["warnings"])
    assert "environment.cpus = " in warned and f"this machine has {os.cpu_count()}" in warned
    assert "metadata.difficulty = 'extreme': expected one of easy, medium, hard" in warned


def test_lint_says_why_a_folder_holds_no_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, rows = _lint(capsys, tmp_path)
    assert rc == 1
    assert "no task.toml (Harbor) or task.yaml (Terminal-Bench 1)" in rows[0]["errors"][0]["message"]


def test_catalog_refuses_a_suite_with_an_invalid_task_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _task(tmp_path, "good")
    bad = _task(tmp_path, "bad")
    (bad / "task.toml").write_text((bad / "task.toml").read_text() + "\njunk = [\n")
    assert main(["tasks", "catalog", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"{bad / 'task.toml'}: invalid TOML" in " ".join(err.split())
    assert not (tmp_path / "README.md").exists()
