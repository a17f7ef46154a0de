"""Load task directories (Harbor or Terminal-Bench 1) into `LoadedTask`s."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from rsr.errors import DatasetLoadError, TaskFormatError
from rsr.tasks.models import (
    DatasetConfig,
    TaskConfig,
    TaskFormat,
    TB1SolutionStep,
    TB1TaskConfig,
    unknown_key_warning,
)
from rsr.tasks.parity import harbor_differences, verifier_mode
from rsr.tasks.paths import TaskPaths

# Caches and VCS dirs that real corpora leave in tests/ or environment/.
IGNORED_NAMES = {"__pycache__", ".pytest_cache", ".git", ".DS_Store", ".mypy_cache", ".ruff_cache"}
IGNORED_SUFFIXES = (".pyc", ".pyo")

TESTS_MOUNT = "/tests"
SOLUTION_MOUNT = "/solution"
VERIFIER_LOG_DIR = "/logs/verifier"
AGENT_LOG_DIR = "/logs/agent"


@dataclass(frozen=True)
class LoadedTask:
    """A validated task, whatever its on-disk format."""

    name: str
    """Short name: the directory name (stable across formats; used as the sample id)."""
    format: TaskFormat
    paths: TaskPaths
    config: TaskConfig
    instruction: str
    """The agent's instruction (for a multi-step task, the first step's)."""
    warnings: tuple[str, ...] = ()
    tb1: TB1TaskConfig | None = None
    """The original Terminal-Bench 1 config (parser, same-shell flag) for TB1 tasks."""
    step_instructions: tuple[tuple[str, str], ...] = ()
    """(step name, instruction) per `[[steps]]` entry, in order."""
    step: int | None = None
    """Set on the view `for_step` returns: the index of the step it stands for."""
    _digest: list[str] = field(default_factory=list, compare=False, repr=False)

    @property
    def full_name(self) -> str:
        return self.config.task.name or self.name

    @property
    def digest(self) -> str:
        if not self._digest:
            self._digest.append(directory_digest(self.paths.task_dir))
        return self._digest[0]

    @property
    def workdir(self) -> str | None:
        return self.config.environment.workdir

    @property
    def parser_name(self) -> str | None:
        """The TB1 parser that scores this task's test output (None: Harbor reward files)."""
        return self.tb1.parser_name if self.tb1 is not None else None

    def harbor_differences(self) -> list[str]:
        """What would run differently under rsr than under Harbor 0.26 (empty: nothing)."""
        return harbor_differences(self.config, self.parser_name)

    @property
    def step_name(self) -> str | None:
        return self.config.steps[self.step].name if self.step is not None else None

    def for_step(self, index: int) -> LoadedTask:
        """The task as one step of a multi-step task runs it (Harbor's resolution): the step's
        instruction, tests (the shared tests/ with steps/<name>/tests/ laid over it), solution
        (steps/<name>/solution/, else the shared one), and its agent and verifier settings where
        it sets them (verifier env merged over the task's, collect hooks appended)."""
        st = self.config.steps[index]
        agent = self.config.agent.model_copy(update={k: getattr(st.agent, k) for k in st.agent.model_fields_set})
        own = {k: getattr(st.verifier, k) for k in st.verifier.model_fields_set
               if k in ("timeout_sec", "user", "network_mode", "allowed_hosts", "environment_mode", "environment")}
        verifier = self.config.verifier.model_copy(update={
            **own, "env": {**self.config.verifier.env, **st.verifier.env},
            "collect": [*self.config.verifier.collect, *st.verifier.collect]})
        config = self.config.model_copy(update={"agent": agent, "verifier": verifier})
        return replace(self, config=config, instruction=self.step_instructions[index][1], step=index)

    def test_files(self) -> dict[str, Path]:
        """Container path -> host file for everything the verifier needs."""
        files = {f"{TESTS_MOUNT}/{rel}": p for rel, p in iter_files(self.paths.tests_dir)}
        if self.step_name is not None:
            # Harbor uploads the shared tests, then the step's over them.
            step_tests = self.paths.step_tests_dir(self.step_name)
            files.update({f"{TESTS_MOUNT}/{rel}": p for rel, p in iter_files(step_tests)})
        if self.format == "terminal-bench-1":
            files[f"{TESTS_MOUNT}/run-tests.sh"] = self.paths.tb1_run_tests
        return files

    def test_command(self) -> str:
        if self.format == "terminal-bench-1":
            # TB1 judged the pytest run by its exit status; map it to a Harbor reward file.
            cd = f"cd {shlex.quote(self.workdir)} && " if self.workdir else ""
            return (
                f"{cd}TEST_DIR={TESTS_MOUNT} bash {TESTS_MOUNT}/run-tests.sh; rc=$?; "
                f"mkdir -p {VERIFIER_LOG_DIR}; "
                f"if [ $rc -eq 0 ]; then echo 1; else echo 0; fi > {VERIFIER_LOG_DIR}/reward.txt"
            )
        return f"bash {TESTS_MOUNT}/test.sh"

    def tb1_run_tests_command(self) -> str:
        """The raw TB1 test run whose combined output a TB1 parser scores (no reward file)."""
        cd = f"cd {shlex.quote(self.workdir)} && " if self.workdir else ""
        return f"{cd}TEST_DIR={TESTS_MOUNT} bash {TESTS_MOUNT}/run-tests.sh 2>&1"

    def solution_files(self) -> dict[str, bytes]:
        """Container path -> content of the reference solution (only the oracle sees it)."""
        if self.format == "terminal-bench-1":
            sh = self.paths.task_dir / "solution.sh"
            if sh.is_file():
                return {f"{SOLUTION_MOUNT}/solve.sh": sh.read_bytes()}
            return {f"{SOLUTION_MOUNT}/solve.sh": _tb1_solution_yaml_script(self).encode()}
        solution_dir = self.paths.solution_dir
        if self.step_name is not None and self.paths.step_solution_dir(self.step_name).is_dir():
            solution_dir = self.paths.step_solution_dir(self.step_name)
        return {f"{SOLUTION_MOUNT}/{rel}": p.read_bytes() for rel, p in iter_files(solution_dir)}

    def solution_command(self) -> str:
        return f"bash {SOLUTION_MOUNT}/solve.sh"

    def prebuilt_environment_files(self) -> dict[str, Path]:
        """Files Harbor copies into the working directory of a prebuilt `docker_image` whose
        environment/ has no Dockerfile or compose file to build it with (relative path -> file)."""
        env_dir = self.paths.environment_dir
        if self.format != "harbor" or not self.config.environment.docker_image:
            return {}
        if self.paths.dockerfile_path.is_file() or self.paths.compose_path is not None:
            return {}
        return dict(iter_files(env_dir))

    def build_context(self) -> Path:
        if self.format == "terminal-bench-1":
            return self.paths.task_dir
        return self.paths.environment_dir

    def user_compose_file(self) -> Path | None:
        return self.paths.tb1_compose if self.format == "terminal-bench-1" else self.paths.compose_path


def iter_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Files below root as (posix relative path, path), skipping caches, in sorted order."""
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        for name in sorted(filenames):
            if name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES):
                continue
            path = Path(dirpath) / name
            yield path.relative_to(root).as_posix(), path


def directory_digest(root: Path) -> str:
    h = hashlib.sha256()
    for rel, path in iter_files(root):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def tasks_digest(tasks: Iterable[LoadedTask]) -> str:
    """Digest of a task set: names and contents, order-independent."""
    h = hashlib.sha256()
    for name, digest in sorted((t.name, t.digest) for t in tasks):
        h.update(f"{name}={digest}\n".encode())
    return "sha256:" + h.hexdigest()


def _validation_errors(path: Path, err: ValidationError, prefix: str = "") -> list[TaskFormatError]:
    out = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        out.append(TaskFormatError(path, prefix + loc if loc else None, e["msg"]))
    return out


def _parse_model(path: Path, model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        errors = _validation_errors(path, e)
        if len(errors) == 1:
            raise errors[0] from e
        raise DatasetLoadError(errors) from e


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(path, None, f"invalid TOML: {e}") from e
    except UnicodeDecodeError as e:
        raise TaskFormatError(path, None, f"not UTF-8 text: {e}") from e


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise TaskFormatError(path, None, f"invalid YAML: {e}") from e


_CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


def strip_canary(text: str) -> str:
    """Drop leading data-provenance canary comments (and the blank lines after them): Harbor
    never shows them to the agent, so neither do we."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and _CANARY_LINE.match(lines[i].strip()):
        i += 1
    if i == 0:
        return text
    while i < len(lines) and not lines[i].strip():
        i += 1
    return "\n".join(lines[i:])


def _read_instruction(path: Path, errors: list[TaskFormatError]) -> str:
    if not path.is_file():
        errors.append(TaskFormatError(path, None, f"missing {path.name}"))
        return ""
    text = strip_canary(path.read_text(encoding="utf-8", errors="replace")).strip()
    if not text:
        errors.append(TaskFormatError(path, None, "instruction is empty"))
    return text


def load_task(task_dir: str | Path) -> LoadedTask:
    """Load and validate one task directory. Raises `TaskFormatError` (or `DatasetLoadError`
    when one file has several bad fields) naming the file and field."""
    paths = TaskPaths(Path(task_dir).resolve())
    if paths.is_harbor():
        return _load_harbor(paths)
    if paths.is_tb1():
        return _load_tb1(paths)
    raise TaskFormatError(paths.task_dir, None, "not a task directory (no task.toml or task.yaml)")


def _load_harbor(paths: TaskPaths) -> LoadedTask:
    errors: list[TaskFormatError] = []
    data = read_toml(paths.config_path)
    config: TaskConfig | None = None
    try:
        config = _parse_model(paths.config_path, TaskConfig, data)
    except TaskFormatError as e:
        errors.append(e)
    except DatasetLoadError as e:
        errors.extend(e.errors)

    instruction = ""
    steps: tuple[tuple[str, str], ...] = ()
    if config is not None and config.steps:
        # A multi-step task has one instruction per step and needs a test script per step
        # (its own, or the shared tests/test.sh).
        steps = tuple((st.name, _read_instruction(paths.step_instruction_path(st.name), errors))
                      for st in config.steps)
        instruction = steps[0][1]
        for i, st in enumerate(config.steps):
            if not (paths.step_tests_dir(st.name) / "test.sh").is_file() and not paths.test_script.is_file() \
                    and not _bundled_verifier(paths, config, i):
                errors.append(TaskFormatError(paths.step_tests_dir(st.name) / "test.sh", f"steps[{i}]",
                                              "no test script for this step (and no shared tests/test.sh)"))
    else:
        instruction = _read_instruction(paths.instruction_path, errors)
        if not paths.test_script.is_file() and not (config is not None and _bundled_verifier(paths, config)):
            errors.append(TaskFormatError(paths.test_script, None, "missing tests/test.sh (the verifier entrypoint)"))
    if config is not None and not config.environment.docker_image:
        if not paths.dockerfile_path.is_file() and paths.compose_path is None:
            errors.append(TaskFormatError(
                paths.environment_dir, "environment.docker_image",
                "no environment/Dockerfile, no environment/docker-compose.yaml and no docker_image"))
    if paths.compose_path is not None:
        errors.extend(_compose_errors(paths.compose_path))
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise DatasetLoadError(errors)
    assert config is not None
    warnings = tuple(unknown_key_warning(paths.config_path, k, hint) for k, hint in config.unknown_key_hints())
    warnings += tuple(f"{paths.config_path}: {w}" for w in config.version_warnings())
    solutions = [paths.step_solution_dir(st.name) / "solve.sh" for st in config.steps] or [paths.solve_script]
    for solve in solutions:
        if not solve.is_file() and not (config.steps and paths.solve_script.is_file()):
            warnings += (f"{solve}: no reference solution (the oracle cannot run)",)
    return LoadedTask(paths.task_dir.name, "harbor", paths, config, instruction, warnings,
                      step_instructions=steps)


def _compose_errors(path: Path) -> list[TaskFormatError]:
    """A compose file that cannot be a sandbox definition at all (the rest is the adapter's)."""
    try:
        doc = read_yaml(path)
    except TaskFormatError as e:
        return [e]
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        return [TaskFormatError(path, "services", "expected a mapping of services")]
    return [TaskFormatError(path, f"services.{name}", "expected a mapping")
            for name, svc in services.items() if not isinstance(svc, dict)]


def _bundled_verifier(paths: TaskPaths, config: TaskConfig, step: int | None = None) -> bool:
    """A separate verifier whose image already holds /tests (Harbor then uploads none)."""
    if verifier_mode(config, step) != "separate":
        return False
    candidates = [(config.verifier, paths.tests_dir)]
    if step is not None:
        candidates.insert(0, (config.steps[step].verifier, paths.step_tests_dir(config.steps[step].name)))
    for verifier, tests_dir in candidates:
        if verifier.environment is not None and verifier.environment.docker_image:
            return True
        if (tests_dir / "Dockerfile").is_file() or (tests_dir / "docker-compose.yaml").is_file():
            return True
    return False


def _load_tb1(paths: TaskPaths) -> LoadedTask:
    data = read_yaml(paths.tb1_config_path)
    if not isinstance(data, dict):
        raise TaskFormatError(paths.tb1_config_path, None, "expected a mapping at the top level")
    tb1: TB1TaskConfig = _parse_model(paths.tb1_config_path, TB1TaskConfig, data)
    errors: list[TaskFormatError] = []
    instruction = tb1.resolved_instruction()
    instruction = strip_canary(instruction).strip() if instruction else instruction
    if not instruction:
        errors.append(TaskFormatError(paths.tb1_config_path, "instruction", "missing or empty"))
    if not paths.tb1_run_tests.is_file():
        errors.append(TaskFormatError(paths.tb1_run_tests, None, "missing run-tests.sh"))
    if not paths.tb1_dockerfile.is_file() and paths.tb1_compose is None:
        errors.append(TaskFormatError(paths.task_dir / "Dockerfile", None, "missing Dockerfile or docker-compose.yaml"))
    if paths.tb1_compose is not None:
        errors.extend(_compose_errors(paths.tb1_compose))
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise DatasetLoadError(errors)
    config = tb1.to_task_config(paths.task_dir.name)
    warnings = tuple(unknown_key_warning(paths.tb1_config_path, k, hint) for k, hint in tb1.unknown_key_hints())
    sol_yaml = paths.task_dir / "solution.yaml"
    if not (paths.task_dir / "solution.sh").is_file() and not sol_yaml.is_file():
        warnings += (f"{paths.task_dir}: no solution.sh or solution.yaml (the oracle cannot run)",)
    elif sol_yaml.is_file() and not (paths.task_dir / "solution.sh").is_file():
        _tb1_solution_steps(sol_yaml)  # validate now, not when the oracle runs
    return LoadedTask(paths.task_dir.name, "terminal-bench-1", paths, config, instruction or "", warnings, tb1=tb1)


def _tb1_solution_steps(path: Path) -> list[TB1SolutionStep]:
    data = read_yaml(path)
    if not isinstance(data, list):
        raise TaskFormatError(path, None, "expected a list of {command: ...} steps")
    steps = []
    for i, item in enumerate(data):
        try:
            steps.append(TB1SolutionStep.model_validate(item))
        except ValidationError as e:
            raise _validation_errors(path, e, prefix=f"[{i}].")[0] from e
    return steps


def _tb1_solution_yaml_script(task: LoadedTask) -> str:
    steps = _tb1_solution_steps(task.paths.task_dir / "solution.yaml")
    return "#!/bin/bash\nset -e\n" + "\n".join(s.command for s in steps) + "\n"


# ---- datasets ---------------------------------------------------------------------------

def is_task_dir(path: Path) -> bool:
    return (path / "task.toml").is_file() or (path / "task.yaml").is_file()


def find_task_dirs(root: str | Path) -> list[Path]:
    """Every task directory at or below root (a task dir's own subfolders are not searched)."""
    root = Path(root)
    if is_task_dir(root):
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES and not d.startswith("."))
        if here != root and is_task_dir(here):
            found.append(here)
            dirnames[:] = []
    return sorted(found)


def matches(task_name: str, full_name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(task_name, p) or fnmatch.fnmatch(full_name, p) for p in patterns)


def split_patterns(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else value.split(",")
    return [s.strip() for s in items if s and s.strip()]


@dataclass
class DatasetLoad:
    tasks: list[LoadedTask]
    errors: list[TaskFormatError]
    dataset: DatasetConfig | None = None


def load_dataset(
    root: str | Path,
    tasks: str | list[str] | None = None,
    exclude: str | list[str] | None = None,
) -> DatasetLoad:
    """Load every task below root, collecting *all* bad tasks instead of stopping at the first.

    A `dataset.toml` at root, when present, is checked: each listed task must exist and match
    its pinned digest.
    """
    root = Path(root)
    if not root.exists():
        raise TaskFormatError(root, None, "path does not exist")
    include, skip = split_patterns(tasks), split_patterns(exclude)
    loaded: list[LoadedTask] = []
    errors: list[TaskFormatError] = []
    for task_dir in find_task_dirs(root):
        try:
            task = load_task(task_dir)
        except TaskFormatError as e:
            if not include or matches(task_dir.name, task_dir.name, include):
                errors.append(e)
            continue
        except DatasetLoadError as e:
            if not include or matches(task_dir.name, task_dir.name, include):
                errors.extend(e.errors)
            continue
        if include and not matches(task.name, task.full_name, include):
            continue
        if skip and matches(task.name, task.full_name, skip):
            continue
        loaded.append(task)

    dataset = None
    manifest = root / "dataset.toml"
    if manifest.is_file():
        dataset = _parse_model(manifest, DatasetConfig, read_toml(manifest))
        by_name = {t.full_name: t for t in loaded} | {t.name: t for t in loaded}
        for i, ref in enumerate(dataset.tasks):
            task = by_name.get(ref.name) or by_name.get(ref.name.split("/")[-1])
            if task is None:
                if not include or matches(ref.name.split("/")[-1], ref.name, include):
                    errors.append(TaskFormatError(manifest, f"tasks[{i}].name",
                                                  f"task {ref.name!r} not found below {root}"))
            elif ref.digest and ref.digest != task.digest:
                errors.append(TaskFormatError(manifest, f"tasks[{i}].digest",
                                              f"{ref.name}: pinned {ref.digest}, found {task.digest}"))
    return DatasetLoad(loaded, errors, dataset)


def load_tasks_strict(root: str | Path, tasks: str | list[str] | None = None,
                      exclude: str | list[str] | None = None) -> list[LoadedTask]:
    result = load_dataset(root, tasks, exclude)
    if result.errors:
        raise DatasetLoadError(result.errors)
    if not result.tasks:
        raise TaskFormatError(root, None, "no tasks found" + (f" matching {tasks!r}" if tasks else ""))
    return result.tasks


def task_from_metadata(metadata: dict[str, Any]) -> LoadedTask:
    """The task behind an Inspect sample of an rsr suite."""
    task_dir = metadata.get("task_dir")
    if not task_dir:
        raise TaskFormatError("<sample metadata>", "task_dir", "sample is not from an rsr task")
    return load_task(task_dir)
