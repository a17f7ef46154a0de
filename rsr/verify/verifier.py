"""Run a task's hidden tests in a sandbox and read its reward.

A plain async function over a sandbox so that the scorer, the RSRT harness (on a copy of
the sandbox) and the RSR factory all share one implementation. Every failure mode of the
tests (timeout, crash, missing or malformed reward file) becomes a failed result with a
clear explanation, never an exception.
"""

from __future__ import annotations

import io
import json
import math
import tarfile
import time
from typing import Any, Protocol

from pydantic import BaseModel, Field

from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask
from rsr.tasks.models import expand_env

OUTPUT_CAP = 8_000
TESTS_ARCHIVE = "/tmp/.rsr-tests.tar"


def tests_archive(task: LoadedTask) -> bytes:
    """The verifier's files as a tar archive with absolute container paths (modes kept)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for container_path, host_path in sorted(task.test_files().items()):
            info = tar.gettarinfo(str(host_path), arcname=container_path.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode |= 0o444
            if container_path.endswith(".sh"):
                info.mode |= 0o755
            with open(host_path, "rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()


class VerifierResult(BaseModel):
    passed: bool
    reward: float
    process: float
    milestones: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    explanation: str = ""
    error: str | None = None
    returncode: int | None = None
    duration_sec: float | None = None

    def score_value(self) -> dict[str, float]:
        return {"passed": 1.0 if self.passed else 0.0, "reward": self.reward, "process": self.process}


class SandboxLike(Protocol):
    """The slice of Inspect's SandboxEnvironment the verifier uses (so a cloned container
    can be verified through a small adapter)."""

    async def exec(self, cmd: list[str], input: str | bytes | None = None, cwd: str | None = None,
                   env: dict[str, str] | None = None, user: str | None = None,
                   timeout: int | None = None, timeout_retry: bool = True, **kwargs: Any) -> Any: ...

    async def write_file(self, file: str, contents: str | bytes) -> None: ...

    async def read_file(self, file: str, text: bool = True) -> Any: ...


def cap_output(text: str, limit: int = OUTPUT_CAP) -> str:
    """Keep the head and the tail: failures are usually reported at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"


def total_reward(metrics: dict[str, float]) -> float:
    """The task's reward from reward.json metrics: `reward` when present, else the only metric;
    with several metrics and no total, a task succeeds only if all of them do (the minimum)."""
    if "reward" in metrics:
        return metrics["reward"]
    if len(metrics) == 1:
        return next(iter(metrics.values()))
    return min(metrics.values())


def outcome(reward: float, milestones: dict[str, float]) -> tuple[bool, float]:
    """(passed, process): passed only for full success; process is the fraction of milestones
    passed, or equals passed for a task without milestones. Reports recompute scores with this."""
    passed = reward >= 1.0 - 1e-9
    if milestones:
        return passed, sum(min(max(v, 0.0), 1.0) for v in milestones.values()) / len(milestones)
    return passed, 1.0 if passed else 0.0


def parse_reward(
    text: str, kind: str, milestone_names: list[str]
) -> tuple[float, dict[str, float], dict[str, float]]:
    """(reward, milestones, all metrics) from reward.txt or reward.json content."""
    if kind == "txt":
        stripped = text.strip()
        if not stripped:
            raise ValueError("reward.txt is empty")
        try:
            reward = float(stripped.split()[0])
        except ValueError as e:
            raise ValueError(f"reward.txt is not a number: {stripped[:80]!r}") from e
        if not math.isfinite(reward):
            raise ValueError(f"reward.txt is not finite: {stripped[:80]!r}")
        return reward, {}, {"reward": reward}

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"reward.json is not valid JSON: {e}") from e
    if not isinstance(data, dict) or not data:
        raise ValueError("reward.json must be a non-empty object of numeric metrics")
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            value = float(value)
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"reward.json: metric {key!r} is not a finite number: {value!r}")
        metrics[str(key)] = float(value)
    reward = total_reward(metrics)
    names = milestone_names or [k for k in metrics if k.startswith("milestone_")]
    milestones = {}
    for name in names:
        if name not in metrics:
            raise ValueError(f"reward.json lacks milestone {name!r} declared in task.toml")
        milestones[name] = metrics[name]
    return reward, milestones, metrics


async def verify(task: LoadedTask, sbx: SandboxLike | None = None) -> VerifierResult:
    """Copy tests/ to /tests, run the verifier with its timeout and env, read the reward.

    A sandbox that fails underneath the tests (its container killed, an exec refused) is a
    failed result with the reason, never an exception that would stop the whole eval.
    """
    started = time.monotonic()
    try:
        return await _verify(task, sbx, started)
    except Exception as e:  # noqa: BLE001 - cancellation is a BaseException and still propagates
        return VerifierResult(passed=False, reward=0.0, process=0.0, error="sandbox_error",
                              explanation=f"the sandbox failed during verification: {type(e).__name__}: {e}",
                              duration_sec=time.monotonic() - started)


async def _verify(task: LoadedTask, sbx: SandboxLike | None, started: float) -> VerifierResult:
    if sbx is None:
        from inspect_ai.util import sandbox as current_sandbox

        sbx = current_sandbox()

    cfg = task.config.verifier
    # One archive and one exec instead of a copy per file: sandbox calls dominate verifier time.
    await sbx.write_file(TESTS_ARCHIVE, tests_archive(task))
    setup = (f"rm -rf {TESTS_MOUNT} {VERIFIER_LOG_DIR} && mkdir -p {TESTS_MOUNT} {VERIFIER_LOG_DIR} && "
             f"tar -xf {TESTS_ARCHIVE} -C / && rm -f {TESTS_ARCHIVE} && chmod -R a+rX {TESTS_MOUNT} && "
             f"chmod 777 {VERIFIER_LOG_DIR}")
    prepared = await sbx.exec(["sh", "-c", setup], user="root", timeout=120)
    if not prepared.success:
        return VerifierResult(passed=False, reward=0.0, process=0.0, error="setup_failed",
                              explanation=f"could not install the tests: {prepared.stderr.strip()[:500]}",
                              duration_sec=time.monotonic() - started)

    env = {k: expand_env(v) for k, v in cfg.env.items()}
    timeout = max(1, int(math.ceil(cfg.timeout_sec)))
    try:
        result = await sbx.exec(["bash", "-c", task.test_command()], env=env, user=cfg.user,
                                cwd=task.workdir, timeout=timeout, timeout_retry=False)
    except TimeoutError:
        return VerifierResult(passed=False, reward=0.0, process=0.0,
                              error="verifier_timeout",
                              explanation=f"verifier timed out after {timeout}s",
                              duration_sec=time.monotonic() - started)
    output = cap_output((result.stdout or "") + (("\n" + result.stderr) if result.stderr else ""))
    duration = time.monotonic() - started

    reward_text, kind = None, None
    probe = await sbx.exec(["sh", "-c", f"cd {VERIFIER_LOG_DIR} && if [ -f reward.json ]; then echo json; "
                                        "cat reward.json; elif [ -f reward.txt ]; then echo txt; cat reward.txt; fi"],
                           user="root", timeout=60)
    if probe.success and probe.stdout.strip():
        kind, _, reward_text = probe.stdout.partition("\n")
    if reward_text is None or kind is None:
        why = "test script crashed" if result.returncode not in (0, 1) else "no reward file"
        return VerifierResult(
            passed=False, reward=0.0, process=0.0, error="missing_reward", returncode=result.returncode,
            explanation=f"{why}: {VERIFIER_LOG_DIR}/reward.txt or reward.json was not written "
                        f"(test.sh exit {result.returncode})\n{output}",
            duration_sec=duration)
    try:
        reward, milestones, metrics = parse_reward(reward_text, kind, task.config.milestones)
    except ValueError as e:
        return VerifierResult(passed=False, reward=0.0, process=0.0, error="malformed_reward",
                              returncode=result.returncode, explanation=f"{e}\n{output}",
                              duration_sec=duration)

    passed, process = outcome(reward, milestones)
    return VerifierResult(passed=passed, reward=reward, process=process, milestones=milestones,
                          metrics=metrics, returncode=result.returncode, explanation=output,
                          duration_sec=duration)
