"""Eval-set specs: a run is defined by a file in `evals/`, not by memory.

A spec names the suites (registered Inspect tasks such as `rsr/tb2`), epochs and epoch
reducers, the agent, and the limits. `run_eval_set` hands it to Inspect's `eval_set`, which
writes one `.eval` log per suite into the log directory and, when called again on the same
directory, resumes: finished suites are skipped, unfinished samples are re-run.
"""

from __future__ import annotations

import contextlib
import errno
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rsr.bundled import bundled
from rsr.config_paths import resolve
from rsr.errors import OptionValueError, RsrError, TaskFormatError, UnknownOptionError, closest, plain_line
from rsr.interrupts import interruptible
from rsr.report.runguard import RunInterrupted, log_dir_lock, remove_own_containers
from rsr.yaml_model import load_yaml_model

__all__ = ["EvalLimits", "EvalSetConfig", "SuiteRun", "find_spec", "load_eval_set", "run_eval_set"]

# The Inspect reducers a spec may name; `pass_at_<k>` / `at_least_<k>` / `pass_k_<k>` are
# parameterised families.
_REDUCER_FAMILIES = ("pass_at_", "at_least_", "pass_k_")
_REDUCERS = {"mean", "median", "mode", "max", "majority"}


class SuiteRun(BaseModel):
    """One suite of the set: a registered Inspect task and its arguments."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="registered task name, e.g. rsr/tb2")
    args: dict[str, Any] = Field(default_factory=dict, description="task arguments (-T)")

    @field_validator("task")
    @classmethod
    def _registered_name(cls, v: str) -> str:
        if "/" not in v:
            raise ValueError(f"{v!r} is not a registered task name like 'rsr/tb2'")
        return v

    @property
    def benchmark(self) -> str:
        return self.task.split("/")[-1]


class EvalLimits(BaseModel):
    """Per-sample limits. Unset means the task's own `agent.timeout_sec` governs the run;
    anything set here is an override, which leaderboard validation rejects."""

    model_config = ConfigDict(extra="forbid")

    time_limit: int | None = None
    working_limit: int | None = None
    message_limit: int | None = None
    token_limit: int | None = None


class EvalSetConfig(BaseModel):
    """An eval set: suites x epochs under one agent, with reducers and limits."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    suites: list[SuiteRun] = Field(min_length=1)
    epochs: int = Field(default=3, ge=1)
    reducers: list[str] = Field(default_factory=lambda: ["mean", "pass_at_3"])
    agent: str = Field(default="rsr/terminus2", description="registered agent or solver")
    agent_args: dict[str, Any] = Field(default_factory=dict)
    limits: EvalLimits = Field(default_factory=EvalLimits)
    max_samples: int | None = Field(default=None, ge=1)
    max_sandboxes: int | None = Field(default=None, ge=1)
    retry_attempts: int = Field(default=3, ge=0)
    retry_on_error: int = Field(
        default=1, ge=0,
        description="times a sample that ended in an error (a lost container, the engine or the model's API "
                    "failing) is run again; the log keeps every attempt and reports count retried samples")
    fail_on_error: bool | float = Field(
        default=False,
        description="False: an errored sample is logged and counts as a failure in reports",
    )

    @field_validator("reducers")
    @classmethod
    def _known_reducers(cls, v: list[str]) -> list[str]:
        for r in v:
            family = next((f for f in _REDUCER_FAMILIES if r.startswith(f)), None)
            if family is not None:
                if not r[len(family):].isdigit() or int(r[len(family):]) < 1:
                    raise ValueError(f"reducer {r!r}: expected {family}<k> with k >= 1")
            elif r not in _REDUCERS:
                known = sorted(_REDUCERS) + [f + "<k>" for f in _REDUCER_FAMILIES]
                raise ValueError(f"unknown reducer {r!r}; known: {', '.join(known)}")
        return v

    def select(self, benchmarks: list[str] | None) -> EvalSetConfig:
        """The same spec restricted to some suites (by benchmark name, e.g. `tb2`)."""
        if not benchmarks:
            return self
        known = {s.benchmark: s for s in self.suites}
        unknown = [b for b in benchmarks if b not in known]
        if unknown:
            raise RsrError(
                f"suite(s) {', '.join(unknown)} not in eval set {self.name!r} "
                f"(it has {', '.join(known)})"
            )
        return self.model_copy(update={"suites": [known[b] for b in benchmarks]})


def load_eval_set(path: str | Path) -> EvalSetConfig:
    """Read and validate an eval-set spec; errors name the file and the field. A suite's `path`
    argument (a task root, `-T path=`) is the spec file's folder's, like every relative path
    in a config file (rsr/config_paths.py)."""
    spec = load_yaml_model(path, EvalSetConfig, what="eval-set spec", error=TaskFormatError)
    base = Path(path).resolve().parent
    for suite in spec.suites:
        if isinstance(suite.args.get("path"), str):
            suite.args["path"] = str(resolve(suite.args["path"], base))
    return spec


def find_spec(name_or_path: str) -> Path:
    """A spec path as given, else `evals/<name>.yaml` in the working directory or the one
    shipped with rsr (the checkout's, or the wheel's copy)."""
    direct = Path(name_or_path)
    if direct.is_file():
        return direct
    candidate = Path.cwd() / "evals" / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    shipped = bundled(f"evals/{name_or_path}.yaml")
    if shipped is not None and shipped.is_file():
        return shipped
    shipped_dir = bundled("evals")
    names = sorted({p.stem for d in (Path.cwd() / "evals", shipped_dir) if d is not None and d.is_dir()
                    for p in d.glob("*.yaml")})
    hint = closest(name_or_path, names)
    raise RsrError(
        f"eval-set spec {name_or_path!r} not found (looked for the file and for "
        f"evals/{name_or_path}.yaml)" + (f"; did you mean {hint}?" if hint else "")
        + f"; name a spec file's path or one of: {', '.join(names) or 'none'}"
    )


def _takes(task_name: str, param: str) -> bool:
    """Whether the registered task `task_name` has a parameter `param` (rsr suites do; a
    user's own task in an eval spec may not)."""
    from inspect_ai._util.registry import registry_lookup

    from rsr.options import declared_options

    found = registry_lookup("task", task_name)
    return found is not None and param in declared_options(found)


def check_agent(name: str, where: str) -> None:
    """Refuse an agent name that no registered agent or solver has, before anything runs.

    Inspect would say so only when the eval starts, at the end of a traceback."""
    from inspect_ai._util.registry import registry_lookup

    from rsr._registry import HARNESSES

    if name in HARNESSES or "@" in name or name.endswith(".py"):  # a file is Inspect's to load
        return
    if registry_lookup("solver", name) is not None or registry_lookup("agent", name) is not None:
        return
    hint = closest(name, HARNESSES)
    raise RsrError(f"{where} {name}: no registered agent or solver has that name"
                   + (f" (did you mean {hint}?)" if hint else "")
                   + f"; rsr's harnesses: {', '.join(HARNESSES)} (`rsr list` shows their options)")


def model_providers() -> list[str]:
    """The model providers Inspect knows in this process (its own and entry-point ones)."""
    from inspect_ai._util.entrypoints import ensure_entry_points
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    try:  # Inspect registers its own providers when this module is imported
        import inspect_ai.model._providers.providers  # noqa: F401
    except ImportError:  # pragma: no cover - a newer Inspect moved it: the lookup still works
        pass
    ensure_entry_points()
    return sorted({registry_unqualified_name(info) for info in
                   (getattr(o, "__registry_info__", None) for o in
                    registry_find(lambda i: i.type == "modelapi")) if info is not None})


def check_model(model: str | None, where: str = "--model") -> None:
    """Refuse a model whose provider Inspect does not know, before anything runs.

    Inspect would say so only when the eval starts, at the end of a 64-line traceback."""
    if not model:
        return  # Inspect's own default (INSPECT_EVAL_MODEL) applies
    providers = model_providers()
    if not providers:
        return
    for name in model.split(","):
        if name.strip() == "none":
            continue  # Inspect's own name for a solver that calls no model (`inspect eval --model none`)
        provider, sep, rest = name.strip().partition("/")
        if not sep or not rest:
            raise RsrError(f"{where} {name}: expected PROVIDER/MODEL, e.g. openai/gpt-4o or "
                           "vllm/CHECKPOINT")
        if provider not in providers:
            hint = closest(provider, providers)
            raise RsrError(f"{where} {name}: Inspect has no model provider {provider!r}"
                           + (f" (did you mean {hint}/{rest}?)" if hint else "")
                           + f"; its providers: {', '.join(providers)}")


# Providers whose client is built from an environment key alone (no weights, no network):
# building one here says "no API key" before anything is printed or written.
_KEYED_PROVIDERS = ("openai", "anthropic", "google", "mistral", "groq", "together", "fireworks",
                    "grok", "openrouter", "perplexity", "deepseek")


def check_model_ready(model: str | None, model_args: dict[str, Any]) -> None:
    """What Inspect would find only once the run started, asked up front: an API key a remote
    provider needs (Inspect: 70 lines of traceback), a local model's weights (`hf/local` without
    `-M model_path` retried an unreachable hub for a minute)."""
    if not model:
        return
    for name in model.split(","):
        provider, _, rest = name.strip().partition("/")
        if provider == "hf":
            path = model_args.get("model_path")
            if path is None and (rest == "local" or not Path(rest).exists()) and rest.count("/") != 1:
                raise RsrError(f"--model {name}: a local Hugging Face model needs its weights: "
                               "-M model_path=DIR (a folder with config.json), or name a hub model "
                               "as hf/ORG/NAME")
            if path is not None and not Path(str(path)).expanduser().is_dir():
                raise RsrError(f"-M model_path={path}: no such folder; name the folder holding the "
                               "model's config.json and weights")
        elif provider == "rsr-scripted" and model_args.get("fixture") is not None:
            from rsr.factory.scripted import load_fixture

            load_fixture(str(model_args["fixture"]))  # not YAML, not rules: one line, now
        elif provider in _KEYED_PROVIDERS:
            from inspect_ai._util.error import PrerequisiteError
            from inspect_ai.model import get_model

            try:
                get_model(name.strip(), memoize=False, **model_args)
            except PrerequisiteError as e:
                raise RsrError(f"--model {name}: {plain_line(str(e))}") from None
            except Exception:  # anything else is Inspect's to report when the run starts
                pass


def check_spec(spec: EvalSetConfig) -> list[str]:
    """Build every suite's task as a run would (a registered name, declared `args` of the right
    type, selected tasks that exist) and check the agent; one line for the first problem. Returns
    the suites whose tasks are not on this machine, which a run skips or refuses."""
    from inspect_ai._util.registry import registry_lookup
    from inspect_ai.util import registry_create

    import rsr._registry  # noqa: F401  (registers rsr/* tasks and agents in this process)

    check_agent(spec.agent, f"eval set {spec.name!r}: agent")
    absent: list[str] = []
    for suite in spec.suites:
        if registry_lookup("task", suite.task) is None:
            hint = closest(suite.task, rsr._registry.TASKS)
            raise RsrError(f"eval set {spec.name!r}: suite task {suite.task!r} is not a registered task"
                           + (f" (did you mean {hint}?)" if hint else "")
                           + f"; rsr's: {', '.join(rsr._registry.TASKS)}")
        try:
            registry_create("task", suite.task, **suite.args)
        except RsrError as e:
            if "not on this machine" not in str(e):
                raise RsrError(f"eval set {spec.name!r}: suite {suite.benchmark}: {e}") from None
            absent.append(suite.benchmark)
    return absent


def run_eval_set(
    spec: EvalSetConfig,
    *,
    model: str | None,
    log_dir: str | Path,
    label: str | None = None,
    agent: str | None = None,
    task_args: dict[str, Any] | None = None,
    model_args: dict[str, Any] | None = None,
    model_base_url: str | None = None,
    display: str | None = None,
    skip_unavailable: bool = False,
    on_skip: Callable[[str, str], None] | None = None,
    solver_args: dict[str, Any] | None = None,
    limit: int | None = None,
    max_samples: int | None = None,
    generate: dict[str, Any] | None = None,
    command: str | None = None,
) -> tuple[bool, list[Path]]:
    """Run (or resume) the eval set into log_dir. Returns (all suites finished, log files).

    The log directory is locked for the run (LogDirLocked names the owner of a held lock;
    `command` is what the lock file and the resume hint record). A run stopped by SIGINT or
    SIGTERM raises RunInterrupted once its sandboxes are gone.

    With skip_unavailable, a suite whose tasks cannot be found on this machine (the paper's
    private TB3/TB4/TBH/SWR100) is skipped and reported through on_skip(suite, reason); it
    then shows as missing in reports rather than stopping the suites that can run.

    solver_args (`-S`) are layered over the spec's `agent_args`; limit and max_samples
    override the spec's; generate holds Inspect generate options (temperature, max_tokens...).
    """
    from inspect_ai import Epochs, eval_set
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.solver import SolverSpec
    from inspect_ai.util import registry_create

    import rsr._registry  # noqa: F401  (registers rsr/* tasks and agents in this process)

    check_model(model)
    check_agent(agent or spec.agent, "--agent" if agent else f"eval set {spec.name!r}: agent")
    tasks = []
    unavailable: list[tuple[str, str]] = []
    for suite in spec.suites:
        # Leaderboard and Table 5 runs keep evidence bundles unless a spec or -T says otherwise.
        args = {**suite.args, **(task_args or {})}
        if "evidence" not in args and _takes(suite.task, "evidence"):
            args["evidence"] = True
        try:
            tasks.append(registry_create("task", suite.task, **args))
        except (UnknownOptionError, OptionValueError):  # the user's to fix, not a missing suite
            raise
        except RsrError as e:
            if not skip_unavailable:
                unavailable.append((suite.benchmark, str(e)))
            elif on_skip is not None:
                on_skip(suite.benchmark, str(e))
        except ValueError as e:
            raise RsrError(f"eval set {spec.name!r}: cannot create task {suite.task!r}: {e}") from e
    if unavailable:  # every missing suite at once, not the first of them
        absent = [name for name, why in unavailable if "not on this machine" in why]
        other = [f"{name}: {why.splitlines()[0]}" for name, why in unavailable if name not in absent]
        raise RsrError(f"eval set {spec.name!r}: {len(unavailable)} suite(s) cannot run here"
                       + (f"; not on this machine: {', '.join(absent)} (`rsr tasks fetch NAME` "
                          "fetches the public ones, -T path=DIR names a copy)" if absent else "")
                       + "".join(f"; {o}" for o in other)
                       + "; drop them with --suites, or run `rsr eval table5`, which skips "
                         "what is missing")
    if not tasks:
        raise RsrError(f"eval set {spec.name!r}: none of its suites is available here")
    agent_args = {**spec.agent_args, **(solver_args or {})}
    if (agent or spec.agent) in rsr._registry.HARNESSES:  # -S names and values: one line, before the lock
        rsr._registry.HARNESSES[agent or spec.agent](**agent_args)
    # `inspect view` lists logs by task: the oracle's run and the null run of rsr/core look the
    # same unless the agent is among the log's tags (Inspect never tells a task its solver).
    agent_name = agent or spec.agent
    metadata = {"rsr_eval_set": spec.name, "rsr_epochs": spec.epochs, "rsr_agent": agent_name}
    if label:
        metadata["rsr_label"] = label
    from rsr.sandbox.disk import preflight

    short = preflight(Path(log_dir))
    if short is not None:
        raise DiskShort(short)
    from rsr.report.disk_hook import UNDER_RSR_RUN

    UNDER_RSR_RUN.set(True)  # this runner reports a full disk itself (one line, then resume)
    with _disk_full_is_one_line(log_dir, command), log_dir_lock(log_dir, command or f"run_eval_set({spec.name!r})"):
        before = set(Path(log_dir).glob("*.eval"))
        result: tuple[bool, list[Any]] | None = None
        with interruptible() as stop:
            try:
                result = eval_set(
                    tasks=tasks,
                    log_dir=str(log_dir),
                    model=model,
                    model_args=model_args or {},
                    model_base_url=model_base_url,
                    # Inspect builds the solver from `args_passed`; `args` is only what the log records.
                    solver=SolverSpec(agent or spec.agent, agent_args, args_passed=agent_args),
                    epochs=Epochs(spec.epochs, spec.reducers),
                    retry_attempts=spec.retry_attempts,
                    retry_on_error=spec.retry_on_error,
                    fail_on_error=spec.fail_on_error,
                    time_limit=spec.limits.time_limit,
                    working_limit=spec.limits.working_limit,
                    message_limit=spec.limits.message_limit,
                    token_limit=spec.limits.token_limit,
                    max_samples=max_samples or spec.max_samples,
                    limit=limit,
                    max_sandboxes=spec.max_sandboxes,
                    metadata=metadata,
                    tags=[t for t in (spec.name, label, agent_name) if t],
                    display=display,  # type: ignore[arg-type]
                    **(generate or {}),
                )
            except PrerequisiteError as e:
                if "log-dir-allow-dirty" not in str(e):
                    raise
                # Inspect's advice names its own `--log-dir-allow-dirty`, which rsr eval does not take.
                raise RsrError(f"--log-dir {log_dir} holds logs of another eval set or of other tasks "
                               f"({_file_named(str(e))}); use a fresh --log-dir for this run, or move "
                               "those logs out") from e
        # Inspect reports a cancelled run as finished (an empty list of logs, "Completed all
        # tasks"): the logs it wrote as `cancelled` and the signal seen are what tell.
        cancelled = [p for p in set(Path(log_dir).glob("*.eval")) - before if _status(p) == "cancelled"]
        if stop.signum is not None or cancelled or result is None:
            signum = stop.signum or signal.SIGINT
            removed = remove_own_containers()
            raise RunInterrupted(
                f"interrupted by {signal.Signals(signum).name}: the run did not finish (whatever "
                f"Inspect's summary above says); the samples that finished are kept in {log_dir}"
                + (f"; removed {removed} sandbox container(s) left running" if removed else "")
                + (f". Resume with:\n  {command}" if command else
                   "; rerun the same command to resume"), signum)
    ok, logs = result
    paths = [Path(log.location) for log in logs]
    from rsr.verify.evidence import EVIDENCE_DIR, write_manifest

    for path in paths:
        if path.is_file() and (path.parent / EVIDENCE_DIR).is_dir():
            write_manifest(path)  # evidence/manifests/<log>.json: the bundle's table of contents
    return ok, paths


class DiskShort(RsrError):
    """The disk a run writes to is (or became) too full: one line with the figures."""


@contextlib.contextmanager
def _disk_full_is_one_line(log_dir: str | Path, command: str | None) -> Iterator[None]:
    """A disk that fills during the run stops it with one line: the logs already written stay,
    and the same command resumes once there is room."""
    try:
        yield
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        from rsr.sandbox.disk import run_spaces

        figures = "; ".join(f"{s.role} {s.path}: {s.free_mb} MB free" for s in run_spaces(Path(log_dir)))
        raise DiskShort(f"the disk filled during the run ({e.strerror}: {e.filename or 'a log write'}); "
                        f"{figures}; the logs already written are kept in {log_dir}: free some space and "
                        f"resume with the same command" + (f": {command}" if command else "")) from None


def summary_lines(paths: list[Path]) -> list[str]:
    """One line per log: its suite and both numbers (rsr.report.metrics.headline), so a run's
    summary shows what Inspect's own display leaves out (errored samples, infra errors)."""
    from rsr.report.logs import read_run
    from rsr.report.metrics import headline
    from rsr.report.table5 import caveat_note

    lines = []
    for path in paths:
        try:
            run = read_run(path)
            m = run.metrics()
            # Named apart: Inspect's results block shows both under the scorer's name.
            at_k = f"; pass@3 {100 * m.pass_at_k:.1f}%" if m.pass_at_k is not None else ""
            lines.append(f"{run.benchmark} ({path.name}): {headline(m)}{at_k}" + caveat_note(run))
        except (RsrError, ValueError) as e:
            lines.append(f"{path.name}: no summary ({e})")
    return lines


def _status(path: Path) -> str:
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(path), header_only=True).status
    except Exception:  # a log still being written, or removed by Inspect's retry clean-up
        return "unknown"


def _file_named(message: str) -> str:
    """The log file an Inspect log-directory message names ("Existing log file 'X' ...")."""
    import re

    found = re.search(r"'([^']+\.(?:eval|json))'", message)
    return found.group(1) if found else "see the directory"

