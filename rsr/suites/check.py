"""Task quality gate behind `rsr tasks check`: every check runs real sandboxes through Inspect.

Checks per task:
- build: image builds; build time and image size are reported;
- oracle: the reference solution passes on every one of N runs (determinism);
- null: doing nothing fails;
- partial: the reference solution cut short does not pass (tests check the end state);
- isolation: while the agent runs, /tests and /solution are absent, no file of tests/ is in the
  image, and the network is off unless the task allows internet.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent, as_solver
from inspect_ai.log import EvalLog
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import sandbox

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task
from rsr.suites.registry import SUITES, resolve_suite_path
from rsr.tasks.load import LoadedTask, iter_files, load_dataset, task_from_metadata

CHECKS = ("build", "oracle", "null", "partial", "isolation")
# Names too generic to identify a leaked test file by name alone.
GENERIC_TEST_NAMES = {"test.sh", "run-tests.sh", "__init__.py", "conftest.py", "requirements.txt"}


@dataclass
class TaskReport:
    name: str
    path: str
    findings: list[str] = field(default_factory=list)
    oracle_passes: list[bool] = field(default_factory=list)
    null_passed: bool | None = None
    partial_passed: bool | None = None
    build_sec: float | None = None
    image_mb: float | None = None
    oracle_sec: float | None = None
    isolation: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "ok": self.ok, "findings": self.findings,
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


def build_image(task: LoadedTask) -> tuple[float, float | None, str | None]:
    """Build the task's image the way its eval will (rsr-docker's builder, or the compose file of
    a task with its own services); (seconds, MB, error: the failing step's last lines)."""
    from rsr.sandbox.compose import compose_spec, write_compose_file
    from rsr.sandbox.docker_api import ImageBuildError, ensure_image
    from rsr.sandbox.spec import docker_config, uses_compose

    started = time.monotonic()
    if not uses_compose(task) and not task.config.environment.docker_image:
        cfg = docker_config(task)
        image = cfg.image
        try:
            ensure_image(cfg)
        except ImageBuildError as e:
            return time.monotonic() - started, None, str(e)
    else:
        compose = write_compose_file(task)
        image = compose_spec(task)["services"]["default"].get("image")
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
    valid = [t for t in loaded.tasks]
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
    if "oracle" in checks:
        phases["oracle"] = (oracle(), runs)
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
        for agent_, epochs in phases.values():
            t = tasks_task(suite, root, names, None, solver=as_solver(agent_))
            t.epochs = epochs
            inspect_tasks.append(t)
        logs = inspect_eval(inspect_tasks, model="mockllm/model", log_dir=log_dir, display="none",
                            max_sandboxes=max_sandboxes, max_tasks=len(inspect_tasks),
                            fail_on_error=False, score_display=False)
        results = {phase: _samples_by_task(log) for phase, log in zip(phases, logs, strict=True)}

    if "oracle" in results:
        samples = results["oracle"]
        for t in valid:
            rep = reports[t.name]
            rep.oracle_passes = [_passed(s) for s in samples.get(t.name, [])]
            times = [s.total_time for s in samples.get(t.name, []) if s.total_time]
            rep.oracle_sec = round(sum(times) / len(times), 1) if times else None
            if not rep.oracle_passes or not all(rep.oracle_passes):
                why = _first_explanation(samples.get(t.name, []))
                rep.findings.append(f"oracle passed {sum(rep.oracle_passes)}/{runs} runs: {why}")
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
