"""A typo'd `-T`, `-S` or `-M` is refused in one line naming the closest option and the valid
ones, before anything runs. (Inspect drops a `-T` its task does not declare with a warning and
runs the task's default selection; an unknown `-S` ended in a TypeError traceback.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rsr import _registry
from rsr.errors import RsrError, UnknownOptionError
from rsr.suites import inspect_tasks

REPO = Path(__file__).resolve().parents[2]
INSPECT = Path(sys.executable).with_name("inspect")
SUITES = [name.removeprefix("rsr/") for name in _registry.TASKS]
HARNESS_TYPOS = [("oracle", "partal", "partial"), ("null", "partial", None), ("terminus2", "wait", "wait_mode"),
                 ("statem", "reply_fromat", "reply_format"), ("rsrt", "max_reflection", "max_reflections")]


def _inspect_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(INSPECT), "eval", *args, "--log-dir", str(tmp_path / "logs")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    out = " ".join((proc.stdout + proc.stderr).split())  # Rich wraps long lines
    assert "Traceback" not in out, out
    return out


def test_inspect_eval_refuses_a_typod_task_option_instead_of_running_every_task(tmp_path: Path) -> None:
    proc = _inspect_eval(tmp_path, "rsr/core", "--solver", "rsr/oracle", "-T", "taks=hello-world",
                         "--limit", "1")
    out = _one_error(proc)
    assert proc.returncode != 0, out
    assert "rsr/core: unknown option -T taks (did you mean -T tasks?)" in out, out
    assert "its options: evidence, exclude, images, integrity, network, path, sandbox, tasks, unpinned" in out
    assert not list((tmp_path / "logs").glob("*.eval")), "the eval ran"


def test_inspect_eval_refuses_a_typod_harness_option_in_one_line(tmp_path: Path) -> None:
    proc = _inspect_eval(tmp_path, "rsr/core", "-T", "tasks=hello-world", "--solver", "rsr/terminus2",
                         "-S", "max_episode=3")
    out = _one_error(proc)
    assert proc.returncode != 0, out
    assert "rsr/terminus2: unknown option -S max_episode (did you mean -S max_episodes?)" in out, out


def test_inspect_eval_refuses_a_typod_scripted_model_option(tmp_path: Path) -> None:
    proc = _inspect_eval(tmp_path, "rsr/core", "-T", "tasks=hello-world", "--solver", "rsr/terminus2",
                         "--model", "rsr-scripted/agent", "-M", "fixtur=examples/scripted/hello-world.yaml")
    out = _one_error(proc)
    assert proc.returncode != 0, out
    assert "rsr-scripted/agent: unknown option -M fixtur (did you mean -M fixture?); its options: fixture" in out


@pytest.mark.parametrize("suite", SUITES)
def test_every_suite_task_refuses_an_unknown_option(suite: str) -> None:
    with pytest.raises(UnknownOptionError, match=rf"^rsr/{suite}: unknown option -T exlude \(did you mean "
                                                 r"-T exclude\?\), -T colour; its options: "):
        getattr(inspect_tasks, suite)(exlude="x", colour="red")


def test_every_registered_task_and_agent_is_one_that_refuses_unknown_options() -> None:
    from inspect_ai._util.registry import is_registry_object, registry_info

    registered = {name: registry_info(obj).type for name, obj in vars(_registry).items()
                  if callable(obj) and is_registry_object(obj)}
    assert {n for n, kind in registered.items() if kind == "task"} == set(SUITES)
    assert {n for n, kind in registered.items() if kind == "agent"} == {
        n.removeprefix("rsr/") for n in _registry.HARNESSES} == {h for h, _, _ in HARNESS_TYPOS}


def test_harbor_without_a_path_says_which_option_to_pass() -> None:
    with pytest.raises(RsrError, match=r"^rsr/harbor: name the dataset or task directory with -T path=DIR$"):
        inspect_tasks.harbor()


@pytest.mark.parametrize(("harness", "typo", "meant"), HARNESS_TYPOS)
def test_every_harness_refuses_an_unknown_option(harness: str, typo: str, meant: str | None) -> None:
    hint = rf" \(did you mean -S {meant}\?\)" if meant else ""
    with pytest.raises(UnknownOptionError, match=rf"^rsr/{harness}: unknown option -S {typo}{hint}; its options: "):
        getattr(_registry, harness)(**{typo: 1})


def test_declared_harness_options_still_reach_the_harness() -> None:
    from rsr.harness.oracle import oracle
    from rsr.harness.terminus2 import terminus2

    assert callable(terminus2(max_episodes=3, wait_mode="adaptive")) and callable(oracle(partial=True))


def test_rsr_list_prints_every_rsr_name_with_the_options_it_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main
    from rsr.options import declared_options
    from rsr.suites.inspect_tasks import harbor

    assert main(["list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    assert set(lines) == {*(f"rsr/{s}" for s in SUITES), "rsr/terminus2", "rsr/statem", "rsr/rsrt",
                          "rsr/oracle", "rsr/null", "rsr-scripted/<role>"}
    assert lines["rsr/harbor"].split(None, 1)[1] == ", ".join(declared_options(harbor))
    assert "max_episodes" in lines["rsr/terminus2"] and "budget_minutes" in lines["rsr/rsrt"]
    assert lines["rsr/oracle"].split()[1:] == ["partial"]
    assert lines["rsr-scripted/<role>"].split()[1:] == ["fixture"]


def test_rsr_list_does_print_the_task_names_of_a_suite(capsys: pytest.CaptureFixture[str]) -> None:
    from rsr.cli.main import main
    from rsr.tasks.load import load_dataset

    assert main(["list", "--tasks", "core"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("core: 40 tasks in ") and "inspect eval rsr/core -T tasks=NAME" in out[0]
    names = [line.split()[0] for line in out[1:]]
    assert names == sorted(t.name for t in load_dataset(REPO / "tasks" / "core").tasks)
    assert out[1].split() == ["adaptive-quadrature", "scientific-computing", "easy"]
    assert main(["list", "--tasks", "tb3"]) == 2  # not on this machine: one line saying so


def test_inspect_eval_refuses_an_empty_task_selection_instead_of_running_every_task(tmp_path: Path) -> None:
    proc = _inspect_eval(tmp_path, "rsr/core", "--solver", "rsr/oracle", "-T", "tasks=", "--limit", "1")
    out = _one_error(proc)
    assert proc.returncode != 0, out
    assert "rsr/core: -T tasks= names no task" in out, out
    assert not list((tmp_path / "logs").glob("*.eval")), "the eval ran"


@pytest.mark.parametrize("selection", ["", " , "])
def test_suite_task_rejects_a_selection_that_names_no_task(selection: str) -> None:
    # `rsr eval run -T tasks=` hands the empty string over as typed.
    with pytest.raises(RsrError, match="-T tasks= names no task"):
        inspect_tasks.core(tasks=selection)
    assert inspect_tasks.core(tasks="hello-world").dataset[0].id == "hello-world"
