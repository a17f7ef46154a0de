"""Task quality gate behind `rsr tasks check`: every check runs real sandboxes through Inspect.

Checks per task:
- build: image builds; build time and image size are reported;
- oracle: the reference solution passes on every one of N runs (determinism);
- null: doing nothing fails;
- partial: the reference solution cut short does not pass (tests check the end state);
- isolation: while the agent runs, /tests and /solution are absent, no file of tests/ is in the
  image, and the network is off unless the task allows internet;
- leak: during the oracle's verification, tests that use rsr_check run a probe with the
  deliverable's privileges before the deliverable (see rsr/tasks/kit/rsr_check.py); a task
  fails when the probe could read the tests, the reward directory, files the checker wrote or the
  checker's /proc entries. Tests that do not use the helper get a warning: their deliverable
  runs with the verifier's privileges.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent, as_solver
from inspect_ai.log import EvalLog
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import sandbox

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task
from rsr.suites.registry import SUITES, resolve_suite_path
from rsr.tasks.kit.rsr_check import PROBE_ENV, PROBE_MARKER
from rsr.tasks.load import LoadedTask, iter_files, load_dataset, task_from_metadata
from rsr.verify.verifier import verify

CHECKS = ("build", "oracle", "null", "partial", "isolation", "leak")
HELPER = "rsr_check.py"
# Names too generic to identify a leaked test file by name alone.
GENERIC_TEST_NAMES = {"test.sh", "run-tests.sh", "__init__.py", "conftest.py", "requirements.txt"}


@dataclass
class TaskReport:
    name: str
    path: str
    findings: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    oracle_passes: list[bool] = field(default_factory=list)
    null_passed: bool | None = None
    partial_passed: bool | None = None
    build_sec: float | None = None
    image_mb: float | None = None
    oracle_sec: float | None = None
    isolation: dict[str, Any] = field(default_factory=dict)
    leak_probe: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def seen(self) -> list[str]:
        """What the isolation and leak probes saw, in words: a clean result is shown too, so a
        run of `--only leak,isolation` says what was checked, not just "ok"."""
        lines: list[str] = []
        if self.isolation:
            dirs = self.isolation.get("visible_dirs") or []
            files = self.isolation.get("leaked_test_files") or []
            ifaces = self.isolation.get("interfaces") or []
            lines.append("isolation: " + "; ".join([
                f"visible to the agent: {', '.join(dirs)}" if dirs
                else "/tests and /solution not visible to the agent",
                f"test files in the image: {', '.join(files)}" if files
                else "no test file in the image",
                f"network interfaces: {', '.join(ifaces) or 'none'}"]))
        if self.leak_probe is not None:
            probe = self.leak_probe
            found = probe.get("findings") or []
            what = (f"could read {len(found)}: {', '.join(found[:8])}" if found else
                    "read neither the tests nor the checker's expected outputs")
            lines.append(f"leak: {probe.get('probes', 0)} probe(s) run as the deliverable "
                         f"({probe.get('user') or 'nobody'}, {probe.get('mode') or 'unprivileged'}): "
                         f"{what}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "ok": self.ok, "findings": self.findings,
                "warnings": self.warnings, "leak_probe": self.leak_probe,
                "oracle_passes": self.oracle_passes, "null_passed": self.null_passed,
                "partial_passed": self.partial_passed, "build_sec": self.build_sec,
                "image_mb": self.image_mb, "oracle_sec": self.oracle_sec, "isolation": self.isolation}


@agent
def isolation_probe() -> Agent:
    """Looks around the sandbox as an agent would and records what it could see."""

    async def execute(state: AgentState) -> AgentState:
        ts = sample_state()
        assert ts is not None
        task = task_from_metadata(ts.metadata)
        sbx = sandbox()
        seen: dict[str, Any] = {}
        r = await sbx.exec(["sh", "-c", "ls -d /tests /solution 2>/dev/null; true"])
        seen["visible_dirs"] = r.stdout.split()
        r = await sbx.exec(["sh", "-c", "ls /sys/class/net 2>/dev/null; true"])
        seen["interfaces"] = r.stdout.split()
        leaked = []
        # A test file identical to a file of the build context is public by design (e.g. a
        # pristine copy the tests restore); only content that exists nowhere else can leak.
        public = {hashlib.sha256(p.read_bytes()).hexdigest() for _, p in iter_files(task.build_context())}
        for rel, path in iter_files(task.paths.tests_dir):
            base = Path(rel).name
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if base in GENERIC_TEST_NAMES or digest in public:
                continue
            r = await sbx.exec(["sh", "-c", f"find / -xdev -type f -name '{base}' -size -20M "
                                "-exec sha256sum {} + 2>/dev/null; true"], timeout=120)
            for line in r.stdout.splitlines():
                if line.startswith(digest):
                    leaked.append(line.split(maxsplit=1)[1])
        seen["leaked_test_files"] = leaked
        if ts.metadata is not None:
            ts.metadata["isolation_probe"] = seen
        return state

    return execute


def probe_report(output: str) -> dict[str, Any] | None:
    """The leak probe's report from a test run's output (its last marker line), or None."""
    for line in reversed(output.splitlines()):
        if line.startswith(PROBE_MARKER):
            try:
                found = json.loads(line[len(PROBE_MARKER):])
            except ValueError:
                return {"findings": [], "notes": ["unreadable probe report"], "probes": 0}
            return found if isinstance(found, dict) else None
    return None


@scorer(metrics={"passed": [mean(), stderr()], "reward": [mean()], "process": [mean()]})
def leak_probing_verifier() -> Scorer:
    """The task's verifier with the leak probe switched on (rsr_check reads PROBE_ENV); the
    probe's report goes to the score's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        task.config.verifier.env[PROBE_ENV] = "1"
        result = await verify(task, integrity=state.metadata.get("integrity_policy") or "auto")
        return Score(value=result.score_value(), answer="passed" if result.passed else "failed",
                     explanation=result.explanation,
                     metadata={"leak_probe": probe_report(result.explanation), "error": result.error})

    return score


def leak_findings(task: LoadedTask, probe: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """(findings, warnings) for one task from its probe report."""
    uses_helper = (task.paths.tests_dir / HELPER).is_file()
    if probe is None:
        if uses_helper:
            return ["leak probe did not report (the tests crashed before exit, or bypass rsr_check)"], []
        return [], ["tests do not use rsr_check: the deliverable runs with the verifier's privileges "
                    f"({task.config.verifier.user or 'root'}), and nothing checks what it can read"]
    found = list(probe.get("findings") or [])
    if not probe.get("probes"):
        return [f"leak probe did not run: {'; '.join(probe.get('notes') or [])[:300]}"], []
    if probe.get("mode") == "root":
        # Reduced mode: a root deliverable reads /tests by design (documented in the task);
        # what it must still not reach is the checker's process.
        hard = [f for f in found if f.startswith("checker process readable")]
        soft = [f for f in found if f not in hard]
        warn = [f"reduced mode (the deliverable runs as root): readable by it: {', '.join(soft[:8])}"] if soft else []
        return [f"deliverable could read: {f}" for f in hard], warn
    return [f"deliverable could read: {f}" for f in found], []


def _passed(sample: Any) -> bool:
    score = next(iter((sample.scores or {}).values()), None)
    if score is None or not isinstance(score.value, dict):
        return False
    return float(score.value.get("passed", 0)) >= 1.0


def _samples_by_task(log: EvalLog) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for s in log.samples or []:
        out.setdefault(str(s.id), []).append(s)
    return out


def build_image(task: LoadedTask, policy: str = "auto") -> tuple[float, float | None, str | None]:
    """Get the task's image the way its eval will (rsr-docker's puller and builder under the
    image policy, or the compose file of a task with its own services); (seconds, MB, error:
    the failing step's last lines, or the pull's error)."""
    from rsr.sandbox.compose import compose_spec, write_compose_file
    from rsr.sandbox.docker_api import ImageBuildError, ensure_image
    from rsr.sandbox.spec import docker_config, uses_compose

    started = time.monotonic()
    force_build = policy == "force-build"
    if not uses_compose(task, policy):
        cfg = docker_config(task, policy=policy)
        try:
            image = ensure_image(cfg).name
        except ImageBuildError as e:
            return time.monotonic() - started, None, str(e)
    else:
        compose = write_compose_file(task, force_build=force_build)
        image = compose_spec(task, force_build=force_build)["services"]["default"].get("image")
        proc = subprocess.run(["docker", "compose", "-f", compose, "build", "--progress", "plain"],
                              capture_output=True, text=True,
                              timeout=max(60, int(task.config.environment.build_timeout_sec)))
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
            return time.monotonic() - started, None, "\n".join(lines[-15:])
    seconds = time.monotonic() - started
    size = subprocess.run(["docker", "image", "inspect", image, "--format", "{{.Size}}"],
                          capture_output=True, text=True)
    mb = int(size.stdout.strip()) / 1e6 if size.returncode == 0 and size.stdout.strip() else None
    return seconds, mb, None


def resolve_target(target: str) -> Path:
    if target in SUITES:
        return resolve_suite_path(target)
    return Path(target)


def check_tasks(
    target: str,
    tasks: str | None = None,
    exclude: str | None = None,
    runs: int = 3,
    checks: tuple[str, ...] = CHECKS,
    log_dir: str = "logs/tasks-check",
    max_sandboxes: int | None = None,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[TaskReport]:
    root = resolve_target(target).resolve()
    loaded = load_dataset(root, tasks, exclude)
    reports = {t.name: TaskReport(t.name, str(t.paths.task_dir)) for t in loaded.tasks}
    for err in loaded.errors:
        reports[Path(err.path).name] = TaskReport(Path(err.path).name, err.path, findings=[f"invalid: {err}"])
    from rsr.tasks.host_fit import host_fit

    valid = []
    for t in loaded.tasks:  # what lint refuses (CRLF, relative workdir, USER) is not built
        fit = host_fit(t)
        reports[t.name].warnings += fit.warnings
        reports[t.name].findings += [f"cannot run: {f}{f' [{k}]' if k else ''}: {m}" for f, k, m in fit.errors]
        if not fit.errors:
            valid.append(t)
    if not valid:
        return list(reports.values())

    if "build" in checks:
        for t in valid:
            progress(f"building {t.name}")
            secs, mb, error = build_image(t)
            reports[t.name].build_sec, reports[t.name].image_mb = round(secs, 1), mb and round(mb, 1)
            if error:
                reports[t.name].findings.append(f"build failed: {error}")
        valid = [t for t in valid if reports[t.name].ok]

    names = ",".join(t.name for t in valid)
    suite = target if target in SUITES else "harbor"

    # All runs go into one Inspect eval, each as its own task, so sandboxes stay busy across
    # phases instead of idling on each phase's slowest sample.
    phases: dict[str, tuple[Agent, int]] = {}
    if "oracle" in checks or "leak" in checks:
        phases["oracle"] = (oracle(), runs if "oracle" in checks else 1)
    if "isolation" in checks:
        # The probe only looks around, so its scores double as the null agent's.
        phases["probe"] = (isolation_probe(), 1)
    elif "null" in checks:
        phases["probe"] = (null(), 1)
    if "partial" in checks:
        phases["partial"] = (oracle(partial=True), 1)
    results: dict[str, dict[str, list[Any]]] = {}
    if valid and phases:
        progress(f"{', '.join(phases)}: {len(valid)} task(s) in Docker")
        inspect_tasks = []
        for phase, (agent_, epochs) in phases.items():
            t = tasks_task(suite, root, names, None, solver=as_solver(agent_))
            t.epochs = epochs
            if phase == "oracle" and "leak" in checks:
                t.scorer = [leak_probing_verifier()]
            inspect_tasks.append(t)
        logs = inspect_eval(inspect_tasks, model="mockllm/model", log_dir=log_dir, display="none",
                            max_sandboxes=max_sandboxes, max_tasks=len(inspect_tasks),
                            fail_on_error=False, score_display=False)
        results = {phase: _samples_by_task(log) for phase, log in zip(phases, logs, strict=True)}

    if "oracle" in results and "oracle" in checks:
        samples = results["oracle"]
        for t in valid:
            rep = reports[t.name]
            rep.oracle_passes = [_passed(s) for s in samples.get(t.name, [])]
            times = [s.total_time for s in samples.get(t.name, []) if s.total_time]
            rep.oracle_sec = round(sum(times) / len(times), 1) if times else None
            if not rep.oracle_passes or not all(rep.oracle_passes):
                why = _first_explanation(samples.get(t.name, []))
                rep.findings.append(f"oracle passed {sum(rep.oracle_passes)}/{runs} runs: {why}")
    if "leak" in checks and "oracle" in results:
        for t in valid:
            rep = reports[t.name]
            got = results["oracle"].get(t.name, [])
            meta = [next(iter((s.scores or {}).values()), None) for s in got]
            probes = [m.metadata.get("leak_probe") for m in meta if m is not None and m.metadata]
            probe = next((p for p in probes if p is not None), None)
            if probe is not None:
                for p in probes:  # every oracle run's findings count
                    if p is not None and p is not probe:
                        probe["findings"] = sorted(set(probe.get("findings", [])) | set(p.get("findings", [])))
            rep.leak_probe = probe
            if not got or all(s.error for s in got):
                rep.findings.append("leak probe: the oracle's sample errored")
                continue
            found, warned = leak_findings(t, probe)
            rep.findings.extend(found)
            rep.warnings.extend(warned)
    if "null" in checks and "probe" in results:
        samples = results["probe"]
        for t in valid:
            rep = reports[t.name]
            rep.null_passed = any(_passed(s) for s in samples.get(t.name, []))
            if rep.null_passed:
                rep.findings.append("null agent passed: the tests do not check the end state")
    if "partial" in results:
        samples = results["partial"]
        for t in valid:
            rep = reports[t.name]
            rep.partial_passed = any(_passed(s) for s in samples.get(t.name, []))
            if rep.partial_passed:
                rep.findings.append("partial oracle (first half of solve.sh) passed: tests do not check the end state")
    if "isolation" in checks and "probe" in results:
        samples = results["probe"]
        for t in valid:
            rep = reports[t.name]
            got = samples.get(t.name, [])
            seen = (got[0].metadata or {}).get("isolation_probe", {}) if got else {}
            rep.isolation = seen
            if not seen:
                rep.findings.append("isolation probe did not run")
                continue
            if seen.get("visible_dirs"):
                rep.findings.append(f"visible to the agent: {seen['visible_dirs']}")
            if seen.get("leaked_test_files"):
                rep.findings.append(f"test files baked into the image: {seen['leaked_test_files']}")
            ifaces = [i for i in seen.get("interfaces", []) if i != "lo"]
            if ifaces and not t.config.environment.allow_internet:
                rep.findings.append(f"network interfaces {ifaces} in a no-internet task")
    return list(reports.values())


def _first_explanation(samples: list[Any]) -> str:
    for s in samples:
        if s.error:
            return f"error: {str(s.error.message)[:300]}"
        score = next(iter((s.scores or {}).values()), None)
        if score and not _passed(s):
            return (score.explanation or "")[-300:]
    return ""
