"""The `rsr/verifier` scorer: runs the task's hidden tests after the agent finishes."""

from __future__ import annotations

import contextlib
import errno
import os
from collections import Counter
from pathlib import Path
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, mean, metric, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.util import store

from rsr.errors import RsrError
from rsr.sandbox.infra import INFRA_KEY, DiskFullError, InfraError, current_infra_error
from rsr.sandbox.needs import UNMET_KEY
from rsr.tasks.load import LoadedTask, task_from_metadata
from rsr.verify.artifacts import Collected, collect, sample_artifacts_dir
from rsr.verify.evidence import EVIDENCE_DIR, SCORE_KEY, BlobStore, SampleEvidence
from rsr.verify.hack_review import SCORE_KEY as REVIEW_KEY
from rsr.verify.hack_review import review_messages
from rsr.verify.outcome import Ending, agent_wrote_much, disk_full, sample_ending
from rsr.verify.steps import STORE_ARTIFACTS_DIR, STORE_STEPS, StepsRecord, trial_result
from rsr.verify.verifier import VERIFIER_BOOTSTRAP, Integrity, VerifierBootstrapError, VerifierResult, verify

STORE_ARTIFACTS = "rsr/artifacts"
"""Sample store key: the artifacts collected after the agent (`Collected`), for evidence bundles."""

EVIDENCE_STORE_ENV = "RSR_EVIDENCE_STORE"
STORE_KEY = "rsr_evidence"
"""Sample store key: `{"record": digest, "store": absolute path of the bundle store}`, so that
`inspect score` on the finished log (which rebuilds the state from the store, not the scores)
finds the bundle."""


def _container_of_sandbox() -> str | None:
    from inspect_ai.util import sandbox

    try:
        env = sandbox()
    except Exception:
        return None
    return getattr(getattr(env, "_sandbox", env), "container", None)


def _has_sandbox() -> bool:
    from inspect_ai.util import sandbox

    try:
        sandbox()
    except ProcessLookupError:
        return False
    return True


def _log_store() -> BlobStore | None:
    """The bundle store beside the log this sample is being written to."""
    try:
        # Inspect exposes the running sample's log location only through its active-sample record.
        from inspect_ai.log._samples import sample_active
    except ImportError:  # pragma: no cover - a newer Inspect moved it: bundles are then not kept
        return None
    active = sample_active()
    location = getattr(active, "log_location", None)
    if not location or "://" in str(location):
        return None
    return BlobStore(Path(location).resolve().parent / EVIDENCE_DIR)


def _reward_files_read() -> dict[str, bytes | None]:
    """The reward files as the verifier read them (its transcript record, rsr.verify.verifier)."""
    from inspect_ai.log import transcript

    for event in reversed(transcript().events):
        data = getattr(event, "data", None)
        if event.event == "info" and getattr(event, "source", None) == "rsr/verifier" and isinstance(data, dict):
            files = data.get("reward_files") or {}
            return {k: (v.encode() if isinstance(v, str) else None) for k, v in files.items()}
    return {}


async def _regrade_finished(state: TaskState, task: LoadedTask) -> VerifierResult:
    """A finished log has no sandbox: the verdict can only come from the sample's bundle."""
    kept = state.store.get(STORE_KEY) if state.store is not None else None
    if not isinstance(kept, dict) or not kept.get("record") or not kept.get("store"):
        raise RsrError(
            f"rsr/verifier: sample {state.sample_id} epoch {state.epoch} has no sandbox any more (the run "
            "finished) and its log keeps no evidence bundle, so its tests cannot be run again; its logged "
            "score stands. Runs with -T evidence=true (the default of `rsr eval run`) keep bundles that "
            "`inspect score --scorer rsr/verifier` and `rsr regrade LOG` regrade.")
    from rsr.verify.regrade import logged_mode_of, regrade_record

    # The absolute path recorded at run time; RSR_EVIDENCE_STORE when the log's evidence/ moved.
    store = BlobStore(os.environ.get(EVIDENCE_STORE_ENV) or kept["store"])
    record = store.get_model(kept["record"], SampleEvidence, "evidence record")
    logged = (state.scores or {}).get("verifier")
    logged_record = (logged.metadata or {}).get(SCORE_KEY) if logged is not None else None
    if isinstance(logged_record, dict) and logged_record.get("record") not in (None, kept["record"]):
        raise RsrError(f"rsr/verifier: sample {state.sample_id} epoch {state.epoch}: its store names evidence record "
                       f"{kept['record']}, its score {logged_record.get('record')}")
    # Bound to this execution (rsr.verify.binding): a record copied from another sample or epoch
    # is not this sample's evidence.
    if record.sample_uuid != state.uuid or record.epoch not in (None, state.epoch):
        raise RsrError(f"rsr/verifier: sample {state.sample_id} epoch {state.epoch}: its evidence record belongs to "
                       f"sample uuid {record.sample_uuid} epoch {record.epoch}, not this sample's {state.uuid}")
    if record.task_digest != task.digest:
        raise RsrError(f"rsr/verifier: sample {state.sample_id}: task {task.name} at {task.paths.task_dir} has "
                       f"digest {task.digest}, but the bundle records {record.task_digest}")
    return await regrade_record(task, record, store,
                                logged_mode=logged_mode_of(logged.metadata if logged is not None else None))


HARNESS_RESULT = "rsr_harness_result"
"""Sample store key the harnesses (a layer above) record their end in: `end_reason`, and `note`
when the agent could not do its job (the oracle of a task without solve.sh)."""


def _agent_end() -> dict[str, Any]:
    """Why the agent stopped, for the score: a budget or a refusal loop is not the tests' doing."""
    try:
        result = store().get(HARNESS_RESULT) or {}
    except Exception:  # no sample store (a regrade outside a sample)
        return {}
    if not isinstance(result, dict) or not result.get("end_reason"):
        return {}
    end = {"agent_end_reason": result["end_reason"]}
    return {**end, "agent_note": result["note"]} if result.get("note") else end


def _score(result: VerifierResult, task: LoadedTask, evidence: dict[str, Any] | None,
           extra: dict[str, Any] | None = None) -> Score:
    agent = _agent_end()
    explanation = result.explanation
    if agent.get("agent_note"):
        explanation = f"{agent['agent_note']}\n\n{explanation or ''}".rstrip("\n")
    return Score(
        value=result.score_value(),
        answer="passed" if result.passed else "failed",
        explanation=explanation,
        metadata={
            **agent,
            "milestones": result.milestones,
            "metrics": result.metrics,
            "error": result.error,
            "returncode": result.returncode,
            "verifier_duration_sec": result.duration_sec,
            "task_digest": task.digest,
            "integrity": result.integrity.model_dump() if result.integrity else None,
            SCORE_KEY: evidence,
            ATTEMPTS_KEY: _attempts(),
            **(extra or {}),
        },
    )


ATTEMPTS_KEY = "attempts"
"""Score metadata: the attempts this sample took (1 unless Inspect's retry_on_error retried an
infrastructure failure; every earlier attempt's error is in the log's `error_retries`)."""


def _attempts() -> int:
    try:
        from inspect_ai.log._samples import sample_active

        return len(getattr(sample_active(), "error_retries", None) or []) + 1
    except Exception:  # outside a running sample (a regrade)
        return 1


def _infra_score(task: LoadedTask, error: InfraError) -> Score:
    """A sample the infrastructure failed: a failure in the headline, counted apart as infra."""
    return Score(
        value={"passed": 0.0, "reward": 0.0, "process": 0.0},
        answer="failed",
        explanation=f"infrastructure error ({error.kind}), no verdict on the agent: {error}",
        metadata={"error": f"infra_{error.kind}", INFRA_KEY: error.as_metadata(), "task_digest": task.digest,
                  ATTEMPTS_KEY: _attempts()},
    )


def _ended_score(task: LoadedTask, ending: Ending) -> Score:
    """A sample whose tests could not run: the infrastructure's failure or the agent's."""
    if ending.infra is not None:
        return _infra_score(task, ending.infra)
    return Score(
        value={"passed": 0.0, "reward": 0.0, "process": 0.0},
        answer="failed",
        explanation=f"the sample ended before its tests could run ({ending.failure}): {ending.message}",
        metadata={**_agent_end(), "error": ending.failure, "task_digest": task.digest, ATTEMPTS_KEY: _attempts()},
    )


def infra_of(score: Score) -> dict[str, Any] | None:
    """`{"kind", "message"}` when the score is an infrastructure error's, else None."""
    info = (score.metadata or {}).get(INFRA_KEY)
    return info if isinstance(info, dict) else None


def _passed_of(s: SampleScore) -> float:
    value = s.score.value
    return float(value.get("passed", 0.0) if isinstance(value, dict) else value)  # type: ignore[arg-type]


@metric
def infra_errors() -> Metric:
    """Samples ended by an infrastructure error (they count as failures in `passed`'s mean).
    With several epochs, Inspect's metrics see epoch-reduced scores, which keep the first
    epoch's metadata; `rsr report` counts every run."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(1 for s in scores if infra_of(s.score) is not None))

    return compute


@metric(name="infra")
def infra_by_kind() -> Metric:
    """Infrastructure errors by kind (build, pull, sandbox, verifier), for the kinds seen: in
    the log, `rsr/infra_<kind>`."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        kinds = Counter(str((infra_of(s.score) or {}).get("kind") or "unknown")
                        for s in scores if infra_of(s.score) is not None)
        return {kind: float(n) for kind, n in sorted(kinds.items())}

    return compute


@metric
def passed_excl_infra() -> Metric:
    """The pass rate over the samples without an infrastructure error (as some leaderboards
    publish beside the headline); NaN when every sample had one."""

    def compute(scores: list[SampleScore]) -> float:
        kept = [_passed_of(s) for s in scores if infra_of(s.score) is None]
        return sum(kept) / len(kept) if kept else float("nan")

    return compute


@scorer(metrics={"passed": [mean(), stderr(), infra_errors(), passed_excl_infra(), infra_by_kind()],
                 "reward": [mean()], "process": [mean()]})
def verifier(integrity: Integrity = "auto") -> Scorer:
    """Score = {passed (1 only for full success), reward (the task's), process (milestone
    fraction, else = passed)}; the explanation carries the capped test output, the metadata the
    integrity report (`integrity`: auto = strict for tasks that declare `allow_changes`), the
    collected artifacts, for a multi-step task every step's rewards (`steps`) and, for runs with
    `-T evidence=true`, the digest of the sample's evidence bundle (`evidence`), and the
    deterministic hack review of the transcript (`hack_review`: findings per command)."""

    async def score(state: TaskState, target: Target) -> Score:
        task = task_from_metadata(state.metadata)
        if _has_sandbox() or current_infra_error() is not None:
            # The one rule: a started sample ends scored. An error, a lost container or a
            # sandbox that never started ends it here, as infra or as the agent's failure.
            ending = await sample_ending()
            if ending is not None:
                return _ended_score(task, ending)
        # The deterministic hack review over the transcript: a few regexes per command, so always
        # on. Informational here: a board recomputes it from the transcript (rsr.verify.hack_review).
        extra: dict[str, Any] = {REVIEW_KEY: review_messages(state.messages, task)}
        if not _has_sandbox():
            kept = (state.store.get(STORE_KEY) if state.store is not None else None) or None
            return _score(await _regrade_finished(state, task), task,
                          {"record": kept["record"], "regraded": True} if kept else None, extra)
        try:
            return await _verify_live(state, task, integrity, extra)
        except Exception as e:
            # Whatever broke under the scoring (the container or the engine gone, the host's disk
            # full, a crash), the sample still ends scored: infra where the engine or the host
            # says so, else a 0 that names the crash.
            return _ended_score(task, await _crash_ending(e))

    return score


async def _verify_live(state: TaskState, task: LoadedTask, integrity: Integrity, extra: dict[str, Any]) -> Score:
    """Collect the artifacts, run the tests, keep the evidence: the verdict on a live sandbox."""
    if task.config.steps:
        # Multi-step samples were verified step by step with the agent: no bundle (yet).
        result, steps = _multi_step(task)
        return _score(result, task, None, {**extra, **steps})
    # Harbor collects artifacts after the agent, before the tests.
    root = sample_artifacts_dir(task, getattr(state, "uuid", None))
    collected = await collect(task, root / "artifacts")
    if not collected.files:
        with contextlib.suppress(OSError):
            root.rmdir()  # nothing kept, no directory left behind
    store().set(STORE_ARTIFACTS, collected.model_dump())
    extra["artifacts"] = collected.model_dump()
    mode = state.metadata.get("integrity_policy") or integrity
    bundles = _log_store() if state.metadata.get("evidence") else None
    result = await verify(task, integrity=mode, keep_evidence=bundles is not None)
    if not result.passed and result.error != VERIFIER_BOOTSTRAP:
        full = disk_full(_container_of_sandbox())
        if full is not None:  # the tests could not write what they needed on this host
            return _infra_score(task, full)
        unmet = (state.metadata or {}).get(UNMET_KEY)
        if unmet:  # decided before the run from the task and the run's policy (rsr.sandbox.needs)
            need = unmet[0]
            return _infra_score(task, InfraError(f"{need['message']}; the sample failed without it",
                                                 str(need["kind"])))
    if result.error == VERIFIER_BOOTSTRAP:
        extra[INFRA_KEY] = VerifierBootstrapError(result.explanation.strip().splitlines()[0]
                                                  if result.explanation.strip() else "").as_metadata()
    evidence = None
    if bundles is not None:
        from inspect_ai.log import transcript
        from inspect_ai.log._samples import sample_active

        from rsr.verify.binding import transcript_digest
        from rsr.verify.recording import keep_evidence

        record = await keep_evidence(task, result, result.integrity.mode if result.integrity else mode, bundles,
                                     _reward_files_read(), state.uuid, epoch=state.epoch,
                                     eval_id=getattr(sample_active(), "eval_id", None),
                                     transcript=transcript_digest(state.messages, transcript().events))
        if record is not None:
            evidence = {"record": record}
            state.store.set(STORE_KEY, {"record": record, "store": str(bundles.root)})
    return _score(result, task, evidence, extra)


async def _crash_ending(error: Exception) -> Ending:
    ending = await sample_ending()
    if ending is not None:
        return ending
    container = _container_of_sandbox()
    full = disk_full(container)
    if full is not None:
        return Ending(infra=full)
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT) and not agent_wrote_much(container):
        # A host write found no room (rsr's cache, the log dir); the agent's container did not
        # write enough to have taken it.
        return Ending(infra=DiskFullError(f"no space left on the host: {error}"))
    return Ending(failure="verifier_crashed", message=f"{type(error).__name__}: {error}")


def _multi_step(task: Any) -> tuple[VerifierResult, dict[str, Any]]:
    """The verdict of a multi-step sample: its steps already ran (and were verified) with the agent."""
    raw = store().get(STORE_STEPS)
    if raw is None:
        return VerifierResult(passed=False, reward=0.0, process=0.0, error="steps_not_run",
                              explanation=f"{task.name} has {len(task.config.steps)} steps ([[steps]]) but the "
                                          "solver did not run them: use an rsr harness (rsr/oracle, rsr/terminus2, "
                                          "...) or wrap the agent with rsr.harness.steps.stepwise"), {}
    record = StepsRecord.model_validate(raw)
    result = trial_result(record)
    steps = [s.model_dump(exclude={"explanation"}) for s in record.steps]
    # One list for the whole sample, paths as in a Harbor trial dir (steps/<name>/artifacts/...).
    root = store().get(STORE_ARTIFACTS_DIR) or ""
    merged = Collected(dir=root if any(s.artifacts and s.artifacts.files for s in record.steps) else "")
    for s in record.steps:
        if s.artifacts is not None:
            prefix = f"steps/{s.name}/artifacts/"
            merged.files += [f.model_copy(update={"path": prefix + f.path}) for f in s.artifacts.files]
            merged.manifest += s.artifacts.manifest
            merged.hooks += s.artifacts.hooks
    store().set(STORE_ARTIFACTS, merged.model_dump())
    return result, {"steps": steps, "strategy": record.strategy, "trial_rewards": record.rewards,
                    "artifacts": merged.model_dump()}
