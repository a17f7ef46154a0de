"""Wrong input to any rsr command is one line on stderr, exit 2, no traceback, nothing written.

Nothing here is a hand-kept list of commands or keys: the commands and their options are read
from the typer app itself (`rsr.cli.main.app`), the harness and task options from the registered
factories' signatures and config models, and the config-file keys from the pydantic models that
read them. A new command, option or key is perturbed here the moment it exists:
- a missing required argument, a value of the wrong type, a number out of its range, an option
  that does not exist;
- every path option given a binary file where it expects something else, and a path under /proc
  (neither readable as a folder nor writable);
- every numeric option must declare its range (a new `--count` without `min=` fails here: `0` or
  `-1` would otherwise be accepted without a word);
- every key of every config model set to a value of the wrong kind, and an unknown key.
Each case runs in this process (rsr.cli.main.main, as the console script does), in an empty
working directory that must still be empty afterwards.
"""

from __future__ import annotations

import contextlib
import io
import os
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from rsr.cli.main import _register, app, main

REPO = Path(__file__).resolve().parents[2]
BINARY = bytes(range(256)) * 4  # not text, not YAML, not a log, not a folder
UNUSABLE = "/proc/rsr-bad-input/x"


def _commands() -> list[tuple[list[str], Any]]:
    _register()
    root = typer.main.get_command(app)
    found: list[tuple[list[str], Any]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, [*path, name])
        else:
            found.append((path, cmd))

    walk(root, [])
    return found


COMMANDS = _commands()


def _annotation(param: Any) -> Any:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if typing.get_origin(annotation) in (typing.Union, __import__("types").UnionType)\
        and len(args) == 1 else annotation


def _is_option(param: Any) -> bool:
    return bool(getattr(param, "opts", None)) and param.opts[0].startswith("-")


def _numeric(param: Any) -> bool:
    return _annotation(param) in (int, float) and not getattr(param, "is_flag", False)


def _pathlike(param: Any) -> bool:
    return _annotation(param) is Path


def _flag(param: Any) -> str:
    return max(param.opts, key=len)


def _argv(path: list[str], cmd: Any, replace: dict[str, str | None]) -> list[str]:
    """`rsr PATH...` with every required parameter given a placeholder, `replace` overriding
    (None: leave that parameter out)."""
    words = [*path]
    for param in cmd.params:
        value = replace[param.name] if param.name in replace else ("x" if param.required else None)
        if value is None:
            continue
        if _is_option(param):
            words += [_flag(param), value]
        else:
            words.append(value)
    return words


@contextlib.contextmanager
def _empty_cwd(tmp: Path) -> Iterator[Path]:
    work = tmp / "cwd"
    work.mkdir(exist_ok=True)
    old = Path.cwd()
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(old)


def _run(argv: list[str], tmp: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with _empty_cwd(tmp) as work, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    left = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    assert left == [], f"rsr {' '.join(argv)} (rc {rc}) left files behind: {left}"
    return rc, out.getvalue(), err.getvalue()


def _assert_user_error(argv: list[str], tmp: Path, *, names: str | None = None) -> str:
    rc, out, err = _run(argv, tmp)
    shown = f"rsr {' '.join(argv)}\nrc {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert "Traceback" not in out + err, shown
    assert rc == 2, shown
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, shown
    assert lines[0].startswith("error: "), shown
    if names is not None:
        assert names in lines[0], shown
    return lines[0]


def _ids(cases: list[tuple[Any, ...]]) -> list[str]:
    return [" ".join(c[0]) + (f" {c[2]}" if len(c) > 2 else "") for c in cases]


MISSING = [(path, cmd, p.name) for path, cmd in COMMANDS for p in cmd.params if p.required]
NUMERIC = [(path, cmd, p.name) for path, cmd in COMMANDS for p in cmd.params if _numeric(p)]
PATHS = [(path, cmd, p.name) for path, cmd in COMMANDS for p in cmd.params if _pathlike(p)]


def test_the_cli_is_read_from_the_app_and_has_its_commands() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"eval run", "tasks lint", "regrade", "trajectories export", "leaderboard pin"} <= names
    assert len(MISSING) > 20 and len(NUMERIC) > 15 and len(PATHS) > 20


@pytest.mark.parametrize(("path", "cmd", "name"), MISSING, ids=_ids(MISSING))
def test_a_missing_required_parameter_is_one_line(path: list[str], cmd: Any, name: str, tmp_path: Path) -> None:
    param = next(p for p in cmd.params if p.name == name)
    line = _assert_user_error(_argv(path, cmd, {name: None}), tmp_path)
    assert "Missing" in line and ("--help" in line), line
    if _is_option(param):  # a missing positional shifts the next one into its place
        assert _flag(param) in line, line


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_an_unknown_option_is_one_line(path: list[str], cmd: Any, tmp_path: Path) -> None:
    _assert_user_error([*_argv(path, cmd, {}), "--no-such-option"], tmp_path, names="--no-such-option")


@pytest.mark.parametrize(("path", "cmd", "name"), NUMERIC, ids=_ids(NUMERIC))
def test_a_number_of_the_wrong_type_is_one_line(path: list[str], cmd: Any, name: str, tmp_path: Path) -> None:
    param = next(p for p in cmd.params if p.name == name)
    _assert_user_error(_argv(path, cmd, {name: "abc"}), tmp_path, names=_flag(param))


@pytest.mark.parametrize(("path", "cmd", "name"), NUMERIC, ids=_ids(NUMERIC))
def test_every_number_declares_its_range_and_refuses_values_outside_it(path: list[str], cmd: Any, name: str,
                                                                        tmp_path: Path) -> None:
    param = next(p for p in cmd.params if p.name == name)
    assert param.min is not None, (f"rsr {' '.join(path)} {_flag(param)}: a number without a range "
                                   "(typer.Option(..., min=...)) accepts 0 and negatives silently")
    step = 1 if _annotation(param) is int else 0.5
    _assert_user_error(_argv(path, cmd, {name: str(param.min - step)}), tmp_path, names=_flag(param))
    if param.max is not None:
        _assert_user_error(_argv(path, cmd, {name: str(param.max + step)}), tmp_path, names=_flag(param))


@pytest.mark.parametrize(("path", "cmd", "name"), PATHS, ids=_ids(PATHS))
@pytest.mark.parametrize("kind", ["binary file", "under /proc"])
def test_a_path_of_the_wrong_kind_is_one_line(path: list[str], cmd: Any, name: str, kind: str,
                                              tmp_path: Path) -> None:
    if kind == "binary file":
        given = tmp_path / "given.bin"
        given.write_bytes(BINARY)
    else:
        given = Path(UNUSABLE)
    # The other path parameters get the same value: whichever the command checks first answers.
    values = {p.name: str(given) for p in cmd.params if _pathlike(p) and (p.required or p.name == name)}
    _assert_user_error(_argv(path, cmd, values), tmp_path)
    if kind == "binary file":
        assert given.read_bytes() == BINARY, "the given file was changed"


# --- -T / -S values: derived from the registered factories' signatures --------------------------

def _factories() -> list[tuple[str, str, Any]]:
    from rsr import _registry

    return ([(name, "-T", f) for name, f in _registry.TASKS.items()]
            + [(name, "-S", f) for name, f in _registry.HARNESSES.items()])


def _wrong_values(annotation: Any) -> list[Any]:
    """Values no parameter of this type takes (none for a plain `str`, which takes any text)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if typing.get_origin(annotation) is typing.Literal:
        return ["no-such-choice"]
    if any(typing.get_origin(a) is typing.Literal for a in args):
        return ["no-such-choice"]
    if bool in args:
        return ["maybe"]
    if int in args or float in args:
        return ["abc"]
    return []


def _option_cases() -> list[tuple[str, str, str, Any]]:
    import inspect as pyinspect

    from rsr.options import declared_options

    cases = []
    for owner, flag, factory in _factories():
        hints = typing.get_type_hints(pyinspect.unwrap(factory))
        for name in declared_options(factory):
            for value in _wrong_values(hints.get(name, str)):
                cases.append((owner, flag, name, value))
    return cases


OPTION_CASES = _option_cases()


def test_option_cases_cover_every_factory() -> None:
    assert {owner for owner, *_ in OPTION_CASES} >= {"rsr/terminus2", "rsr/statem", "rsr/rsrt", "rsr/oracle",
                                                      "rsr/core", "rsr/harbor"}


@pytest.mark.parametrize(("owner", "flag", "name", "value"), OPTION_CASES,
                         ids=[f"{o} {f} {n}={v}" for o, f, n, v in OPTION_CASES])
def test_an_option_value_of_the_wrong_type_is_one_line_naming_it(owner: str, flag: str, name: str, value: Any) -> None:
    from rsr import _registry
    from rsr.errors import OptionValueError

    factory = {**_registry.TASKS, **_registry.HARNESSES}[owner]
    with pytest.raises(OptionValueError) as info:
        factory(**{name: value})
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{owner}: {flag} {name}={value}: "), message


def _ranged_config_fields() -> list[tuple[str, str, Any]]:
    """Every harness's config-model field with a lower bound, given a value below it."""
    from annotated_types import Ge, Gt

    from rsr import _registry
    from rsr.harness.terminus2 import Terminus2Config
    from rsr.options import declared_options

    cases = []
    for owner, factory in _registry.HARNESSES.items():
        for name in declared_options(factory):
            field = Terminus2Config.model_fields.get(name)
            if field is None:
                continue
            for m in field.metadata:
                if isinstance(m, Ge | Gt):
                    below = m.ge - 1 if isinstance(m, Ge) else m.gt
                    if name == "token_budget" and below == 0:
                        below = -5  # 0 means "no budget"
                    cases.append((owner, name, below))
    return cases


RANGED = _ranged_config_fields()


@pytest.mark.parametrize(("owner", "name", "value"), RANGED, ids=[f"{o} -S {n}={v}" for o, n, v in RANGED])
def test_a_harness_option_out_of_range_is_one_line_naming_it(owner: str, name: str, value: Any) -> None:
    from rsr import _registry
    from rsr.errors import OptionValueError

    with pytest.raises(OptionValueError, match=rf"^{owner}: -S {name}={value}: "):
        _registry.HARNESSES[owner](**{name: value})


def test_ranged_fields_are_found() -> None:
    assert ("rsr/terminus2", "max_episodes", 0) in RANGED


# --- config files: keys derived from the pydantic models that read them ---------------------------

def _config_cases() -> list[tuple[str, list[str], str, Any]]:
    """(what, argv with {} for the file, a valid example file, its model)."""
    from rsr.factory.config import FactoryConfig
    from rsr.report.evalset import EvalSetConfig
    from rsr.report.leaderboard import BoardConfig
    from rsr.rl.config import RLConfig
    from rsr.rounds.config import RoundsConfig
    from rsr.training.config import TrainRecipe

    return [
        ("eval-set spec", ["eval", "show", "{}"], "evals/core.yaml", EvalSetConfig),
        ("factory config", ["factory", "status", "{}"], "examples/factory-smoke.yaml", FactoryConfig),
        ("train recipe", ["train", "run", "{}", "--check"], "training/recipes/tiny-cpu.yaml", TrainRecipe),
        ("RL config", ["rl", "{}", "--check"], "examples/rl-tiny.yaml", RLConfig),
        ("rounds config", ["rounds", "status", "{}"], "examples/rounds-smoke.yaml", RoundsConfig),
        ("board file", ["leaderboard", "pin", "tb2", "--board", "{}"], "leaderboards/board.yaml", BoardConfig),
    ]


CONFIGS = _config_cases()


def _wrong_kind(annotation: Any) -> Any:
    """A value of a kind the field cannot take: a list for a mapping, a mapping for anything
    else (None: the field takes anything)."""
    if annotation is Any:
        return None
    kinds = {typing.get_origin(a) or a for a in (typing.get_args(annotation) or (annotation,))}
    kinds.add(typing.get_origin(annotation) or annotation)
    if Any in kinds:
        return None
    if dict in kinds:
        return ["not", "a", "mapping"]
    return {"not": {"a": "scalar"}}


def _key_cases() -> list[tuple[str, list[str], str, str, Any]]:
    cases = []
    for what, argv, example, model in CONFIGS:
        for key, field in model.model_fields.items():
            wrong = _wrong_kind(field.annotation)
            if wrong is not None:
                cases.append((what, argv, example, key, wrong))
        cases.append((what, argv, example, "no_such_key", 1))
    return cases


KEYS = _key_cases()


@pytest.mark.parametrize(("what", "argv", "example", "key", "wrong"), KEYS,
                         ids=[f"{w}: {k}" for w, _, _, k, _ in KEYS])
def test_a_config_key_of_the_wrong_kind_is_one_line_naming_the_file_and_key(
        what: str, argv: list[str], example: str, key: str, wrong: Any, tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / example).read_text())
    data[key] = wrong
    # In the example's folder: its relative paths (task roots, fixtures) still resolve.
    bad = REPO / Path(example).parent / f".bad-input-{os.getpid()}-{key}.yaml"
    bad.write_text(yaml.safe_dump(data))
    try:
        line = _assert_user_error([a.replace("{}", str(bad)) for a in argv], tmp_path)
    finally:
        bad.unlink()
    assert bad.name in line and key in line, line


@pytest.mark.parametrize(("what", "argv", "example", "model"), CONFIGS, ids=[c[0] for c in CONFIGS])
@pytest.mark.parametrize("content", ["binary", "not yaml", "a list", "empty", "a folder"])
def test_a_config_file_of_the_wrong_kind_is_one_line(what: str, argv: list[str], example: str, model: Any,
                                                     content: str, tmp_path: Path) -> None:
    bad = tmp_path / "config.yaml"
    if content == "a folder":
        bad.mkdir()
    else:
        bad.write_bytes({"binary": BINARY, "not yaml": b"key: [unclosed\n  - x: {", "a list": b"- a\n- b\n",
                         "empty": b""}[content])
    _assert_user_error([a.replace("{}", str(bad)) for a in argv], tmp_path, names=str(bad))


# --- logs read back: every parameter that names logs to read --------------------------------------

LOG_INPUTS = [(path, cmd, p.name) for path, cmd in COMMANDS for p in cmd.params
              if p.name in ("logs", "log_dirs") or (p.name.endswith("logs") and not p.name.startswith("log_dir"))]


def _bad_log(kind: str, tmp: Path) -> Path:
    import zipfile

    folder = tmp / f"logs-{kind.replace(' ', '-')}"
    folder.mkdir()
    log = folder / "2026-01-01T00-00-00-00-00_core_x.eval"
    if kind == "truncated":
        with zipfile.ZipFile(log, "w") as z:
            z.writestr("header.json", "{" + " " * 4000)
        log.write_bytes(log.read_bytes()[:200])
    elif kind == "foreign zip":
        with zipfile.ZipFile(log, "w") as z:
            z.writestr("hello.txt", "not a log")
    else:  # eval_set's records beside nothing that reads
        (folder / "eval-set.json").write_text('{"eval_set_id": "x", "tasks": []}')
        log.write_bytes(BINARY)
    return folder


def test_log_inputs_are_found() -> None:
    assert {" ".join(p) for p, _, _ in LOG_INPUTS} >= {"regrade", "review", "trajectories export",
                                                       "report table5", "leaderboard check"}


@pytest.mark.parametrize(("path", "cmd", "name"), LOG_INPUTS, ids=_ids(LOG_INPUTS))
@pytest.mark.parametrize("kind", ["truncated", "foreign zip", "eval-set folder"])
@pytest.mark.parametrize("as_folder", [True, False], ids=["folder", "file"])
def test_a_log_that_cannot_be_read_is_one_line(path: list[str], cmd: Any, name: str, kind: str, as_folder: bool,
                                               tmp_path: Path) -> None:
    folder = _bad_log(kind, tmp_path)
    given = folder if as_folder else next(folder.glob("*.eval"))
    out = {p.name: str(tmp_path / "out") for p in cmd.params if p.required and p.name in ("out",)}
    _assert_user_error(_argv(path, cmd, {name: str(given), **out}), tmp_path)
    assert not (tmp_path / "out").exists(), "an output folder was made for logs that cannot be read"


# --- rsr eval's start-up checks: before anything is printed or written -----------------------------

@pytest.mark.parametrize(("argv", "expected"), [
    (["--model", "openai/gpt-4o"], "--model openai/gpt-4o: Unable to initialise OpenAI client No OPENAI_API_KEY"),
    (["--model", "hf/local"], "--model hf/local: a local Hugging Face model needs its weights: -M model_path=DIR"),
    (["--model", "hf/local", "-M", "model_path=/nonexistent-weights"], "-M model_path=/nonexistent-weights: no such"),
    (["--model", "rsr-scripted/agent", "-M", "fixture={binary}"], "not a text file"),
    (["--model", "rsr-scripted/agent", "-M", "fixture={notyaml}"], "not valid YAML at line"),
    (["--model", "mockllm/model", "-T", "tasks=hello-world", "-T", "tasks=semver-sort"],
     "-T tasks given twice (tasks=hello-world and tasks=semver-sort); give it once, e.g. -T tasks=a,b"),
    (["--model", "mockllm/model", "-S", "max_episodes=1", "-S", "max_episodes=2"], "-S max_episodes given twice"),
    (["--model", "mockllm/model", "--log-dir", "{binary}"], "is a file, not a folder"),
    (["--model", "mockllm/model", "-S", "max_episodes=0"], "rsr/terminus2: -S max_episodes=0: input should be"),
    (["--model", "mockllm/model", "-S", "reply_format=yaml"], "rsr/terminus2: -S reply_format=yaml: "),
    (["--model", "mockllm/model", "-T", "evidence=maybe"], "rsr/core: -T evidence=maybe: expected true or false"),
], ids=["no API key", "hf/local without weights", "model_path missing", "fixture binary", "fixture not YAML",
        "-T twice", "-S twice", "log dir a file", "-S out of range", "-S not a choice", "-T not a bool"])
def test_eval_run_start_up_checks_are_one_line_and_write_nothing(
        argv: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZUREAI_OPENAI_API_KEY", raising=False)
    binary, notyaml = tmp_path / "f.bin", tmp_path / "f.yaml"
    binary.write_bytes(BINARY)
    notyaml.write_text("rules: [\n  - role: x\n  oops: {\n")
    words = [w.format(binary=binary, notyaml=notyaml) for w in argv]
    if "--log-dir" not in words:
        words += ["--log-dir", str(tmp_path / "logs")]
    line = _assert_user_error(["eval", "run", str(REPO / "evals" / "core.yaml"), *words], tmp_path)
    assert expected in line, line
    assert not (tmp_path / "logs").exists()


def test_eval_show_builds_every_suite_and_names_a_missing_task(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: x\nsuites:\n  - task: rsr/core\n"
                    f"    args: {{tasks: no-such-task, path: {REPO / 'tasks' / 'core'}}}\n")
    line = _assert_user_error(["eval", "show", str(spec)], tmp_path)
    assert "suite core:" in line and "no tasks found matching 'no-such-task'" in line
    spec.write_text("name: x\nsuites:\n  - task: rsr/cor\n")
    assert "(did you mean rsr/core?)" in _assert_user_error(["eval", "show", str(spec)], tmp_path)


@pytest.mark.parametrize(("args", "expected"), [
    (["--solver", "rsr/terminus2", "-S", "max_episodes=0"], "rsr/terminus2: -S max_episodes=0: input should be"),
], ids=["-S out of range"])  # one process is enough: every factory's values are checked in-process above
def test_inspect_eval_refuses_a_wrong_option_value_in_one_line(args: list[str], expected: str, tmp_path: Path) -> None:
    # Plain `inspect eval` goes through the same checks: they live in the factories, not in rsr's CLI.
    import subprocess
    import sys

    inspect_bin = Path(sys.executable).with_name("inspect")
    done = subprocess.run([str(inspect_bin), "eval", "rsr/core", "-T", "tasks=hello-world", *args, "--model",
                           "mockllm/model", "--log-dir", str(tmp_path / "logs")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "Traceback" not in out, out
    assert expected in out, out
    assert not list((tmp_path / "logs").glob("*.eval")), "the eval ran"
