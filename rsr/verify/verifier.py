"""Run a task's hidden tests in a sandbox and read its reward.

A plain async function over a sandbox so that the scorer, the RSRT harness (on a copy of
the sandbox) and the RSR factory all share one implementation. Every failure mode of the
tests (timeout, crash, missing or malformed reward file) becomes a failed result with a
clear explanation, never an exception.

The runtime invariants (README, "Verifier: the contract"), each enforced at one point every
verification passes through:
1. no agent process exists when the tests start (strict): `_verify_engine` holds the agent's
   container frozen (`rsr.verify.snapshot.agent_frozen`) around everything from the capture of
   its changes to the end of the test run, and gives the verification container no namespace of
   the agent's; where that cannot hold (live isolation, sidecars in the agent's network) the
   pass is refused (`IntegrityReport.shares_with`, verdict live-state);
2. the test run ends when test.sh exits: `_TestRun.in_snapshot`, through which every run in a
   verification container goes, hands `rsr.verify.snapshot.RunEnd` to the engine's exit watch;
4. who is to blame when the tests cannot start, decided from the pristine image: `_TestRun.probe`
   on the pristine verification container before any change of the agent's is applied (or, for
   the modes without one, `pristine_starts` on a fresh container of the image, asked afterwards).

Who is to blame when no reward comes out (after Harbor 0.26, whose trial error policy grades a
missing reward file as a failure but retries, ungraded, a tests upload that failed):
- the tests could not be put in place (staging, upload, the verification container refused
  while the agent's container is still up), or cannot start on the pristine image (no
  /bin/bash, no working directory, an unknown user): an infrastructure failure
  (`verifier_bootstrap`), which the scorer reports as an infra error of kind "verifier"
  (rsr.sandbox.infra) rather than as the agent's;
- anything after that, test.sh unable to start on what the agent left (it deleted the working
  directory) included, is the agent's failure (`missing_reward`, `malformed_reward`), scored in
  every denominator.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import os
import re
import tarfile
import time
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from rsr.sandbox.backing import container_of
from rsr.sandbox.infra import InfraError, infra_error_of
from rsr.tasks.load import TESTS_MOUNT, VERIFIER_LOG_DIR, LoadedTask
from rsr.tasks.models import expand_env
from rsr.verify.reward import RewardError, read_reward
from rsr.verify.startup_files import startup_paths

OUTPUT_CAP = 8_000
TESTS_ARCHIVE = "/tmp/.rsr-tests.tar"
VERIFIER_BOOTSTRAP = "verifier_bootstrap"
"""VerifierResult.error of a verifier that could not run the tests (see the module doc)."""


class VerifierBootstrapError(InfraError):
    """The tests could not be installed or started (see the module doc)."""

    kind = "verifier"


# The whole output when test.sh itself cannot be started: the runtime's (no /bin/bash in the
# image) or the shell's (no /tests/test.sh). One line and nothing else: tests that ran and
# printed anything, the agent's programs' output included, are the agent's result.
_CANNOT_START = re.compile(
    r"(OCI runtime exec failed: .*|bash: " + re.escape(TESTS_MOUNT)
    + r"/test\.sh: (No such file or directory|Permission denied))")


def tests_archive(task: LoadedTask, with_dirs: bool = False) -> bytes:
    """The verifier's files as a tar archive with absolute container paths (modes kept);
    `with_dirs` adds /tests and a world-writable /logs/verifier."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if with_dirs:
            for directory, mode in ((TESTS_MOUNT, 0o755), ("/logs", 0o755), (VERIFIER_LOG_DIR, 0o777)):
                info = tarfile.TarInfo(directory.lstrip("/"))
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, int(time.time())
                tar.addfile(info)
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


Integrity = Literal["auto", "strict", "warn"]


class IntegrityReport(BaseModel):
    """What the verifier checked about the agent's influence on the verdict."""

    mode: Literal["strict", "warn"]
    """strict: a suspicious change, a surviving process or a pass with a failing test.sh fails
    the sample; warn (Harbor tasks that do not declare `allow_changes`): they are reported."""
    isolation: Literal["snapshot", "fresh", "live", "separate", "in-place"]
    """snapshot: a new container from the agent's filesystem in the agent's network namespace;
    fresh: the same with a network of its own; live: the agent's container (its processes
    alive); separate: the task's own verifier environment (`environment_mode = "separate"`), which
    sees only the agent's artifacts; in-place: a sandbox without engine access (no audit)."""
    trust: Literal["deliverables", "inferred", "audited", "harbor", "live", "separate", "none"] = "none"
    """What reached the checker: deliverables (only the task's workdir and declared changes, the
    allowlist), inferred (the same allowlist, its roots inferred from the task's reference solution:
    strict mode on a task that declares nothing), audited (every change but start-up hooks, judged
    by the residual audit: the fallback on an engine whose storage cannot be read), harbor (every
    change, as Harbor's tests see them), live (the agent's own container), separate (only the
    agent's artifacts), none (no engine)."""
    verdict: Literal["clean", "warning", "tampered", "live-state", "unchecked"] = "clean"
    """live-state: processes outlived the tests (a server, a terminal session the tests opened) and
    nothing else was found: the pass cannot be trusted under strict (a survivor could have
    written the reward), but nothing says the agent tampered."""
    paths: list[str] = Field(default_factory=list)
    """Suspicious filesystem changes, 'path: why'."""
    allowed: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    """Changes that did not reach the checker, 'path: why' (at most 200 listed)."""
    dropped_count: int = 0
    kept: int = 0
    """How many of the agent's changes reached the checker."""
    changes_sha256: str | None = None
    """Digest of the archive of kept changes the tests ran on (what an evidence bundle holds)."""
    hardened: bool = False
    """Strict mode's checker boundary applied: /tests read-only and root-only, seccomp
    refusing ptrace and kin, no privileges gained through exec."""
    survivors: list[str] = Field(default_factory=list)
    """Processes that outlived test.sh in the verification container (killed when it exited)."""
    shares_with: list[str] = Field(default_factory=list)
    """Live processes the test run shares a namespace with (the agent's own container under
    `isolation = "live"`, a compose task's sidecars): invariant 1 cannot hold, so strict mode
    refuses a pass (`live_state`) and says so here."""
    notes: list[str] = Field(default_factory=list)
    audit_sec: float | None = None


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
    integrity: IntegrityReport | None = None
    evidence: Any = Field(default=None, exclude=True)
    """The `rsr.verify.deliverables.Changes` the tests ran on, when the caller asked to keep
    them (`verify(..., keep_evidence=True)`); the caller owns its archive file."""

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


def outcome_of(reward: float, milestones: dict[str, float]) -> tuple[bool, float]:
    """(passed, process): passed only for full success; process is the fraction of milestones
    passed, or equals passed for a task without milestones. Reports recompute scores with this."""
    passed = reward >= 1.0 - 1e-9
    if milestones:
        return passed, sum(min(max(v, 0.0), 1.0) for v in milestones.values()) / len(milestones)
    return passed, 1.0 if passed else 0.0


async def verify(task: LoadedTask, sbx: SandboxLike | None = None, *, integrity: Integrity = "auto",
                 isolation: Literal["snapshot", "fresh", "live"] | None = None, final: bool = True,
                 keep_evidence: bool = False, boundary: bool = True) -> VerifierResult:
    """Run the task's hidden tests against the agent's work and read the reward.

    On a Docker-backed sandbox (ours or Inspect's compose one) the tests run in a verification
    container made from the agent's final filesystem (`rsr.verify.snapshot`), or with
    `isolation = "live"` in the agent's container itself; either way the tests go in and the
    reward comes out through the engine, and the integrity audit (`rsr.verify.integrity`)
    judges the agent's filesystem changes. Other sandboxes get the plain in-place run.

    A sandbox that fails underneath the tests (its container killed, an exec refused) is a
    failed result with the reason, never an exception that would stop the whole eval.
    `final=False` (RSRT's mid-run checks): the agent goes on afterwards, so its sandbox's
    storage watchdog keeps running. `boundary=False` runs the previous design (a commit of the
    whole agent container, audited live), kept for engines whose storage this host cannot
    read and for side-by-side benchmarks.
    """
    started = time.monotonic()
    mode = strictness(task, integrity)
    chosen = isolation or task.config.verifier.isolation

    def stopped() -> IntegrityReport:
        return IntegrityReport(mode=mode, isolation=chosen, verdict="unchecked",
                               notes=["no verdict: the sample ended before its tests could run"])

    try:
        if sbx is None:
            from inspect_ai.util import sandbox as current_sandbox

            sbx = current_sandbox()
        failed = infra_error_of(sbx)
        if failed is not None:  # the sandbox never started: there is nothing to verify
            return _failed(f"infra_{failed.kind}", f"infrastructure error ({failed.kind}): {failed}", started,
                           integrity=stopped())
        storage = getattr(getattr(sbx, "_sandbox", sbx), "storage_exceeded", None)
        if storage:
            return _failed("storage_exceeded", f"the sample was stopped: {storage}", started, integrity=stopped())
        inner = getattr(sbx, "_sandbox", sbx)
        if final and hasattr(inner, "pause_watchdog"):
            # From here the verifier checks storage itself; a kill mid-verification would only
            # turn the verdict into a sandbox error.
            inner.pause_watchdog()
        container = await container_of(sbx)
        if container is None:
            return await _verify_in_place(task, sbx, started, mode)
        return await _verify_engine(task, sbx, container, started, mode, chosen, keep_evidence, boundary)
    except VerifierBootstrapError as e:
        return _failed(VERIFIER_BOOTSTRAP, str(e), started, integrity=stopped())
    except Exception as e:  # noqa: BLE001 - cancellation is a BaseException and still propagates
        storage = getattr(getattr(sbx, "_sandbox", sbx), "storage_exceeded", None)
        if storage:
            return _failed("storage_exceeded", f"the sample was stopped: {storage}", started, integrity=stopped())
        return _failed("sandbox_error", f"the sandbox failed during verification: {type(e).__name__}: {e}", started,
                       integrity=stopped())


def strictness(task: LoadedTask, integrity: Integrity) -> Literal["strict", "warn"]:
    """auto: strict for tasks that declare `[verifier] allow_changes` (they know the audit),
    a warning for Harbor tasks that do not."""
    if integrity == "auto":
        return "strict" if task.config.verifier.allow_changes is not None else "warn"
    return integrity


def _failed(error: str, explanation: str, started: float, **extra: Any) -> VerifierResult:
    return VerifierResult(passed=False, reward=0.0, process=0.0, error=error, explanation=explanation,
                          duration_sec=time.monotonic() - started, **extra)


@contextlib.asynccontextmanager
async def _bootstrap(agent_container: str | None, what: str) -> AsyncIterator[None]:
    """Turn a failure to set up the tests' container into a VerifierBootstrapError, unless the
    agent's own container is gone (its processes exhausted its memory, say): that stays a
    sandbox error of the sample's own."""
    try:
        yield
    except VerifierBootstrapError:
        raise
    except Exception as e:
        if agent_container is not None and not await asyncio.to_thread(_running, agent_container):
            raise
        raise VerifierBootstrapError(f"{what}: {type(e).__name__}: {e}") from e


def _running(container: str) -> bool:
    from rsr.sandbox import engine

    try:
        return bool(engine.api().inspect_container(container)["State"].get("Running"))
    except Exception:  # noqa: BLE001 - gone, or the engine does not answer: not provably running
        return False


class _TestRun:
    """How the task's tests are run and their outputs read, wherever they run."""

    def __init__(self, task: LoadedTask) -> None:
        cfg = task.config.verifier
        self.task = task
        self.user = cfg.user
        self.env = {k: expand_env(v) for k, v in cfg.env.items()}
        self.timeout = max(1, int(math.ceil(cfg.timeout_sec)))
        # Terminal-Bench 1 tasks with a parser are scored from the test run's output, as TB1 did.
        self.parser = task.parser_name
        self.command = ["/bin/bash", "-c", task.tb1_run_tests_command() if self.parser else task.test_command()]
        self.tb1_files: dict[str, str] = {}

    async def read_tb1_files(self, where: str) -> None:
        if self.parser != "long_cli":
            return
        from rsr.sandbox import engine
        from rsr.verify.tb1_parsers import LONG_CLI_FILES, LONG_CLI_OUTPUT_DIR

        found = await asyncio.to_thread(engine.get_files, where, LONG_CLI_OUTPUT_DIR, list(LONG_CLI_FILES))
        self.tb1_files.update({k: v.decode("utf-8", errors="replace") for k, v in found.items() if v is not None})

    def probe(self, container: str, cwd: str | None) -> None:
        """Invariant 4: whether test.sh can start, decided on a container of the pristine image
        before any change of the agent's is there; VerifierBootstrapError when it cannot (the
        task's or the engine's fault, never the agent's). Cost: engine stats, ~10 ms."""
        probe_start(container, cwd, self.user)

    async def in_live(self, container: str, cwd: str | None) -> tuple[Any, list[str], dict[str, bytes | None] | str]:
        from rsr.sandbox import engine

        await _install_tests_live(self.task, container)
        outcome = await asyncio.to_thread(engine.run_exec, container, self.command, env=self.env, user=self.user,
                                          cwd=cwd, timeout=self.timeout)
        await self.read_tb1_files(container)
        try:
            files = await asyncio.to_thread(engine.get_files, container, VERIFIER_LOG_DIR,
                                            ["reward.txt", "reward.json"])
        except ValueError as e:
            return outcome, [], str(e)
        return outcome, [], dict(files)

    async def in_snapshot(self, snap: Any) -> tuple[Any, list[str], dict[str, bytes | None] | str]:
        """Run in a verification container and remove it afterwards."""
        from rsr.sandbox import engine
        from rsr.verify import snapshot

        try:
            # Invariant 2: the run ends when test.sh's own process exits; `end` kills everything
            # else in the container at that instant, before any output or reward is read.
            end = await asyncio.to_thread(snapshot.RunEnd, snap.container)
            outcome = await asyncio.to_thread(engine.run_exec, snap.container, self.command, env=self.env,
                                              user=self.user, cwd=self.task.workdir or snap.working_dir,
                                              timeout=self.timeout, on_exit=end)
            await asyncio.to_thread(end)  # no-op when it ran at the exit
            left = end.survivors or []
            await self.read_tb1_files(snap.container)
            try:
                files = snapshot.read_reward_files(snap.logs_dir)
            except ValueError as e:
                return outcome, left, str(e)
            return outcome, left, files
        finally:
            await asyncio.to_thread(snapshot.destroy, snap)


async def _check_carried(task: LoadedTask, carried: Any, report: IntegrityReport, run: _TestRun,
                         agent_container: str | None, join_network: bool) -> tuple[Any, Any, list[str], Any]:
    """The tests on a fresh container of the pristine image with `carried` applied:
    (residual audit, outcome, survivors, reward files)."""
    from rsr.verify import deliverables, snapshot

    report.trust = carried.plan.trust
    report.kept, report.changes_sha256 = len(carried.kept) + len(carried.deleted), carried.archive_sha256
    report.dropped, report.dropped_count = carried.dropped[:200], len(carried.dropped)
    report.hardened = report.mode == "strict"
    async with _bootstrap(agent_container, "the verification container could not be started"):
        snap = await asyncio.to_thread(snapshot.create_pristine, agent_container, task, carried.image,
                                       join_network=join_network, hardened=report.hardened,
                                       template=None if agent_container else carried.container)
    try:
        await asyncio.to_thread(run.probe, snap.container, task.workdir or snap.working_dir)
        t0 = time.monotonic()
        # What the task declares, or the exact paths its reference solution changed: judged by the
        # audit as a declared path is ("allowed"); inside inferred trees nothing is.
        allow = task.config.verifier.allow_changes or [_escape(p) for p in carried.plan.exact]
        audit_result = await asyncio.to_thread(_audit_carried, snap.container, carried, allow, task.workdir)
        report.audit_sec = time.monotonic() - t0
        await asyncio.to_thread(deliverables.apply, snap.container, carried)
    except BaseException:
        await asyncio.to_thread(snapshot.destroy, snap)
        raise
    outcome, left, files = await run.in_snapshot(snap)
    return audit_result, outcome, left, files


async def verify_changes(task: LoadedTask, changes: Any, *, integrity: Integrity = "auto",
                         network_container: str | None = None) -> VerifierResult:
    """The task's tests on a fresh container of `changes.image` with `changes` (an
    `rsr.verify.deliverables.Changes`, e.g. from an evidence bundle) applied: no model, no agent.
    What a regrade runs. `network_container`: a container whose network namespace the tests
    join (a service to query); by default they get no network. The verdict is judged under the
    plan the changes were captured with (`changes.plan`), whatever `integrity` says about
    strictness of reading."""
    started = time.monotonic()
    mode = strictness(task, integrity)
    report = IntegrityReport(mode=mode, isolation="snapshot" if network_container else "fresh")
    run = _TestRun(task)
    try:
        audit_result, outcome, left, files = await _check_carried(task, changes, report, run, network_container,
                                                                  network_container is not None)
    except VerifierBootstrapError as e:
        return _failed(VERIFIER_BOOTSTRAP, str(e), started, integrity=report)
    except Exception as e:  # noqa: BLE001 - a regrade reports, it does not crash
        return _failed("sandbox_error", f"the verification container failed: {type(e).__name__}: {e}", started,
                       integrity=report)
    report.paths, report.allowed, report.survivors = audit_result.suspicious, audit_result.allowed, left
    return _finish(task, run, outcome, files, report, mode, started)


async def _verify_engine(task: LoadedTask, sbx: Any, container: str, started: float,
                         mode: Literal["strict", "warn"],
                         isolation: Literal["snapshot", "fresh", "live"],
                         keep_evidence: bool = False, boundary: bool = True) -> VerifierResult:
    from rsr.sandbox import engine
    from rsr.tasks.load import verifier_mode
    from rsr.verify import snapshot

    # Harbor's separate verifier environment: nothing of the agent's but its artifacts crosses over.
    # A multi-step task is verified step by step, each through its step's view (rsr.verify.steps).
    apart = verifier_mode(task.config) == "separate" and (not task.config.steps or task.step is not None)
    report = IntegrityReport(mode=mode, isolation="separate" if apart else isolation,
                             trust="separate" if apart else "live" if isolation == "live" else "none")
    limit_mb = task.config.environment.storage_mb
    if limit_mb:
        # The watchdog polls; a burst written just before the agent ended is caught here.
        used = await asyncio.to_thread(engine.writable_bytes, container)
        if used > limit_mb * 1024 * 1024:
            return _failed("storage_exceeded", f"the sandbox wrote {used / 2**20:.0f} MB, above the task's "
                           f"storage limit of {limit_mb} MB", started, integrity=report)
    run = _TestRun(task)
    live = isolation == "live" and not apart
    strict = mode == "strict"
    join = False
    listeners: list[str] = []
    if live:
        # Invariant 1 cannot hold: the tests run beside the agent's processes by the task's design.
        report.shares_with = ["the agent's own container (isolation = \"live\")"]
    elif strict:
        # A compose task's sidecars live in the agent's network namespace: the tests can reach
        # them only by joining it, and then share it with live processes (refused under strict).
        peers = [] if apart or isolation == "fresh" else await asyncio.to_thread(snapshot.network_peers, container)
        report.shares_with = [f"{p} (shares the agent's network namespace)" for p in peers]
        join = bool(peers)
        listeners = await asyncio.to_thread(snapshot.listening_ports, container)
    else:
        # warn: Harbor's semantics, the agent's processes stay alive and a server it left answers
        # on localhost; invariants 2, 4 and 5 hold all the same.
        join = isolation == "snapshot" and not apart
    # Invariant 1 (strict): from here until the test run has ended no process of the agent's runs.
    async with _agent_frozen(container if strict and not live else None):
        judged = await _frozen_run(task, run, report, mode, started, container, apart, join, keep_evidence,
                                   boundary, live, sbx)
    if listeners and not judged.passed and judged.integrity is not None and judged.integrity.verdict == "clean":
        # The agent left services listening: strict ran the tests without them (invariant 1). If
        # the tests need them, this task cannot be verified under strict: say so with the failure.
        judged.integrity.verdict = "live-state"
        judged.integrity.notes.append(
            "not verifiable under strict if the tests need the services the agent left listening ("
            + ", ".join(listeners) + "): strict runs the tests with every agent process frozen and no shared "
            "network; -T integrity=warn runs them beside the live services, as Harbor does")
    return judged


@contextlib.asynccontextmanager
async def _agent_frozen(container: str) -> AsyncIterator[None]:
    from rsr.verify import snapshot

    frozen = snapshot.agent_frozen(container)
    await asyncio.to_thread(frozen.__enter__)
    try:
        yield
    finally:
        await asyncio.to_thread(frozen.__exit__, None, None, None)


async def _frozen_run(task: LoadedTask, run: _TestRun, report: IntegrityReport, mode: Literal["strict", "warn"],
                      started: float, container: str, apart: bool, join: bool, keep_evidence: bool,
                      boundary: bool, live: bool, sbx: Any) -> VerifierResult:
    """The verification proper, once the agent's container is frozen (strict; see _verify_engine)."""
    from rsr.sandbox import engine
    from rsr.verify import deliverables, inferred, integrity, separate, snapshot

    allow = task.config.verifier.allow_changes or []
    limit_mb = task.config.environment.storage_mb

    async def live_audit() -> integrity.AuditReport:
        """The fallback and live modes' audit: the agent container's changes as they are now."""
        if apart:
            return integrity.AuditReport()  # the agent's filesystem is not what the tests run on
        t0 = time.monotonic()
        info = await asyncio.to_thread(engine.api().inspect_container, container)
        path_env = next((e.split("=", 1)[1] for e in info["Config"].get("Env") or [] if e.startswith("PATH=")), None)
        sites = await asyncio.to_thread(integrity.python_site_dirs, container)
        stdlib = await asyncio.to_thread(integrity.python_stdlib_dirs, container)
        workdir = task.workdir or info["Config"].get("WorkingDir") or "/"
        found = await asyncio.to_thread(integrity.audit, container, allow, path_env, sites, workdir, stdlib)
        report.audit_sec = time.monotonic() - t0
        return found

    async def run_elsewhere() -> tuple[Any, list[str], dict[str, bytes | None] | str]:
        if live:
            return await run.in_live(container, task.workdir or getattr(getattr(sbx, "_sandbox", sbx),
                                                                        "working_dir", None))
        async with _bootstrap(container, "the verification container could not be started"):
            if apart:
                report.hardened = report.mode == "strict"
                snap = await asyncio.to_thread(separate.create, container, task, report.hardened, run.probe)
            else:
                snap = await asyncio.to_thread(snapshot.create, container, task, join)
        report.notes.extend(snap.notes)
        return await run.in_snapshot(snap)

    carried = None
    if boundary and not apart and not live:
        try:
            plan = deliverables.plan_for(mode, task.workdir or await asyncio.to_thread(_working_dir, container),
                                         task.config.verifier.allow_changes, inferred_for(task, mode),
                                         startup_paths(task.test_files(), task.config.verifier.user))
        except deliverables.NoDeliverables as e:
            report.verdict = "unchecked"
            return _failed("no_deliverables", f"{task.name}: {e}: strict mode has nothing to carry; "
                           f"{inferred.refusal([task.name], str(task.paths.task_dir.parent))}", started,
                           integrity=report)
        if plan.inferred_from:
            report.notes.append(f"deliverables inferred from the reference solution (record {plan.inferred_from})")
        try:
            carried = await asyncio.to_thread(deliverables.capture, container, plan,
                                              limit_mb * 1024 * 1024 if limit_mb else None)
        except deliverables.ChangesTooLarge as e:
            return _failed("storage_exceeded", str(e), started, integrity=report)
        except deliverables.CaptureUnavailable as e:
            report.notes.append(f"{e}: the tests run on a commit of the agent's container, audited live")
    if carried is not None:
        try:
            audit_result, outcome, left, files = await _check_carried(task, carried, report, run, container, join)
        except BaseException:
            carried.discard()
            raise
    else:
        if report.trust == "none":
            report.trust = "audited" if mode == "strict" else "harbor"
        audit_result, (outcome, left, files) = await asyncio.gather(live_audit(), run_elsewhere())
        if not apart:
            # A commit of the agent's container: no pristine container was probed beforehand.
            await _blame_start(run, outcome, container, task)
    report.paths, report.allowed, report.survivors = audit_result.suspicious, audit_result.allowed, left
    judged = _finish(task, run, outcome, files, report, mode, started)
    if carried is not None:
        if keep_evidence:
            judged.evidence = carried
        else:
            carried.discard()
    return judged


def probe_start(container: str, cwd: str | None, user: str | None) -> None:
    """Whether test.sh can start in `container` (a pristine one): `/bin/bash` is there, the tests'
    working directory is a directory, their user is known; VerifierBootstrapError naming what is
    missing when not. Engine stats only (no command of the container's runs): ~10 ms."""
    from rsr.sandbox import engine

    def is_dir(found: dict[str, Any] | None) -> bool:
        mode = int((found or {}).get("mode", 0))
        return bool(mode & (1 << 31) or mode & (1 << 27))  # Go's ModeDir, or a link to follow

    missing = []
    if engine.stat_path(container, "/bin/bash") is None:
        missing.append("/bin/bash is not in the image")
    if cwd and not is_dir(engine.stat_path(container, cwd)):
        missing.append(f"the tests' working directory {cwd} is not a directory in the image")
    name = (user or "").split(":", 1)[0]
    if name and not name.isdigit() and name != "root":
        try:
            passwd = engine.get_file(container, "/etc/passwd", follow=True).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            passwd = ""
        if not any(line.split(":", 1)[0] == name for line in passwd.splitlines()):
            missing.append(f"the tests' user {name!r} is not in the image's /etc/passwd")
    if missing:
        raise VerifierBootstrapError("the tests cannot start in the task's pristine image: " + "; ".join(missing))


_PRISTINE_STARTS: dict[tuple[str, str | None, str | None], str | None] = {}


def pristine_starts(image: str, cwd: str | None, user: str | None) -> str | None:
    """For the modes without a pristine container of their own (live isolation, the commit
    fallback): None when test.sh can start in a container of `image` (created, never started),
    else why not. Asked only after a run could not start; once per image per process."""
    from rsr.sandbox import engine
    from rsr.verify.snapshot import KEEPALIVE

    key = (image, cwd, user)
    if key not in _PRISTINE_STARTS:
        api = engine.api()
        created = api.create_container(image, command=KEEPALIVE, entrypoint=[], labels={
            engine.LABEL_SANDBOX: "rsr-verify", engine.LABEL_OWNER: str(os.getpid()), engine.LABEL_ROLE: "probe"},
            host_config=api.create_host_config(network_mode="none"))
        try:
            probe_start(created["Id"], cwd, user)
            _PRISTINE_STARTS[key] = None
        except VerifierBootstrapError as e:
            _PRISTINE_STARTS[key] = str(e)
        finally:
            engine.remove_container(created["Id"])
    return _PRISTINE_STARTS[key]


async def _blame_start(run: _TestRun, outcome: Any, container: str, task: LoadedTask) -> None:
    """Invariant 4 where no pristine container was probed before the run: a test.sh that could
    not start is an infrastructure error only if it cannot start in the pristine image either."""
    output = (outcome.stdout + outcome.stderr).decode("utf-8", errors="replace")
    if not could_not_start(outcome.returncode, output):
        return
    from rsr.sandbox import engine

    info = await asyncio.to_thread(engine.api().inspect_container, container)
    why = await asyncio.to_thread(pristine_starts, info["Config"]["Image"],
                                  task.workdir or info["Config"].get("WorkingDir") or None, run.user)
    if why is not None:
        raise VerifierBootstrapError(why)


def _escape(path: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def inferred_for(task: LoadedTask, mode: Literal["strict", "warn"]) -> Any:
    """The inferred deliverables strict mode uses for a task that declares none (None: none)."""
    if mode != "strict" or task.config.verifier.allow_changes is not None:
        return None
    from rsr.verify import inferred

    return inferred.usable(task.digest)


def _working_dir(container: str) -> str:
    from rsr.sandbox import engine

    return engine.api().inspect_container(container)["Config"].get("WorkingDir") or "/"


def _audit_carried(pristine: str, carried: Any, allow: list[str], workdir: str | None) -> Any:
    """The residual audit over what the tests will run on, against the pristine container."""
    from rsr.verify import integrity

    if not carried.kept and not carried.deleted:
        return integrity.AuditReport()
    sites, stdlib = integrity.python_dirs(pristine, carried.image)
    info = carried.container.get("Config") or {}
    path_env = next((e.split("=", 1)[1] for e in info.get("Env") or [] if e.startswith("PATH=")), None)
    changes = integrity.changes_of(carried.kept, carried.added, carried.deleted)
    found = integrity.audit_changes(pristine, changes, allow, path_env, sites,
                                    workdir or info.get("WorkingDir") or "/", stdlib, carried.package_test())
    for entry in carried.plugins:
        path = entry.split(": ", 1)[0]
        (found.allowed if integrity.matches_any(path, allow) else found.suspicious).append(entry)
    return found


def _finish(task: LoadedTask, run: _TestRun, outcome: Any, files: dict[str, bytes | None] | str,
            report: IntegrityReport, mode: Literal["strict", "warn"], started: float) -> VerifierResult:
    parser, timeout, tb1_files = run.parser, run.timeout, run.tb1_files
    output = cap_output(outcome.stdout.decode("utf-8", errors="replace")
                        + (("\n" + outcome.stderr.decode("utf-8", errors="replace")) if outcome.stderr else ""))
    if outcome.timed_out:
        return _judged(_failed("verifier_timeout", f"verifier timed out after {timeout}s\n{output}", started,
                               returncode=outcome.returncode), report, False)
    if parser:
        scored = _tb1_result(task, parser, outcome, output, tb1_files, started)
        return _judged(scored, report, scored.passed)
    if isinstance(files, str):
        return _judged(_failed("malformed_reward", f"{files}\n{output}", started, returncode=outcome.returncode),
                       report, False)
    result, warnings = _scored(task, files.get("reward.txt"), files.get("reward.json"), mode, outcome.returncode,
                               output, started)
    if result.error == "missing_reward" and could_not_start(outcome.returncode, output):
        # The pristine image starts the tests (probed before the agent's changes, invariant 4):
        # what stops them now is the agent's doing, a scored failure.
        report.notes.append("test.sh could not start on the agent's result (it starts on the pristine image)")
    report.notes.extend(warnings)
    return _judged(result, report, result.passed)


def could_not_start(returncode: int | None, output: str) -> bool:
    """test.sh never ran: the shell or the runtime could not start it (see the module doc)."""
    return returncode in (126, 127) and _CANNOT_START.fullmatch(output.strip()) is not None


def _scored(task: LoadedTask, txt: bytes | None, js: bytes | None, mode: Literal["strict", "warn"],
            returncode: int | None, output: str, started: float) -> tuple[VerifierResult, list[str]]:
    """The verdict from the reward files' contents (None: the file was not written), and the
    reading's warnings."""
    _record_reward_files(txt, js)
    if txt is None and js is None:
        why = "test script crashed" if returncode not in (0, 1) else "no reward file"
        return _failed("missing_reward", f"{why}: {VERIFIER_LOG_DIR}/reward.txt or reward.json was not written "
                       f"(test.sh exit {returncode})\n{output}", started, returncode=returncode), []
    try:
        reading = read_reward(txt, js, milestones=task.config.milestones,
                              reward_range=tuple(task.config.verifier.reward_range or (0.0, 1.0)),
                              strict=mode == "strict")
    except RewardError as e:
        return _failed("malformed_reward", f"{e}\n{output}", started, returncode=returncode), []
    passed, process = outcome_of(reading.reward, reading.milestones)
    return VerifierResult(passed=passed, reward=reading.reward, process=process, milestones=reading.milestones,
                          metrics=reading.metrics, returncode=returncode, explanation=output,
                          duration_sec=time.monotonic() - started), reading.warnings


def _tb1_result(task: LoadedTask, parser: str, outcome: Any, output: str, files: dict[str, str],
                started: float) -> VerifierResult:
    """A TB1 task's verdict from its parser (run-tests.sh's exit code and reward files do not count)."""
    from rsr.verify.tb1_parsers import parse_tb1

    tb1 = task.tb1
    parsed = parse_tb1(parser, outcome.stdout.decode("utf-8", errors="replace"), files=files,
                       f2p_mode=tb1.parser_results_f2p if tb1 else None,
                       p2p_mode=tb1.parser_results_p2p if tb1 else None)
    if parsed.error:
        return _failed("tb1_parse_error", f"{parser} parser: {parsed.error}\n{output}", started,
                       returncode=outcome.returncode)
    passed, process = outcome_of(parsed.reward, {})
    summary = ", ".join(f"{t.name}: {t.status}" for t in parsed.tests[:30])
    # The exit code is TB1's business no more: a pass is what the parser says.
    return VerifierResult(passed=passed, reward=parsed.reward, process=process, metrics=parsed.metrics,
                          returncode=0 if passed else outcome.returncode, duration_sec=time.monotonic() - started,
                          explanation=f"{parser} parser: {'resolved' if parsed.resolved else 'not resolved'}"
                                      f" ({summary})\n{output}")


def _record_reward_files(txt: bytes | None, js: bytes | None) -> None:
    """The reward files as read host-side, in the transcript (leaderboard validation re-reads them)."""
    try:
        from inspect_ai.log import transcript
    except ImportError:  # pragma: no cover
        return

    def text(raw: bytes | None) -> str | None:
        return None if raw is None else raw[:4096].decode("utf-8", errors="replace")

    try:
        transcript().info({"reward_files": {"reward.txt": text(txt), "reward.json": text(js)}}, source="rsr/verifier")
    except Exception:  # noqa: BLE001 - outside a sample (RSRT copies, the factory's own calls) there is no transcript
        pass


def _judged(result: VerifierResult, report: IntegrityReport, passed: bool) -> VerifierResult:
    """Apply the integrity rules to a result (see IntegrityReport.mode)."""
    problems: list[str] = []
    if report.shares_with and report.mode == "strict":
        # Invariant 1 cannot hold for this task: strict refuses to vouch for a pass, and says why.
        problems.append("the test run shares a namespace with live processes: " + "; ".join(report.shares_with))
    if report.paths:
        problems.append("the agent changed files the tests rely on: " + "; ".join(report.paths[:20]))
    if report.survivors:
        # Judged whatever the reading said: a keeper racing the tests' own write may lose once
        # (a malformed or failing file) and win the next time.
        problems.append("processes outlived the tests and could have written the reward: "
                        + "; ".join(report.survivors[:10]))
    exit_problem = passed and result.returncode not in (0, None)
    if exit_problem:
        report.notes.append(f"test.sh exited {result.returncode} but the reward is a pass")
    if not problems and not exit_problem:
        report.verdict = "clean"
        result.integrity = report
        return result
    if report.mode == "warn":
        report.verdict = "warning" if problems or exit_problem else "clean"
        report.notes.extend(problems)
        result.integrity = report
        return result
    if (report.survivors or report.shares_with) and not report.paths:
        # Live state, not a forgery: an honest deliverable (a terminal session, a server the tests
        # started) can outlive the tests as well as a keeper can. Strict mode cannot carry it: a
        # pass is not verifiable; a failure stands as the tests' own.
        report.verdict = "live-state"
        report.notes.append("not verifiable under strict: " + problems[0])
        if not passed:
            result.integrity = report
            return result
        return result.model_copy(update={
            "passed": False, "reward": 0.0, "process": 0.0, "error": "live_state", "integrity": report,
            "explanation": "integrity: not verifiable under strict (live state): " + problems[0] + "\n"
                           + result.explanation})
    report.verdict = "tampered" if problems else "clean"
    error = "tampered" if problems else "nonzero_exit"
    why = problems or [f"test.sh exited {result.returncode} while the reward file says pass"]
    return result.model_copy(update={
        "passed": False, "reward": 0.0, "process": 0.0, "error": error, "integrity": report,
        "explanation": "integrity: " + " | ".join(why) + "\n" + result.explanation})


async def _install_tests_live(task: LoadedTask, container: str) -> None:
    """Live mode: fresh /tests and /logs/verifier in the agent's own container, via the engine."""
    from rsr.sandbox import engine

    # Removing what the agent may have left at these paths needs a command in the container;
    # /bin/rm by absolute path (its replacement would show in the audit).
    await asyncio.to_thread(engine.run_exec, container, ["/bin/rm", "-rf", TESTS_MOUNT, VERIFIER_LOG_DIR],
                            user="root", timeout=60)
    try:
        archive = tests_archive(task, with_dirs=True)
        await asyncio.to_thread(engine.put_archive, container, archive)
    except Exception as e:  # noqa: BLE001 - the tests never reached the container
        raise VerifierBootstrapError(f"could not install the tests in the sandbox: {type(e).__name__}: {e}") from e


async def _verify_in_place(task: LoadedTask, sbx: SandboxLike, started: float,
                           mode: Literal["strict", "warn"]) -> VerifierResult:
    """Sandboxes without engine access (e.g. Kubernetes): tests installed and run by exec."""
    report = IntegrityReport(mode=mode, isolation="in-place", verdict="unchecked",
                             notes=["no engine access: no filesystem audit, tests run beside the agent's processes"])
    cfg = task.config.verifier
    setup = (f"rm -rf {TESTS_MOUNT} {VERIFIER_LOG_DIR} && mkdir -p {TESTS_MOUNT} {VERIFIER_LOG_DIR} && "
             f"tar -xf {TESTS_ARCHIVE} -C / && rm -f {TESTS_ARCHIVE} && chmod -R a+rX {TESTS_MOUNT} && "
             f"chmod 777 {VERIFIER_LOG_DIR}")
    try:
        await sbx.write_file(TESTS_ARCHIVE, tests_archive(task))
        prepared = await sbx.exec(["sh", "-c", setup], user="root", timeout=120)
    except (OSError, TimeoutError) as e:
        return _failed(VERIFIER_BOOTSTRAP, f"could not install the tests: {type(e).__name__}: {e}", started,
                       integrity=report)
    if not prepared.success:
        return _failed(VERIFIER_BOOTSTRAP, f"could not install the tests: {prepared.stderr.strip()[:500]}", started,
                       integrity=report)
    env = {k: expand_env(v) for k, v in cfg.env.items()}
    timeout = max(1, int(math.ceil(cfg.timeout_sec)))
    try:
        result = await sbx.exec(["bash", "-c", task.test_command()], env=env, user=cfg.user,
                                cwd=task.workdir, timeout=timeout, timeout_retry=False)
    except TimeoutError:
        return _failed("verifier_timeout", f"verifier timed out after {timeout}s", started, integrity=report)
    output = cap_output((result.stdout or "") + (("\n" + result.stderr) if result.stderr else ""))
    files: dict[str, bytes | None] = {}
    for name in ("reward.txt", "reward.json"):
        try:
            files[name] = await sbx.read_file(f"{VERIFIER_LOG_DIR}/{name}", text=False)
        except FileNotFoundError:
            files[name] = None
    scored, warnings = _scored(task, files["reward.txt"], files["reward.json"], mode, result.returncode, output,
                               started)
    report.notes.extend(warnings)
    return scored.model_copy(update={"integrity": report})
