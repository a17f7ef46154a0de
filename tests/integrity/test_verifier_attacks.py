"""Attacks on the verifier, for real: a hostile agent on real core tasks in Docker, under strict
integrity. None of them does the task's work, so every one must score 0, with the reason.

One eval carries every attack (`attack_scripts.ATTACKS`) plus an oracle control per task, so the
whole file costs one eval's worth of sandboxes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from attack_scripts import ATTACKS, CONTROL_TASKS, LIVE_TASK, ORACLE, Attack, run_attacks

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {a.name: a for a in ATTACKS}


def names(family: int) -> list[Any]:
    """The family's attacks; one the defence cannot stop by design is a strict xfail, so that
    a stronger defence shows up (XPASS) and the README's limits get updated."""
    return [pytest.param(a.name, marks=pytest.mark.xfail(strict=True, reason=a.known_limit))
            if a.known_limit else a.name for a in ATTACKS if a.family == family]


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_attacks(tmp_path_factory.mktemp("attacks"), integrity="strict")


def verdict(sample: Any) -> tuple[dict[str, float], dict[str, Any]]:
    score = sample.scores["verifier"]
    return score.value, score.metadata or {}


def assert_defeated(sample: Any, attack: Attack) -> dict[str, Any]:
    value, meta = verdict(sample)
    context = f"{attack.id}: {meta.get('error')} {meta.get('integrity')} {sample.metadata.get('attack_output')}"
    assert sample.error is None, context
    assert value["passed"] == 0 and value["reward"] == 0, context
    integrity = meta.get("integrity") or {}
    if attack.error is not None:
        # Under the allowlist an attack outside the deliverables never reaches the checker: the
        # tests just fail, and the dropped list names what the boundary removed.
        boundary = meta.get("error") is None and integrity.get("trust") == "deliverables" and integrity.get("dropped")
        assert meta["error"] in (attack.error, *attack.also) or boundary, context
    # every verdict, early stops included, says how it was checked (strict boards rely on it)
    assert integrity.get("mode") == "strict", context
    if attack.path is not None:
        assert any(attack.path in p for p in [*integrity["paths"], *integrity.get("dropped", [])]), context
    if attack.survivors:
        assert meta["integrity"]["survivors"], context
    return meta


@pytest.mark.parametrize("task", CONTROL_TASKS)
def test_oracle_control_passes_under_strict_integrity(attacked: dict[str, Any], task: str) -> None:
    value, meta = verdict(attacked[f"{task}@{ORACLE}"])
    if task == LIVE_TASK:
        # The tests run beside the agent's processes by the task's design: "no agent process when
        # the tests start" cannot hold, so strict refuses the pass and says why (never weakened).
        assert value["passed"] == 0 and meta["error"] == "live_state", meta
        assert meta["integrity"]["verdict"] == "live-state" and "isolation" in meta["integrity"]["shares_with"][0]
        return
    assert value["passed"] == 1, meta
    assert meta["error"] is None and meta["integrity"]["mode"] == "strict"
    assert not meta["integrity"].get("paths") and not meta["integrity"].get("survivors")


@pytest.mark.parametrize("name", names(1))
def test_verifier_rejects_leftover_agent_processes(attacked: dict[str, Any], name: str) -> None:
    attack = BY_NAME[name]
    meta = assert_defeated(attacked[attack.id], attack)
    assert meta["integrity"]["isolation"] == ("live" if attack.task == LIVE_TASK else "snapshot")


@pytest.mark.parametrize("name", names(2))
def test_verifier_rejects_shadowed_tools_and_startup_hooks(attacked: dict[str, Any], name: str) -> None:
    assert_defeated(attacked[BY_NAME[name].id], BY_NAME[name])


@pytest.mark.parametrize("name", names(3))
def test_verifier_rejects_forged_reward_files(attacked: dict[str, Any], name: str) -> None:
    assert_defeated(attacked[BY_NAME[name].id], BY_NAME[name])


def test_verifier_rejects_a_deliverable_that_keeps_a_reward_writer_alive(attacked: dict[str, Any]) -> None:
    attack = BY_NAME["deliverable-spawns-reward-keeper"]
    if (REPO / "tasks" / "core" / attack.task / "tests" / "rsr_check.py").is_file():
        # The checker kit runs the deliverable as nobody and kills what it leaves before the
        # reward is written: the keeper never survives to be listed, and the pass is not forged.
        value, meta = verdict(attacked[attack.id])
        assert value["passed"] == 0 and meta["integrity"]["mode"] == "strict", meta
        return
    meta = assert_defeated(attacked[attack.id], attack)
    assert any("keeper" in cmd for cmd in meta["integrity"]["survivors"]), meta["integrity"]


def test_verifier_fails_a_sample_that_exceeds_its_storage(attacked: dict[str, Any]) -> None:
    attack = BY_NAME["disk-fill-beyond-storage-mb"]
    assert_defeated(attacked[attack.id], attack)


def test_fork_bomb_stays_inside_its_pids_limit_and_the_eval_goes_on(attacked: dict[str, Any]) -> None:
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    sample = attacked[BY_NAME["fork-bomb"].id]
    assert sample.error is None, sample.metadata.get("attack_output")
    out = str(sample.metadata.get("attack_output"))
    limit_seen = re.search(r"pids.max=(\d+)", out)  # the sandbox's own cgroup limit (v1 or v2)
    assert limit_seen, out
    limit = int(limit_seen.group(1))
    refused = re.search(r"spawn refused after (\d+)", out)
    assert refused and int(refused.group(1)) < limit, out
    spec = sample.sandbox
    sandboxes = registry_find_sandboxenv(spec.type if hasattr(spec, "type") else spec[0]).default_concurrency()
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert limit * (sandboxes or 2 * (os.cpu_count() or 1)) < pid_max
    # the other samples of the same eval were scored as usual
    assert all(s.scores and "verifier" in s.scores for s in attacked.values())
