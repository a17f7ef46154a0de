"""Every command README.md and docs/*.md show in a fenced block is executed here, so a documented
command cannot silently rot.

The commands are extracted from the files at test time (fences marked bash/sh/shell/console, and
unmarked fences whose every line starts with a known program), so a new command appears here by
itself and fails until it is classified in COMMANDS below:
- `run`: executed (in a scratch copy of the repository's task, example, eval and training folders),
  with the bounds given in `extra` appended (`--limit 1`: one sample, not the whole suite) or, for
  a synopsis with placeholders, the concrete line in `as_run`;
- `static`: needs a GPU, a cluster, a registry, a paid model or the network; its program, every
  subcommand and option and the files it names are checked without running it;
- `covered`: another test runs exactly this command (`why` names it as `file::function`; the
  function must exist);
- `shell`: changes the calling shell (`source`, `export`) and is checked for the file it names.
`rsr` and `inspect` commands run in this process through the same entry points their console
scripts call (the interpreter start-up of 20-odd processes would dominate the run time).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
SHELL_FENCES = {"bash", "sh", "shell", "console"}
PROGRAMS = {"rsr", "inspect", "python", "accelerate", "pip", "helm", "kubectl", "docker", "source",
            "export"}
SCRIPTED = "examples/scripted/hello-world.yaml"


@dataclass(frozen=True)
class Doc:
    how: Literal["run", "covered", "static", "shell"]
    why: str = ""
    extra: str = ""
    as_run: str | None = None
    rc: tuple[int, ...] = (0,)
    own_process: bool = False
    """Run as its own process with no input (an interactive command: its shell exits at once)."""
    expect: tuple[str, ...] = ()
    """Patterns (re.M) its output must match: what the command promises to say."""
    unset: tuple[str, ...] = ()
    """Environment variables the command runs without (a default it must choose itself)."""


LIMIT = "--limit 1"
GPU = "needs GPUs (vLLM or a 27B model)"
CLUSTER = "needs a Kubernetes cluster and a registry"
NET = "needs the network"

# Keyed by the command as shlex reads it (comment dropped, tokens joined by one space). Order of
# the `run` entries is the order they run in (later ones use what earlier ones wrote).
COMMANDS: dict[str, Doc] = {
    # README: top and quick start
    # Which block is which, progress lines into a pipe (Inspect's own display draws only on a
    # terminal), and one verdict line at the end.
    "./scripts/run-default.sh": Doc("run", extra=LIMIT, unset=("INSPECT_DISPLAY",), expect=(
        r"^== 1/2 oracle: .*every task should pass ==$", r"^== 2/2 null agent: .*every task should fail ==$",
        r"^oracle +\| .*Samples: +1/ +1", r"^null +\| .*Samples: +1/ +1",
        r"\nverdict: oracle 1/1 passed, null 0/1 passed: the suite is healthy\n*\Z")),
    "./scripts/test.sh": Doc("static", "the whole suite: this test is part of it (CI runs it)"),
    "./scripts/setup.sh": Doc("static", "run by ./scripts/run-default.sh above"),
    "source .venv/bin/activate": Doc("shell"),
    "rsr doctor": Doc("run"),
    # README: the inference engine
    "./scripts/setup.sh --engine": Doc("static", "run by ./scripts/test.sh before the suite (CI)"),
    "rsr serve runs/tiny-cpu": Doc("static", "serves until Ctrl-C; tests/engine/conftest.py starts "
                                             "`rsr serve` the same way for the engine tests"),
    "inspect eval rsr/core -T tasks=hello-world --solver rsr/terminus2 --model vllm/tiny-cpu "
    "--model-base-url http://127.0.0.1:8000/v1": Doc(
        "static", "needs a served checkpoint; tests/engine/test_engine_eval.py runs this eval"),
    "rsr report run logs/": Doc("static", "reads a run's logs; tests/engine/test_engine_eval.py "
                                          "checks it on an engine run"),
    "rsr list": Doc("run"),
    "rsr list --tasks core": Doc("run"),
    "inspect eval rsr/core --solver rsr/oracle --epochs 3 --epochs-reducer mean,pass_at_3 --tags oracle": Doc(
        "run", extra=LIMIT),
    "inspect eval rsr/core --solver rsr/null --tags null": Doc("run", extra=LIMIT),
    "inspect eval rsr/core -T tasks=hello-*,git-* -T exclude=\"*-slow\" --solver rsr/oracle": Doc("run", extra=LIMIT),
    "inspect eval rsr/harbor -T path=/some/harbor/dataset --solver rsr/oracle": Doc(
        "run", extra=LIMIT, as_run="inspect eval rsr/harbor -T path=tasks/core --solver rsr/oracle"),
    "inspect view": Doc("static", "starts a long-running web server"),
    # README: tasks
    "rsr tasks lint tasks/core": Doc("run"),
    "rsr tasks lint --network none ~/tb2": Doc("run", as_run="rsr tasks lint --network none tasks/core"),
    "rsr tasks fetch tb2": Doc("static", NET + " (GitHub)"),
    "rsr tasks infer-deliverables tb2": Doc("static", NET + " (rsr tasks fetch tb2, then TB2's images)"),
    "rsr tasks fetch tb4": Doc("static", NET + " (the Harbor hub)"),
    "rsr tasks new my-task --category databases --milestones": Doc("run"),
    "rsr tasks check my-tasks/my-task": Doc("run", extra="--runs 1"),
    "rsr tasks check core --only oracle,null --runs 1": Doc("run", extra="--tasks hello-world"),
    "rsr tasks catalog tasks/core": Doc("run"),
    "rsr tasks check core --only leak --runs 1": Doc("run", extra="--tasks hello-world"),
    "rsr tasks shell hello-world --oracle --tests": Doc("run", own_process=True),
    "inspect eval rsr/tb2 --solver rsr/oracle -T network=none": Doc("static", NET + " (rsr tasks fetch tb2)"),
    "rsr tasks new word-counts --category text-processing --difficulty easy": Doc("run"),
    "inspect eval rsr/harbor -T path=my-tasks/word-counts --solver rsr/oracle": Doc("run"),
    # README: harnesses (the scripted model is the default model of every run below)
    "inspect eval rsr/core -T tasks=hello-world --solver rsr/terminus2 --model rsr-scripted/agent "
    f"-M fixture={SCRIPTED}": Doc("run"),
    "inspect eval rsr/core --solver rsr/terminus2 --model <any Inspect model> --epochs 3": Doc(
        "run", extra=LIMIT, as_run=f"inspect eval rsr/core --solver rsr/terminus2 --model rsr-scripted/agent "
                                   f"-M fixture={SCRIPTED} --epochs 3"),
    "inspect eval rsr/core --solver rsr/terminus2 -S prompts=harbor": Doc("run", extra=LIMIT),
    "inspect eval rsr/core --solver rsr/terminus2 -S prompts=./my-pack -S reply_format=xml": Doc(
        "run", extra=LIMIT + " --message-limit 8"),  # JSON replies to an XML prompt: parse errors
    "inspect eval rsr/core --solver rsr/terminus2 -S fixes=history-limit,new-output": Doc("run", extra=LIMIT),
    "inspect eval rsr/tb2 --solver rsr/statem --model vllm/<checkpoint>": Doc("static", GPU),
    "inspect eval rsr/core --solver rsr/rsrt -S budget_minutes=180 -S max_reflections=5": Doc(
        "run", extra=LIMIT + " --message-limit 12"),
    "rsr trajectories export LOG.eval --format atif|messages --out DIR [--only passed] [--keep confirm]": Doc(
        "run", as_run="rsr trajectories export {log} --format atif --out traj-atif --keep confirm"),
    # README: factory
    "rsr factory run examples/factory-smoke.yaml": Doc("covered", "tests/factory/test_factory_smoke.py::out"),
    "rsr factory run factory.yaml --stage execute": Doc(
        "covered", "tests/factory/test_factory_resume.py::test_factory_resumes_an_interrupted_execute_stage"),
    "rsr factory status factory.yaml": Doc(
        "covered", "tests/factory/test_factory_smoke.py::test_smoke_adaptive_execution_and_status"),
    "rsr factory report factory.yaml": Doc(
        "covered", "tests/factory/test_factory_smoke.py::test_smoke_report_cli_writes_every_section_and_the_baselines"),
    "rsr factory critique TASK_DIR RUNBOOK.json [--deterministic-only | --config factory.yaml]": Doc(
        "run", as_run="rsr factory critique tasks/core/hello-world runbook.json --deterministic-only"),
    "python benchmarks/leak_detection.py": Doc("run"),
    # README: training and Table 5
    "rsr train training/recipes/tiny-cpu.yaml": Doc("run", extra="--max-steps 2"),
    "rsr train --check training/recipes/tiny-cpu.yaml": Doc("run"),
    "accelerate launch --config_file training/accelerate/fsdp2.yaml -m rsr.training "
    "training/recipes/full-qwen-27b.yaml": Doc("static", GPU),
    "rsr train training/recipes/lora-qwen-27b.yaml": Doc("static", GPU),
    "rsr eval table5 --model vllm/Qwen/Qwen3.5-27B --label Base --log-dir logs/base": Doc("static", GPU),
    "accelerate launch --config_file training/accelerate/fsdp2.yaml -m rsr.training "
    "training/recipes/direct-sft-qwen-27b.yaml": Doc("static", GPU),
    "rsr eval table5 --model vllm/CKPT --label RSR --log-dir logs/rsr": Doc("static", GPU),
    "rsr report table5 logs/base logs/direct logs/rsr --out report/": Doc("static", "reads the three Table 5 "
                                                                           "runs above (" + GPU + ")"),
    # README: reinforcement learning
    "python benchmarks/rl_tiny.py --out runs/rl-tiny": Doc(
        "static", "a cold start and two GRPO runs: tens of minutes on CPU (its run function is exercised by "
                  "tests/rl/test_rl_grpo.py)"),
    "rsr rl --check examples/rl-tiny.yaml": Doc(
        "run", rc=(2,), why="before the cold start it names the missing checkpoint and its command"),
    "rsr rl examples/rl-tiny.yaml": Doc("static", "trains from the cold start python benchmarks/rl_tiny.py builds"),
    "rsr rl examples/rl-tiny.yaml --shuffle-rewards --output-dir runs/rl-tiny/control --no-resume": Doc(
        "static", "the shuffled-reward control of the run above"),
    "accelerate launch --config_file training/accelerate/fsdp2.yaml --num_processes 4 -m rsr.rl "
    "training/rl/grpo-qwen-27b.yaml": Doc("static", GPU),
    # README: self-improvement rounds
    "rsr rounds examples/rounds-smoke.yaml": Doc("covered", "tests/rounds/test_rounds_smoke.py::out"),
    "rsr rounds status examples/rounds-smoke.yaml": Doc(
        "covered", "tests/rounds/test_rounds_smoke.py::test_rounds_status_reports_the_finished_rounds"),
    "rsr rounds examples/rounds-qwen-27b.yaml": Doc("static", GPU),
    "rsr rehearse --out rehearsal": Doc(
        "covered", "tests/spine/test_rehearsal.py::test_rehearse_does_run_every_step_and_record_where_its_output_is"),
    # README: evidence bundles and regrade
    "inspect eval rsr/core --solver rsr/oracle -T tasks=hello-* -T evidence=true --log-dir logs/ev": Doc(
        "run", extra=LIMIT),
    "rsr regrade logs/ev": Doc("run"),
    "rsr regrade logs/ev --tasks tasks/core --jobs 2": Doc("run"),
    "inspect score logs/ev/*.eval --scorer rsr/verifier --action overwrite --overwrite": Doc(
        "covered", "tests/report/test_regrade.py::test_inspect_score_does_regrade_from_bundles_and_refuses_a_log_"
                   "without_them"),
    "rsr report table5 logs/base logs/rsr --out report/ --regrade": Doc(
        "static", "reads the Table 5 runs above (" + GPU + ")"),
    "python benchmarks/bundle_size.py": Doc(
        "static", "the whole core suite twice (minutes); tests/report/test_regrade.py regrades real runs"),
    # README: hack review
    "rsr review logs/ev": Doc("run"),
    "rsr review logs/ev --all --json review.json": Doc("run"),
    "rsr review logs/ev --judge openai/gpt-5": Doc(
        "static", "needs a paid model; tests/integrity/test_hack_review.py runs the judge on a scripted one"),
    # docs/cluster.md
    "pip install rsr[k8s]": Doc("static", NET),
    "helm version": Doc("static", CLUSTER),
    "kubectl config current-context": Doc("static", CLUSTER),
    "docker login registry.example.org": Doc("static", CLUSTER),
    "rsr images build core --push registry.example.org/rsr": Doc("static", CLUSTER),
    "rsr images build ~/tasks/tb2 --push registry.example.org/rsr": Doc("static", CLUSTER),
    "rsr images show registry.example.org/rsr": Doc("static", CLUSTER),
    "inspect eval rsr/core -T sandbox=k8s --model openai/gpt-4o --max-sandboxes 64 --max-samples 64 --epochs 3":
        Doc("static", CLUSTER + " and a paid model"),
    "rsr eval table5 --model vllm/rsr-27b -T sandbox=k8s --log-dir logs/rsr": Doc("static", CLUSTER),
    "export RSR_K8S_IMAGES=~/.cache/rsr/images/registry.example.org-rsr.json": Doc("shell"),
    "rsr factory run factory.yaml --stage discover": Doc("static", CLUSTER + " (a `sandbox: k8s` config)"),
    "rsr serve runs/full-qwen-27b --plan --gpus 8 --gpu-memory-gb 80": Doc("static", GPU + " (a 27B checkpoint)"),
    "rsr serve runs/full-qwen-27b": Doc("static", GPU),
}


@dataclass(frozen=True)
class Shown:
    key: str
    file: str
    line: int
    text: str
    """The command as written (what runs: shell quoting intact)."""


def _fences(text: str) -> Iterator[tuple[str, int, str]]:
    for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.S | re.M):
        yield m.group(1), text[: m.start()].count("\n") + 2, m.group(2)


def _is_command_block(lang: str, body: str) -> bool:
    if lang in SHELL_FENCES:
        return True
    if lang:
        return False
    firsts = [ln.split()[0] for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(firsts) and all(f in PROGRAMS or f.startswith("./") for f in firsts)


def documented_commands() -> list[Shown]:
    found: list[Shown] = []
    for name in DOCS:
        text = (REPO / name).read_text()
        for lang, start, body in _fences(text):
            if not _is_command_block(lang, body):
                continue
            lines = body.splitlines()
            i = 0
            while i < len(lines):
                first, line = i, lines[i]
                while line.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line.rstrip()[:-1] + " " + lines[i].strip()
                i += 1
                tokens = shlex.split(line, comments=True)
                if tokens:
                    found.append(Shown(" ".join(tokens), name, start + first, line))
    return found


def test_documented_commands_are_all_classified() -> None:
    shown = documented_commands()
    unknown = [f"{s.file}:{s.line}: {s.key}" for s in shown if s.key not in COMMANDS]
    assert not unknown, ("documented commands this test does not know; add each to COMMANDS in "
                         f"{Path(__file__).name} (run it, or say why it cannot run here):\n"
                         + "\n".join(unknown))
    stale = sorted(set(COMMANDS) - {s.key for s in shown})
    assert not stale, "COMMANDS entries no longer in the docs (remove them):\n" + "\n".join(stale)
    for key, doc in COMMANDS.items():
        assert doc.how == "run" or doc.why or doc.how == "shell", f"{key}: say why it cannot run here"
        if doc.how == "covered":
            file, _, function = doc.why.partition("::")
            assert re.search(rf"^def {re.escape(function)}\(", (REPO / file).read_text(), re.M), doc.why


# ---------------------------------------------------------------- static checks


def _click_command(root, argv: list[str]):  # noqa: ANN001, ANN202 - click objects
    import click

    cmd, rest, path = root, list(argv), []
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), rest[0])
        assert sub is not None, f"no subcommand {' '.join([*path, rest[0]])!r}"
        path.append(rest.pop(0))
        cmd = sub
    return cmd, rest, path


def _parse(root, argv: list[str], prog: str) -> None:  # noqa: ANN001
    cmd, rest, path = _click_command(root, argv)
    # Parses every option and argument as the command would, without invoking it.
    cmd.make_context(" ".join([prog, *path]), rest)


def _rsr_root():  # noqa: ANN202
    import typer

    from rsr.cli import main as rsr_main

    rsr_main._register()
    return typer.main.get_command(rsr_main.app)


def _check_inspect_eval(argv: list[str]) -> None:
    import inspect as pyinspect

    from inspect_ai._cli.main import inspect as inspect_cli
    from inspect_ai._util.registry import registry_lookup

    import rsr._registry  # noqa: F401

    _parse(inspect_cli, argv[1:], "inspect")
    task = registry_lookup("task", argv[2])
    assert task is not None, f"task {argv[2]} is not registered"
    params = pyinspect.signature(task).parameters
    for i, tok in enumerate(argv):
        if tok == "-T":
            assert argv[i + 1].split("=")[0] in params, f"{argv[2]} takes no -T {argv[i + 1]}"
        if tok == "--solver":
            assert (registry_lookup("solver", argv[i + 1]) or registry_lookup("agent", argv[i + 1])), argv[i + 1]


def check_static(key: str) -> None:
    argv = shlex.split(key)
    prog = argv[0]
    if prog == "rsr":
        _parse(_rsr_root(), argv[1:], "rsr")
        recipes = [a for a in argv if a.startswith("training/recipes/")]
        if recipes:
            from rsr.training.config import load_recipe

            load_recipe(REPO / recipes[0])
    elif prog == "inspect" and argv[1] == "eval":
        _check_inspect_eval(argv)
    elif prog == "inspect":
        from inspect_ai._cli.main import inspect as inspect_cli

        _parse(inspect_cli, argv[1:], "inspect")
    elif prog == "accelerate":
        from importlib.util import find_spec

        from rsr.training.config import load_recipe

        assert (REPO / argv[argv.index("--config_file") + 1]).is_file()
        module = argv[argv.index("-m") + 1]
        assert find_spec(module) is not None
        if module == "rsr.rl":
            from rsr.rl.config import load_rl_config

            load_rl_config(REPO / argv[-1])
        else:
            load_recipe(REPO / argv[-1])
        assert shutil.which("accelerate", path=str(BIN)), "accelerate is not installed"
    elif prog.startswith("./"):
        assert subprocess.run(["bash", "-n", str(REPO / prog)]).returncode == 0
    elif prog == "pip":
        import tomllib

        extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for arg in argv[2:]:
            m = re.fullmatch(r"rsr\[(\w+)\]", arg)
            assert m and m.group(1) in extras, f"pyproject.toml has no extra for {arg}"
    elif prog == "python":
        script = REPO / argv[1]
        assert script.is_file(), f"{argv[1]} does not exist"
        assert subprocess.run([sys.executable, str(script), "--help"], capture_output=True, cwd=REPO,
                              timeout=300).returncode == 0, f"{argv[1]} --help fails"
    else:
        assert prog in {"helm", "kubectl", "docker"}, f"no static check for {prog}"


@pytest.mark.parametrize("key", [k for k, d in COMMANDS.items() if d.how in ("static", "shell")])
def test_documented_command_does_parse_where_it_cannot_run(key: str) -> None:
    doc = COMMANDS[key]
    if doc.how == "shell":
        argv = shlex.split(key)
        if argv[0] == "source":
            assert argv[1] == ".venv/bin/activate" and (BIN / "activate").is_file()
        else:
            assert re.fullmatch(r"[A-Z_][A-Z0-9_]*=.+", argv[1]), key
        return
    check_static(key)


# ---------------------------------------------------------------- running them


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs-cwd")
    for folder in ("tasks", "examples", "evals", "training", "benchmarks"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rsr/harness/prompts/packs/rsr", root / "my-pack")  # `-S prompts=./my-pack`
    import yaml

    labelled = yaml.safe_load((REPO / "tests/factory/fixtures/leaks/hello-world.yaml").read_text())
    (root / "runbook.json").write_text(json.dumps(labelled["clean"][0]))  # RUNBOOK.json
    return root


def _run_in_process(argv: list[str]) -> int:
    if argv[0] == "rsr":
        from rsr.cli.main import main

        return main(argv[1:])
    from inspect_ai._cli.main import inspect as inspect_cli

    try:
        rc = inspect_cli.main(args=argv[1:], prog_name="inspect", standalone_mode=False,
                              auto_envvar_prefix="INSPECT")
    except SystemExit as e:
        rc = e.code
    return int(rc or 0)


@pytest.mark.docker
@pytest.mark.slow
def test_documented_commands_do_run(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harbor_ref import harbor_home

    monkeypatch.chdir(scratch)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    # The default model of every command that names none: offline, scripted.
    monkeypatch.setenv("INSPECT_EVAL_MODEL", "rsr-scripted/agent")
    monkeypatch.setenv("INSPECT_EVAL_MODEL_ARGS", f"fixture={scratch / SCRIPTED}")
    monkeypatch.setenv("RSR_HARBOR_PYTHON", str(harbor_home() / "bin" / "python"))
    failures: list[str] = []
    timings: list[str] = []
    written = {s.key: s.text for s in reversed(documented_commands())}
    for key, doc in COMMANDS.items():
        if doc.how != "run":
            continue
        logs = sorted(scratch.glob("logs/*.eval"), key=lambda p: p.stat().st_mtime)
        line = (doc.as_run or written[key]).replace("{log}", str(logs[-1]) if logs else "NO-LOG")
        argv = shlex.split(line, comments=True) + shlex.split(doc.extra)
        started = time.monotonic()
        if argv[0] in ("rsr", "inspect") and not doc.own_process:
            try:
                rc = _run_in_process(argv)
            except Exception as e:  # a crash is this command's failure; the others still run
                failures.append(f"{' '.join(argv)}: {type(e).__name__}: {str(e)[-1500:]}")
                continue
            finally:
                timings.append(f"{time.monotonic() - started:6.1f}s  {line}")
        else:
            exe = str(REPO / argv[0]) if argv[0].startswith("./") else argv[0]
            cwd = REPO if argv[0].startswith("./") else scratch
            env = {k: v for k, v in os.environ.items() if k not in doc.unset}
            proc = subprocess.run([exe, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=900,
                                  stdin=subprocess.DEVNULL, env=env)
            rc = proc.returncode
            timings.append(f"{time.monotonic() - started:6.1f}s  {line}")
            print(f"[docs] {timings[-1]}", flush=True)
            if rc not in doc.rc:
                failures.append(f"{line}: exit {rc}\n{(proc.stdout + proc.stderr)[-2000:]}")
                continue
            missing = [p for p in doc.expect if not re.search(p, proc.stdout, re.M)]
            if missing:
                failures.append(f"{line}: output lacks {missing}\n{proc.stdout[-2000:]}")
                continue
        if rc not in doc.rc:
            failures.append(f"{' '.join(argv)}: exit {rc}")
    print("\n".join(timings))
    assert not failures, "\n".join(failures)
