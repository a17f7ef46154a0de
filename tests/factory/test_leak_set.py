"""The deterministic leak checks on the labelled runbook set (tests/factory/fixtures/leaks):
hand-written clean and leaking runbooks for four core tasks, most leaks reworded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rsr.factory.critique import TaskMaterial, command_leaks, hash_leaks, hidden_hashes
from rsr.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "tasks" / "core"


def _benchmark():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("leak_detection",
                                                  ROOT / "benchmarks" / "leak_detection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_leak_checks_reject_leaking_runbooks_and_keep_clean_ones() -> None:
    result = _benchmark().evaluate()
    assert result["clean"] >= 30 and result["leaking"] >= 30 and len(result["per_task"]) >= 4
    # Measured 1.000 / 0.909 / 0.000 when written; a regression in either direction fails.
    assert result["false_positives"] <= 1, [c for c in result["cases"]
                                            if c["rejected"] and not c["leaks"]]
    assert result["recall"] >= 0.85, [c["end_state"] for c in result["cases"]
                                      if c["leaks"] and not c["rejected"]]


LARGEST = TaskMaterial.of(load_task(CORE / "largest-files-report"))


@pytest.mark.parametrize(("text", "leaks"), [
    # The solution's sort, reordered, requoted, respaced: the same command.
    ("sort them with  LC_ALL=C sort -k2,2 -t \"$(printf '\\t')\" -k1,1nr", False),
    ("LC_ALL=C   sort -k2,2 -k1,1nr -t $'\\t'", True),
    ("`find $dir -printf \"%s\\t%P\\n\" -type f`", True),
    # Commands of the public task material or ordinary ones are not leaks.
    ("check sizes with stat -c %s FILE", False),
    ("chmod +x /app/largest.sh", False),
    ("find /srv/data -type f | head", False),
])
def test_command_leaks_compare_parsed_tokens_not_text(text: str, leaks: bool) -> None:
    assert bool(command_leaks(text, LARGEST)) == leaks


GIT = TaskMaterial.of(load_task(CORE / "git-recover-lost-work"))


@pytest.mark.parametrize(("text", "leaks"), [
    ("reset main to ebb8f1f", True),
    ("reset main to EBB8F1FF03A2", True),
    ("the tip is 59F60E776126616D2CF7655FCEE7CBF549E18E54", True),
    ("use HEAD@{2} from the reflog", False),
    ("commit 826a505 is the initial one", False),  # not a hidden id (the repo shows it)
])
def test_hash_leaks_match_short_and_upper_case_hidden_ids(text: str, leaks: bool) -> None:
    assert bool(hash_leaks(text, hidden_hashes(GIT), GIT.public)) == leaks


def _count_task(tmp_path: Path) -> TaskMaterial:
    import shutil

    d = tmp_path / "count-errors"
    shutil.copytree(CORE / "hello-world", d)
    (d / "instruction.md").write_text("Write how many lines of /app/app.log are errors to /app/count.txt.\n")
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\ngrep -c ' ERROR ' /app/app.log > /app/count.txt\n")
    return TaskMaterial.of(load_task(d))


@pytest.mark.parametrize(("text", "leaks"), [
    # The solution's one-line pipeline, re-quoted: each command alone is too short to count.
    ("Run exactly: grep -c ' ERROR ' /app/app.log > /app/count.txt", True),
    ("grep -c \" ERROR \" /app/app.log >/app/count.txt", True),
    # Said in words, or only part of it: not the solution's command.
    ("Count the error lines of /app/app.log with grep and write the number to /app/count.txt", False),
    ("grep ERROR /app/app.log | head", False),
])
def test_command_leaks_reject_a_short_solution_pipeline_quoted_verbatim(
        tmp_path: Path, text: str, leaks: bool) -> None:
    assert bool(command_leaks(text, _count_task(tmp_path))) == leaks
