"""Leaderboard entries built only from `.eval` logs, after checks that make them hard to fake.

A board (`leaderboards/board.yaml`) pins each suite: where its tasks live, which of them count,
optionally their digest, and the minimum epochs (3; 5 under the TB2 rules). `validate_log`
accepts a log only if

- it finished (`status: success`) and ran the pinned suite: the digest over the samples'
  `(task_name, task_digest)` equals the digest of the suite's tasks on disk (and the pin);
- it ran at least `min_epochs` epochs and every (task, epoch) sample is in the file;
- nothing overrode a timeout or resource: no `time_limit`/`working_limit`, no `--sandbox`
  override, and each sample's agent/verifier timeout, cpus and memory equal the task's; the
  agent is not one that runs the hidden tests during the attempt (rsr/rsrt) nor, unless the
  board is a test board (`reference_agents`), the reference solution (rsr/oracle) or a
  scripted model (`SCRIPTED_PROVIDERS`: mockllm/, rsr-scripted/), nor, whatever its model is
  called, one whose passing samples type the task's reference solution
  (rsr.report.agent_checks); the agent is one of rsr's registered harnesses or one the board
  names in `harnesses`; harness arguments away from their defaults (a hidden prompt) label the
  entry, or refuse the log under `harness_args: refuse`;
- under `require_clean_review`, no passing sample's hack review (rsr.verify.hack_review,
  recomputed from the transcript against the board's tasks) finds a `hack`;
- it was verified in the integrity mode the board requires (`integrity: strict`: every
  sample's score records a strict integrity audit, and a regrade judges under strict whatever
  the bundles say: rsr.verify.regrade.regrade_mode);
- every score is consistent with the evidence the verifier left: each sample's value is
  re-derived from the reward metrics in the score's metadata, those metrics must be what the
  transcript shows the verifier reading from the reward file in the sandbox, the value must
  equal the final `ScoreEvent` in the transcript and the sample summary, and the header's
  aggregate metrics and epoch reductions must equal Inspect's own recomputation from the
  samples. Editing the header, a sample value, or a value and its metadata together, is
  caught by at least one of these. (A forger who rewrites every record of a sample
  consistently is not caught: logs are not signed. Re-running the suite is the remedy.)

The entry's numbers are then computed by us from the sample records, never copied from the
header. The entry records each log's sha256, so a later edit of a stored log is detectable.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError, TaskFormatError
from rsr.report.consistency import SampleFacts, header_problems, sample_facts
from rsr.report.integrity import IntegritySummary, summarize
from rsr.report.logs import (
    LIGHT_FIELDS,
    SCORER,
    RunLog,
    benchmark_of,
    run_from_log,
    score_fields,
)
from rsr.report.metrics import SuiteMetrics
from rsr.yaml_model import read_yaml_mapping

__all__ = [
    "BoardConfig",
    "LeaderboardEntry",
    "LogRef",
    "LogValidationError",
    "SuitePin",
    "SuiteResult",
    "ValidatedRun",
    "build_entry",
    "load_board",
    "load_entries",
    "task_set_digest",
    "validate_log",
]

DEFAULT_MIN_EPOCHS = 3
# Terminal-Bench 2 leaderboard rule: at least five trials per task.
TB2_MIN_EPOCHS = 5
TB2_SUITES = {"tb2", "tb2_1"}
# Task arguments that only choose which tasks run (the digest check covers them).
SELECTION_ARGS = {"path", "tasks", "exclude"}
# Where and how the samples ran, not what counts as a pass (the verdict's integrity metadata and
# the task metadata record them); `unpinned` is checked on its own.
RUN_ARGS = {"network", "sandbox", "images", "unpinned", "evidence"}
# `-T integrity=...` chooses how hard the verifier audits, never what is measured.
INTEGRITY_ARG = "integrity"
INTEGRITY_MODES = ("auto", "strict", "warn")
# The agents rsr registers (rsr._registry); anything else is a board's explicit choice.
RSR_HARNESSES = {"rsr/terminus2", "rsr/statem", "rsr/rsrt", "rsr/oracle", "rsr/null"}
TOL = 1e-9
# Agent arguments that would change a task's time or resources (e.g. terminus2's
# agent_timeout_sec); TB2 rules forbid these as override_timeout_sec/override_cpus do.
_OVERRIDE_KEY = re.compile(r"timeout|time_limit|cpus|memory|storage|multiplier")
# Harnesses that run the hidden tests during the attempt and feed pass/fail back to the agent,
# under a budget that replaces the task's agent timeout (rsr/rsrt: data discovery, not eval).
FEEDBACK_HARNESSES = {"rsrt"}

# Model providers whose outputs were written in advance, not generated: Inspect's mockllm,
# rsr's rule-driven `rsr-scripted` (replayed answers), and `none` (a run with no model).
# Only a test board (`reference_agents: true`) accepts them.
SCRIPTED_PROVIDERS = ("mockllm", "rsr-scripted", "none")


def scripted_provider(model: str) -> str | None:
    """The provider of `model` if it is one of SCRIPTED_PROVIDERS, else None."""
    provider = model.split("/", 1)[0]
    return provider if provider in SCRIPTED_PROVIDERS else None


class SuitePin(BaseModel):
    """How a board pins one suite."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="task folder; relative to the board "
                             "file; default: the suite registry's location")
    tasks: list[str] | None = Field(default=None, description="only these tasks (globs)")
    exclude: list[str] | None = None
    digest: str | None = Field(default=None, description="pinned task-set digest")
    min_epochs: int | None = Field(default=None, ge=1)


class BoardConfig(BaseModel):
    """`board.yaml`: the suites a board accepts and how they are pinned."""

    model_config = ConfigDict(extra="forbid")

    title: str = "rsr leaderboard"
    k: int = Field(default=3, ge=1, description="k of the pass@k column")
    reference_agents: bool = Field(
        default=False, description="accept runs of rsr/oracle (it types in the reference "
        "solution) and of scripted models (mockllm/, rsr-scripted/): only for boards that test "
        "the pipeline")
    harnesses: list[str] = Field(
        default_factory=list, description="agents accepted besides rsr's registered harnesses "
        "(Inspect registry names as logs record them, e.g. `myorg/myagent`)")
    integrity: Literal["strict", "any"] = Field(
        default="any", description="`strict`: accept only logs whose every sample was verified "
        "under strict integrity (`-T integrity=strict`)")
    require_regrade: bool = Field(
        default=False, description="accept only logs whose every sample has an evidence bundle "
        "and whose regrade (`rsr regrade`) reproduces every score")
    require_clean_review: bool = Field(
        default=False, description="refuse a log with a passing sample whose hack review "
        "(rsr.verify.hack_review, recomputed here from the transcript) finds a `hack`")
    harness_args: Literal["refuse", "label"] = Field(
        default="label", description="a run whose harness arguments differ from their defaults (a hidden "
        "prompt such as `-S private_guidance=...`, any `-S` setting): `label` its entry with them on the "
        "page, or `refuse` it (rsr.report.agent_checks)")
    suites: dict[str, SuitePin]

    @property
    def test_board(self) -> bool:
        """A board that accepts the reference solution and scripted models tests the pipeline;
        its page says so."""
        return self.reference_agents

    def min_epochs(self, benchmark: str) -> int:
        pin = self.suites.get(benchmark)
        if pin is not None and pin.min_epochs is not None:
            return pin.min_epochs
        return TB2_MIN_EPOCHS if benchmark in TB2_SUITES else DEFAULT_MIN_EPOCHS


class LoadedBoard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Path
    config: BoardConfig

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def entries_dir(self) -> Path:
        return self.root / "entries"

    def suite_tasks(self, benchmark: str) -> dict[str, Any]:
        """name -> LoadedTask of the pinned suite, loaded from disk."""
        from rsr.suites.registry import resolve_suite_path
        from rsr.tasks.load import load_tasks_strict

        pin = self.config.suites[benchmark]
        if pin.path is not None:
            root = Path(pin.path)
            root = root if root.is_absolute() else self.root / root
        else:
            root = resolve_suite_path(benchmark)
        return {t.name: t for t in load_tasks_strict(root, pin.tasks, pin.exclude)}


def load_board(path: str | Path) -> LoadedBoard:
    path = Path(path)
    if path.is_dir():
        path = path / "board.yaml"
    if not path.exists():
        raise TaskFormatError(path, None, "board file not found (create it with `suites:`)")
    data = read_yaml_mapping(path, "board file", TaskFormatError)  # binary, not YAML: one line
    try:
        config = BoardConfig.model_validate(data or {})
    except ValidationError as e:
        err = e.errors()[0]
        raise TaskFormatError(path, ".".join(map(str, err["loc"])), err["msg"]) from e
    return LoadedBoard(path=path, config=config)


def task_set_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """Order-independent digest of (task name, task digest) pairs."""
    h = hashlib.sha256()
    for name, digest in sorted(set(pairs)):
        h.update(f"{name}={digest}\n".encode())
    return "sha256:" + h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


class LogValidationError(RsrError):
    """A log failed leaderboard validation; lists every problem, not only the first."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{path}: rejected ({len(problems)} problem(s)):\n{lines}")


def expected_value(score_metadata: dict[str, Any]) -> tuple[float, float, float]:
    """(passed, reward, process) re-derived from what the verifier recorded.

    Mirrors rsr.verify.verifier: reward is the reward file's `reward` (or its only metric, or
    the minimum of several); passed means reward >= 1; process is the mean of the clipped
    milestones, else equal to passed. A verifier error scores 0 everywhere.
    """
    if score_metadata.get("error"):
        return 0.0, 0.0, 0.0
    metrics = score_metadata.get("metrics") or {}
    if not isinstance(metrics, dict) or not metrics:
        raise ValueError("score metadata has no reward metrics")
    from rsr.verify.reward import total_reward
    from rsr.verify.verifier import outcome_of

    values = {str(k): float(v) for k, v in metrics.items()}
    reward = total_reward(values)
    milestones = {str(k): float(v) for k, v in (score_metadata.get("milestones") or {}).items()}
    for name, v in milestones.items():
        if name in values and not math.isclose(values[name], v, abs_tol=TOL):
            raise ValueError(f"milestone {name!r} = {v} but the reward file says {values[name]}")
    passed, process = outcome_of(reward, milestones)
    return (1.0 if passed else 0.0), reward, process


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        # NaN: a metric with nothing to measure (passed_excl_infra when every run was infra).
        return math.isclose(float(a), float(b), abs_tol=TOL) or (math.isnan(a) and math.isnan(b))
    return a == b


class LogRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    sha256: str
    eval_id: str
    run_id: str
    created: str
    task: str
    model: str
    solver: str | None
    samples_sha256: str | None = Field(
        None, description="digest of the samples' uuids: the same run re-saved under other bytes")
    stored: str | None = Field(None, description="the copy kept with the board, relative to its folder")


def samples_digest(uuids: Iterable[str]) -> str:
    return "sha256:" + hashlib.sha256("\n".join(sorted(uuids)).encode()).hexdigest()


class HarnessInterface(BaseModel):
    """What the model met: whose harness loop, in which words (a sample store's `rsr_harness`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    implementation: str | None = None
    prompt_pack: str | None = None
    prompt_pack_sha256: str | None = None
    parity_mode: bool | None = None
    fixes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How a board names it: an rsr-wording run is never shown as Harbor's Terminus 2."""
        if self.implementation is None:
            return "unknown harness interface"
        words = {"harbor": "Harbor's Terminus 2 wording", "rsr": "rsr wording"}.get(
            self.prompt_pack or "", f"prompt pack {self.prompt_pack}")
        mode = "Harbor parity" if self.parity_mode else f"fixes: {', '.join(self.fixes) or '-'}"
        return f"{self.implementation} implementation, {words}, {mode}"


def harness_interface(stores: list[dict[str, Any]]) -> tuple[HarnessInterface | None, list[str]]:
    """The one interface every sample of a log ran with (problems when samples disagree)."""
    seen = set()
    for store in stores:
        settings = store.get("rsr_harness") or {}
        if not settings:
            continue
        fixes = settings.get("fixes") or ()
        seen.add(HarnessInterface(
            implementation=settings.get("harness_implementation"), prompt_pack=settings.get("prompt_pack"),
            prompt_pack_sha256=settings.get("prompt_pack_sha256"), parity_mode=settings.get("parity_mode"),
            fixes=tuple(sorted(fixes if isinstance(fixes, list | tuple) else str(fixes).split(",")))))
    if len(seen) > 1:
        return None, [f"samples ran with different harness interfaces: {sorted(i.label for i in seen)}"]
    return (seen.pop() if seen else None), []


class BundleRef(BaseModel):
    """A log's evidence bundle (rsr.verify.evidence): its run manifest and where it is kept."""

    model_config = ConfigDict(extra="forbid")

    manifest: str = Field(description="digest of the run manifest")
    samples: int
    with_evidence: int = Field(description="samples whose verdict has a bundle")
    stored: str | None = Field(None, description="the manifest kept with the board, relative to its folder")


class RegradeVerdict(BaseModel):
    """What re-running the verifier on the bundles (no model, no agent) gave."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["reproduced", "disagrees", "not-run"]
    checked: str | None = None
    verifier: str | None = Field(None, description="rsr version of the verifier that regraded")
    samples: int = 0
    reproduced: int = 0
    problems: list[str] = Field(default_factory=list)


class ValidatedRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: RunLog
    suite_digest: str
    log: LogRef
    integrity: IntegritySummary = Field(default_factory=IntegritySummary)
    interface: HarnessInterface | None = None
    bundle: BundleRef | None = None
    records: list[str] = Field(default_factory=list, description="per-sample evidence record digests")
    regrade: RegradeVerdict = Field(default_factory=lambda: RegradeVerdict(status="not-run"))
    harness_args: dict[str, str] = Field(default_factory=dict, description="harness arguments away from "
                                         "their defaults (a board that labels them)")


def _check_sample_scores(sample: Any, events: list[Any], summary: Any | None,
                         problems: list[str]) -> None:
    where = f"sample {sample.id} epoch {sample.epoch}"
    score = (sample.scores or {}).get(SCORER)
    if score is None:
        if sample.error is None:
            problems.append(f"{where}: no {SCORER} score and no error")
        return
    fields = score_fields(score.value)
    if fields is None:
        problems.append(f"{where}: score value {score.value!r} is not a verifier score")
        return
    recorded = (1.0 if fields[0] else 0.0, fields[1], fields[2])
    if float(score.value["passed"]) not in (0.0, 1.0):
        problems.append(f"{where}: passed={score.value['passed']!r} is not 0 or 1")
    try:
        derived = expected_value(score.metadata or {})
    except (ValueError, TypeError) as e:
        problems.append(f"{where}: score metadata: {e}")
    else:
        if not _close(list(recorded), list(derived)):
            problems.append(
                f"{where}: score value (passed, reward, process) = {recorded} does not follow "
                f"from the verifier's recorded reward metrics, which give {derived}"
            )
    _check_reward_read(events, score, where, problems)
    finals = [e for e in events if e.event == "score" and not e.intermediate]
    if not finals:
        problems.append(f"{where}: transcript has no final score event")
    elif not _close(finals[-1].score.value, score.value):
        problems.append(f"{where}: score value {score.value} differs from the transcript's "
                        f"score event {finals[-1].score.value}")
    if summary is not None:
        s = (summary.scores or {}).get(SCORER)
        if s is None or not _close(s.value, score.value):
            problems.append(f"{where}: score value {score.value} differs from the sample "
                            f"summary {None if s is None else s.value}")


_REWARD_FILE = re.compile(r"/logs/verifier\b.*reward\.(json|txt)|reward\.(json|txt).*"
                          r"/logs/verifier\b", re.S)


def _reward_read(event: Any) -> tuple[str, str] | None:
    """(kind, file text) if this sandbox event is the verifier reading the reward file.

    Two shapes are recognised: `cat /logs/verifier/reward.<kind>` and a probe that prints
    the kind (`json`/`txt`) on its first line followed by the file.
    """
    if event.event != "sandbox" or event.action != "exec" or event.result != 0:
        return None
    cmd, out = event.cmd or "", event.output or ""
    m = _REWARD_FILE.search(cmd)
    if m is None or not out.strip():
        return None
    first, _, rest = out.partition("\n")
    if first.strip() in ("json", "txt"):
        return first.strip(), rest
    if "cat" in cmd and "if [" not in cmd:
        return (m.group(1) or m.group(2)), out
    return None


# A verifier that reads the reward files from the host (not through an exec in the sandbox)
# records what it read as `transcript().info({REWARD_FILES_KEY: {"reward.txt": text|None,
# "reward.json": text|None}}, source=VERIFIER_SOURCE)`.
VERIFIER_SOURCE = "rsr/verifier"
REWARD_FILES_KEY = "reward_files"


def _reward_files_recorded(event: Any) -> tuple[bytes | None, bytes | None] | None:
    if event.event != "info" or event.source != VERIFIER_SOURCE or not isinstance(event.data, dict):
        return None
    files = event.data.get(REWARD_FILES_KEY)
    if not isinstance(files, dict):
        return None

    def raw(name: str) -> bytes | None:
        value = files.get(name)
        return value.encode() if isinstance(value, str) else None

    return raw("reward.txt"), raw("reward.json")


def _metrics_seen(events: list[Any]) -> dict[str, float] | str | None:
    """The metrics of the reward file the transcript shows the verifier reading (a str: why the
    file cannot be read; None: no read at all)."""
    from rsr.verify.reward import RewardError, read_reward

    recorded = [r for r in map(_reward_files_recorded, events) if r is not None]
    if recorded:
        txt, js = recorded[-1]
        try:
            return read_reward(txt, js, milestones=[], strict=False).metrics
        except RewardError as e:
            return str(e)
    reads = [r for r in map(_reward_read, events) if r is not None]
    if not reads:
        return None
    # Logs of the in-container verifier: one probe exec printed which file it found and its text.
    kind, text = reads[-1]
    try:
        raw = text.encode()
        return read_reward(raw if kind == "txt" else None, raw if kind == "json" else None,
                           milestones=[], strict=False).metrics
    except RewardError as e:
        return str(e)


def _check_reward_read(events: list[Any], score: Any, where: str, problems: list[str]) -> None:
    """The reward metrics in the score metadata must be what the transcript shows the
    verifier reading from the reward file (an exec in the sandbox, or the verifier's record of
    the files it read from the host)."""
    if (score.metadata or {}).get("error"):
        return
    seen = _metrics_seen(events)
    if seen is None:
        problems.append(f"{where}: transcript shows no read of the reward file")
        return
    if isinstance(seen, str):
        problems.append(f"{where}: reward file as read in the transcript: {seen}")
        return
    recorded = (score.metadata or {}).get("metrics") or {}
    if not _close(seen, {str(k): v for k, v in recorded.items()}):
        problems.append(f"{where}: score metadata metrics {recorded} differ from the reward "
                        f"file the verifier read ({seen})")


def _check_header(log: Any, problems: list[str]) -> None:
    """The header's metrics and reductions must equal Inspect's recomputation from samples."""
    from inspect_ai.log import recompute_metrics

    import rsr._registry  # noqa: F401  (metric/scorer names resolve through the registry)

    copy = log.model_copy(deep=True)
    try:
        recompute_metrics(copy)
    except Exception as e:  # a header naming unknown metrics cannot be checked: reject
        problems.append(f"header: metrics cannot be recomputed ({type(e).__name__}: {e})")
        return

    def flat(results: Any) -> dict[str, float]:
        out = {}
        for s in results.scores if results else []:
            for name, m in s.metrics.items():
                out[f"{s.name}/{s.reducer or '-'}/{name}"] = m.value
        return out

    have, want = flat(log.results), flat(copy.results)
    if have.keys() != want.keys():
        problems.append(f"header: metrics {sorted(have)} differ from the recomputed "
                        f"{sorted(want)}")
    for key in sorted(have.keys() & want.keys()):
        if not _close(have[key], want[key]):
            problems.append(f"header: {key} = {have[key]} but the samples give {want[key]}")

    def reductions(rs: Any) -> dict[str, Any]:
        return {f"{r.scorer}/{r.reducer}/{s.sample_id}": s.value
                for r in rs or [] for s in r.samples}

    have_r, want_r = reductions(log.reductions), reductions(copy.reductions)
    for key in sorted(have_r.keys() | want_r.keys()):
        if not _close(have_r.get(key), want_r.get(key)):
            problems.append(f"reductions: {key} = {have_r.get(key)} but the samples give "
                            f"{want_r.get(key)}")


def validate_log(path: str | Path, board: LoadedBoard, *, regrade: bool | None = None) -> ValidatedRun:
    """Run every check; raise LogValidationError listing all problems found.

    `regrade` (default: when the board requires it) re-runs the verifier on every sample's
    evidence bundle (Docker) and rejects the log unless every score is reproduced."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries

    path = Path(path)
    try:
        # Scores of every sample without transcripts; transcripts are read one sample at a
        # time below, so a 5-epoch TB2 log does not have to fit in memory at once.
        log = read_eval_log(str(path), exclude_fields=LIGHT_FIELDS)
    except FileNotFoundError as e:
        raise RsrError(f"{path}: log file not found") from e
    except Exception as e:
        raise LogValidationError(path, [f"not a readable Inspect log: {e}"]) from e
    problems: list[str] = []
    spec = log.eval
    benchmark = benchmark_of(spec.task)
    if benchmark not in board.config.suites:
        raise LogValidationError(path, [
            f"suite {benchmark!r} ({spec.task}) is not on this board "
            f"({', '.join(board.config.suites)}); pin it in {board.path}"])

    if log.status != "success":
        problems.append(f"status is {log.status!r}, not 'success': resume the eval set first")
    if getattr(log, "invalidated", False):
        problems.append("log is marked invalidated")

    epochs = spec.config.epochs or 1
    need = board.config.min_epochs(benchmark)
    if epochs < need:
        problems.append(f"epochs = {epochs}; {benchmark} needs at least {need} per task")

    # Overrides: timeouts and resources come from task.toml, never from the command line.
    for field in ("time_limit", "working_limit"):
        if getattr(spec.config, field) is not None:
            problems.append(f"eval config {field} = {getattr(spec.config, field)} overrides "
                            "the tasks' own timeouts")
    if spec.sandbox is not None:
        problems.append(f"sandbox overridden to {spec.sandbox.type!r}; tasks must run in "
                        "their own environment")
    solver_overrides = sorted(k for k, v in (spec.solver_args or {}).items()
                              if v is not None and _OVERRIDE_KEY.search(k))
    if solver_overrides:
        problems.append(f"agent arguments {solver_overrides} override the tasks' timeouts or "
                        "resources")
    if (spec.solver or "").rsplit("/", 1)[-1] == "oracle" and not board.config.reference_agents:
        problems.append(f"agent {spec.solver!r} runs the reference solution; only a board with "
                        "`reference_agents: true` (a test board) accepts it")
    if scripted_provider(spec.model) and not board.config.reference_agents:
        problems.append(f"model {spec.model!r} replays scripted outputs ({', '.join(SCRIPTED_PROVIDERS)} "
                        "are offline stand-ins); only a board with `reference_agents: true` "
                        "(a test board) accepts it")
    if (spec.solver or "").rsplit("/", 1)[-1] in FEEDBACK_HARNESSES:
        problems.append(f"agent {spec.solver!r} runs the hidden tests during the attempt and "
                        "replaces the tasks' agent timeouts with its budget; not a board run")
    solver = spec.solver
    if solver is None:
        problems.append("the log records no agent (the task's default solver ran); run with an "
                        "explicit --solver/--agent so the entry's harness is known")
    elif solver not in RSR_HARNESSES and solver not in board.config.harnesses:
        problems.append(f"agent {solver!r} is not a registered rsr harness "
                        f"({', '.join(sorted(RSR_HARNESSES))}); a board accepts other agents "
                        f"only when it names them in `harnesses:` ({board.path})")
    mode_arg = (spec.task_args or {}).get(INTEGRITY_ARG)
    if mode_arg is not None and mode_arg not in INTEGRITY_MODES:
        problems.append(f"task argument integrity={mode_arg!r} is not one of {INTEGRITY_MODES}")
    if str((spec.task_args or {}).get("unpinned", False)).lower() in ("true", "1", "yes"):
        problems.append("the run used -T unpinned=true (a local copy that differs from the suite's pin)")
    if (spec.metadata or {}).get("unpinned"):
        problems.append("the suite copy the run used is unpinned (its digest differs from the pin)")
    extra_args = sorted(k for k, v in (spec.task_args or {}).items()
                        if k not in SELECTION_ARGS | RUN_ARGS and k != INTEGRITY_ARG and v is not None)
    if extra_args:
        problems.append(f"task arguments {extra_args} are not allowed on the board")

    tasks = board.suite_tasks(benchmark)
    disk_digest = task_set_digest((n, t.digest) for n, t in tasks.items())
    pin = board.config.suites[benchmark]
    if pin.digest is not None and pin.digest != disk_digest:
        raise RsrError(f"{board.path}: suites.{benchmark}.digest pins {pin.digest} but the "
                       f"tasks on disk give {disk_digest}; re-pin or restore the suite")

    samples = {(str(s.id), s.epoch): s for s in log.samples or []}
    summaries = {(str(s.id), s.epoch): s for s in read_eval_log_sample_summaries(str(path))}
    log_pairs: set[tuple[str, str]] = set()
    stores: list[dict[str, Any]] = []
    facts: list[SampleFacts] = []
    uuids: list[str] = []
    references: dict[str, Any] = {}  # task name -> rsr.report.agent_checks.Reference, built once
    for (sid, epoch), s in sorted(samples.items()):
        meta = s.metadata or {}
        name = str(meta.get("task_name") or sid)
        digest = str(meta.get("task_digest"))
        score = (s.scores or {}).get(SCORER)
        scored_digest = (score.metadata or {}).get("task_digest") if score else None
        if scored_digest is not None and scored_digest != digest:
            problems.append(f"sample {sid} epoch {epoch}: verified task digest "
                            f"{scored_digest} differs from the sample's {digest}")
        log_pairs.add((name, digest))
        task = tasks.get(name)
        if task is not None:
            _check_overrides(sid, epoch, meta, task, problems)
            _check_isolation(sid, epoch, score, task, problems)
        # Inspect stores long strings (a reward.json, an exec's output) once, as
        # `attachment://<hash>` references: the checks below must read the text itself.
        full = read_eval_log_sample(str(path), id=s.id, epoch=epoch, resolve_attachments="full",
                                    exclude_fields=LIGHT_FIELDS - {"events", "store", "attachments", "messages"})
        stores.append(full.store or {})
        if task is not None and not board.config.reference_agents:
            _check_replay(full, score, name, task, references, problems)
        facts.append(sample_facts(full))
        uuids.append(str(full.uuid or f"{sid}#{epoch}"))
        _check_sample_scores(s, full.events, summaries.get((sid, epoch)), problems)

    log_digest = task_set_digest(log_pairs)
    if log_digest != disk_digest:
        log_digests = dict(log_pairs)
        # A task the run could not run here (needs a GPU) is still missing from this entry.
        skipped = {str(i.get("task")): str(i.get("reason")) for i in (spec.metadata or {}).get("not_run") or []
                   if isinstance(i, dict)}
        missing = [f"{n} (not run: {skipped[n]})" if n in skipped else n
                   for n in sorted(set(tasks) - set(log_digests))]
        extra = sorted(set(log_digests) - set(tasks))
        changed = sorted(n for n in set(tasks) & set(log_digests)
                         if log_digests[n] != tasks[n].digest)
        problems.append(
            f"task set digest {log_digest} does not match the pinned suite {disk_digest}"
            + (f"; missing tasks {missing}" if missing else "")
            + (f"; tasks not in the suite {extra}" if extra else "")
            + (f"; tasks with different content {changed}" if changed else "")
        )
    present = {(str((s.metadata or {}).get("task_name") or s.id), s.epoch)
               for s in samples.values()}
    absent = [f"{n}#{e}" for n in sorted(tasks) for e in range(1, epochs + 1)
              if (n, e) not in present]
    if absent:
        problems.append(f"{len(absent)} sample(s) missing from the log: "
                        f"{', '.join(absent[:10])}{' ...' if len(absent) > 10 else ''}")
    interface, mixed = harness_interface(stores)
    problems.extend(mixed)
    from rsr.report.agent_checks import nondefault_args

    harness_args = nondefault_args(spec.solver, spec.solver_args, stores)
    if harness_args and board.config.harness_args == "refuse":
        problems.append(f"the agent ran with non-default arguments {harness_args}; this board refuses them "
                        f"(`harness_args: label`, the default, publishes them on the entry instead)")
    problems.extend(header_problems(log, facts, benchmark))
    # Errored samples were never verified: they have no verdict (and count as failures anyway).
    scores = [(s.scores or {}).get(SCORER) for s in samples.values()]
    integrity = summarize(score.metadata for score in scores if score is not None)
    if board.config.integrity == "strict" and (not integrity.strict or integrity.unknown):
        problems.append(f"the board requires strict integrity, but the samples were verified in "
                        f"mode {integrity.mode!r} ({integrity.unknown} without an audited "
                        "verdict); rerun with -T integrity=strict in the rsr-docker sandbox")
    if log.results is None:
        problems.append("header has no results")
    else:
        _check_header(log, problems)

    from rsr.verify.binding import binding_problems
    from rsr.verify.evidence import run_manifest

    manifest = run_manifest(log)
    problems.extend(binding_problems(path, log))  # one execution per sample (rsr.verify.binding)
    records = [m.record for m in manifest.samples if m.record]
    bundle = BundleRef(manifest=manifest.digest, samples=len(manifest.samples),
                       with_evidence=len(records)) if records else None
    verdict = RegradeVerdict(status="not-run")
    must = board.config.require_regrade
    if must and not manifest.complete:
        problems.append(f"the board requires evidence bundles, but {len(manifest.samples) - len(records)} of "
                        f"{len(manifest.samples)} samples have none: run through `rsr eval run` or with "
                        "-T evidence=true")
    elif (regrade if regrade is not None else must) and not problems:
        verdict = regrade_verdict(path, log, required="strict" if board.config.integrity == "strict" else None)
        if verdict.status != "reproduced":
            problems.extend(f"regrade: {p}" for p in verdict.problems)
    if board.config.require_clean_review:
        from rsr.verify.hack_review import review_log

        # From the transcript and the board's own tasks: never the review the log's scores carry.
        problems.extend(f"hack review: {p}" for p in review_log(path, tasks=tasks).problems())
    if problems:
        raise LogValidationError(path, problems)
    ref = LogRef(file=path.name, sha256=file_sha256(path), eval_id=spec.eval_id,
                 run_id=spec.run_id, created=str(spec.created), task=spec.task,
                 model=spec.model, solver=spec.solver, samples_sha256=samples_digest(uuids))
    return ValidatedRun(run=run_from_log(log, path), suite_digest=disk_digest, log=ref,
                        integrity=integrity, interface=interface, bundle=bundle, records=records,
                        regrade=verdict, harness_args=harness_args)


def regrade_verdict(path: Path, log: Any = None, required: Literal["strict"] | None = None) -> RegradeVerdict:
    """Regrade a log from its bundles (rsr.verify.regrade) and summarise it for an entry
    (`log`: the log at `path`, already read; `required`: the board's integrity mode, which the
    regrade judges under whatever the bundles say)."""
    from rsr import __version__ as rsr_version
    from rsr.verify.regrade import regrade_log

    report = regrade_log(path, log=log, required=required)
    return RegradeVerdict(status="reproduced" if report.ok else "disagrees",
                          checked=datetime.now(UTC).strftime("%Y-%m-%d"), verifier=rsr_version,
                          samples=len(report.samples), reproduced=report.reproduced,
                          problems=report.problems()[:50])


def _entry_records(result: SuiteResult, board_root: Path | None) -> set[str]:
    """The evidence records of an entry's stored bundle manifest (empty when none is kept)."""
    if board_root is None or result.bundle is None or not result.bundle.stored:
        return set()
    from rsr.verify.evidence import RunManifest

    try:
        manifest = RunManifest.model_validate_json((board_root / result.bundle.stored).read_text())
    except (OSError, ValueError):
        return set()
    return {s.record for s in manifest.samples if s.record}


def duplicate_problems(runs: list[ValidatedRun], entries: list[LeaderboardEntry],
                       replacing: str | None = None, board_root: Path | None = None) -> list[str]:
    """Every log (or bundle) that already backs another entry, naming the entry and what matched:
    the file's sha256, the eval id, the samples' uuids (the same run re-saved), the bundle's
    manifest, or any sample's evidence record (a bundle reused under another log)."""
    problems: list[str] = []
    for v in runs:
        for e in entries:
            if e.id == replacing:
                continue
            for r in e.suites.values():
                shared = set(v.records) & _entry_records(r, board_root)
                same = [what for what, mine, theirs in (
                    ("file sha256", v.log.sha256, r.log.sha256),
                    ("eval id", v.log.eval_id, r.log.eval_id),
                    ("sample uuids", v.log.samples_sha256, r.log.samples_sha256),
                    ("bundle manifest", v.bundle.manifest if v.bundle else None,
                     r.bundle.manifest if r.bundle else None),
                    (f"evidence records of {len(shared)} sample(s)", bool(shared), True)) if mine and mine == theirs]
                if same:
                    problems.append(f"{v.log.file}: already backs entry {e.id!r} ({e.model_name}, "
                                    f"{r.benchmark}, log {r.log.file}): same {', '.join(same)}")
    return problems


def _check_replay(sample: Any, score: Any, name: str, task: Any, references: dict[str, Any],
                  problems: list[str]) -> None:
    """A passing sample whose commands type the task's reference solution: not the model's work,
    whatever the model is called (rsr.report.agent_checks)."""
    from rsr.report.agent_checks import Reference, solution_replay
    from rsr.verify.hack_review import actions_of

    fields = score_fields(score.value) if score is not None else None
    if fields is None or not fields[0]:
        return
    typed = "\n".join(a.text for a in actions_of(sample.messages, sample.events))
    if name not in references:
        references[name] = Reference(task)
    replay = solution_replay(typed, references[name])
    if replay.replayed:
        problems.append(f"sample {sample.id} epoch {sample.epoch} ({name}) passed, but {replay.describe()}: the "
                        "agent replays the reference solution (only a test board, `reference_agents: true`, "
                        "accepts that)")


def _check_overrides(sid: str, epoch: int, meta: dict[str, Any], task: Any,
                     problems: list[str]) -> None:
    cfg = task.config
    expected = {
        "agent_timeout_sec": cfg.agent.timeout_sec,
        "verifier_timeout_sec": cfg.verifier.timeout_sec,
        "cpus": cfg.environment.cpus,
        "memory_mb": cfg.environment.memory_mb,
    }
    for key, want in expected.items():
        if key in meta and not _close(meta[key], want):
            problems.append(f"sample {sid} epoch {epoch}: {key} = {meta[key]} overrides the "
                            f"task's {want}")


def _check_isolation(sid: str, epoch: int, score: Any, task: Any, problems: list[str]) -> None:
    """A sample is verified in the isolation its task declares, never a weaker one: the
    strongest a task allows is the one it declares (live only for process deliverables)."""
    record = ((score.metadata or {}) if score is not None else {}).get("integrity")
    declared = "separate" if task.config.verifier.mode == "separate" and not task.config.steps \
        else task.config.verifier.isolation
    if isinstance(record, dict) and record.get("isolation") not in (None, declared):
        problems.append(f"sample {sid} epoch {epoch}: verified in isolation "
                        f"{record.get('isolation')!r}, but the task declares {declared!r}")


class SuiteResult(BaseModel):
    """One suite of an entry: our metrics, computed from the validated samples."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    suite_digest: str
    metrics: SuiteMetrics
    ci95: float = Field(description="1.96 x stderr of the mean pass rate")
    log: LogRef
    integrity: IntegritySummary = Field(
        default_factory=IntegritySummary, description="the verifier's integrity verdicts per sample")
    bundle: BundleRef | None = None
    regrade: RegradeVerdict = Field(default_factory=lambda: RegradeVerdict(status="not-run"))


class LeaderboardEntry(BaseModel):
    """One model + harness on the board."""

    model_config = ConfigDict(extra="forbid")

    id: str
    model_name: str
    harness: str
    interface: HarnessInterface | None = Field(
        None, description="harness implementation, prompt pack (+sha256), parity mode and fixes")
    model: str = Field(description="the Inspect model string the logs record")
    harness_args: dict[str, str] = Field(default_factory=dict, description="harness arguments away from their "
                                         "defaults; the page shows them beside the harness")
    submitted: str
    versions: dict[str, str]
    suites: dict[str, SuiteResult]
    run_report: list[tuple[str, str]] = Field(
        default_factory=list, description="how the runs went as a system (rsr.report.runstats: rollouts per "
        "hour, sandbox start and model latency percentiles, tokens per second, infra failures by kind)")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "entry"


def harness_name(harness: str, listed: Iterable[str] = ()) -> str:
    """The agent name logs record for `--harness NAME`: a name the board lists in `harnesses:`
    as it lists it, `terminus2` as rsr's `rsr/terminus2`, any other name as given."""
    if "/" in harness or harness in set(listed):
        return harness
    return f"rsr/{harness}"


def build_entry(validated: list[ValidatedRun], *, model_name: str, harness: str,
                k: int = 3, listed: Iterable[str] = ()) -> LeaderboardEntry:
    """One entry from validated logs; `listed` is the board's `harnesses:` (names as given)."""
    if not validated:
        raise RsrError("no logs given")
    declared = harness_name(harness, listed)
    for v in validated:
        if v.log.solver != declared:
            raise RsrError(f"{v.log.file}: the log's agent is {v.log.solver!r}, not the declared "
                           f"harness {declared!r} (--harness {harness})")
    suites: dict[str, SuiteResult] = {}
    models = {v.run.model for v in validated}
    if len(models) > 1:
        raise RsrError(f"logs come from different models {sorted(models)}; add them as "
                       "separate entries")
    labelled = {tuple(sorted(v.harness_args.items())) for v in validated}
    if len(labelled) > 1:
        raise RsrError(f"logs ran with different harness arguments {sorted(map(dict, labelled), key=str)}; add them "
                       "as separate entries")
    harness_args = dict(labelled.pop())
    interfaces = {v.interface for v in validated}
    if len(interfaces) > 1:
        raise RsrError("logs ran with different harness interfaces "
                       f"({sorted(i.label if i else 'unknown' for i in interfaces)}); add them as separate entries")
    for v in validated:
        if v.run.benchmark in suites:
            raise RsrError(f"two logs for suite {v.run.benchmark}: {suites[v.run.benchmark].log.file}"
                           f" and {v.log.file}; pass one")
        m = v.run.metrics(k=k)
        suites[v.run.benchmark] = SuiteResult(benchmark=v.run.benchmark,
                                              suite_digest=v.suite_digest, metrics=m,
                                              ci95=1.96 * m.stderr, log=v.log,
                                              integrity=v.integrity, bundle=v.bundle,
                                              regrade=v.regrade)
    import inspect_ai

    from rsr import __version__ as rsr_version

    shown = ", ".join(f"{k}={v}" for k, v in harness_args.items())
    return LeaderboardEntry(
        id=slug(f"{model_name}-{harness}"),
        model_name=model_name,
        harness=f"{harness} (non-default: {shown})" if shown else harness,
        harness_args=harness_args,
        interface=interfaces.pop(),
        model=models.pop(),
        submitted=datetime.now(UTC).strftime("%Y-%m-%d"),
        versions={"rsr": rsr_version, "inspect_ai": inspect_ai.__version__},
        suites=suites,
        run_report=_run_report(validated),
    )


def _run_report(validated: list[ValidatedRun]) -> list[tuple[str, str]]:
    """The entry's run report, from the very logs validated (read again: they are on disk)."""
    from rsr.report.runstats import run_stats

    return run_stats([Path(v.run.path) for v in validated]).rows()


def store_artifacts(entry: LeaderboardEntry, runs: list[ValidatedRun], board: LoadedBoard) -> None:
    """Keep each log, and its bundle (manifest and every blob it names), with the board under
    `logs/<entry id>/`, so the page links them and anyone can regrade the entry from the board."""
    import shutil

    from rsr.verify.evidence import copy_bundle

    folder = board.root / "logs" / entry.id
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for v in runs:
        result = entry.suites[v.run.benchmark]
        shutil.copy2(v.run.path, folder / v.run.path.name)
        result.log.stored = (folder / v.run.path.name).relative_to(board.root).as_posix()
        if result.bundle is not None:
            _, manifest = copy_bundle(v.run.path, folder)
            result.bundle.stored = manifest.relative_to(board.root).as_posix()


def load_entries(entries_dir: Path) -> list[LeaderboardEntry]:
    out = []
    for path in sorted(entries_dir.glob("*.json")):
        try:
            out.append(LeaderboardEntry.model_validate_json(path.read_text()))
        except ValidationError as e:
            err = e.errors()[0]
            raise TaskFormatError(path, ".".join(map(str, err["loc"])), err["msg"]) from e
    return out


def save_entry(entry: LeaderboardEntry, entries_dir: Path, *, replace: bool = False) -> Path:
    entries_dir.mkdir(parents=True, exist_ok=True)
    path = entries_dir / f"{entry.id}.json"
    if path.exists() and not replace:
        raise RsrError(f"{path} exists; pass --replace to overwrite the entry")
    path.write_text(entry.model_dump_json(indent=2) + "\n")
    return path
