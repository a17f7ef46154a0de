"""The issue-22 red team for real: every family of `redteam_scripts.REDTEAM` is a hostile agent on
a real core task in Docker, under strict integrity, whose work is not done, so none may pass;
the oracle on each attacked task and a running-server deliverable must still pass, in the same
eval (one sandbox per sample, the task images shared)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from attack_scripts import CORE, ORACLE, run_attacks
from redteam_scripts import BROKEN_CONTROLS, REDTEAM, REDTEAM_CONTROLS, RedTeam

pytestmark = pytest.mark.docker

BY_NAME = {a.name: a for a in REDTEAM}


def params() -> list[Any]:
    """A family the defences cannot stop yet is a strict xfail, so that the gap stays visible and
    a fix shows up (XPASS)."""
    return [pytest.param(a.name, marks=pytest.mark.xfail(strict=True, reason=a.known_limit))
            if a.known_limit else a.name for a in REDTEAM]


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_attacks(tmp_path_factory.mktemp("redteam"), REDTEAM, REDTEAM_CONTROLS, integrity="strict")


def timed_out(meta: dict[str, Any], explanation: str | None) -> bool:
    return meta.get("error") == "verifier_timeout" or bool(re.search(r"exceeded \d+ ?s\b", explanation or ""))


def verdict(sample: Any) -> tuple[dict[str, float], dict[str, Any]]:
    score = sample.scores["verifier"]
    return score.value, score.metadata or {}


def controls() -> list[Any]:
    return [pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=BROKEN_CONTROLS[t]))
            if t in BROKEN_CONTROLS else t for t in REDTEAM_CONTROLS]


@pytest.mark.parametrize("task", controls())
def test_honest_control_passes_beside_the_red_team(attacked: dict[str, Any], task: str) -> None:
    value, meta = verdict(attacked[f"{task}@{ORACLE}"])
    if task == "http-service":
        # Its tests query the service the agent left running: strict runs them with every agent
        # process frozen and no shared network (invariant 1), so it cannot vouch, and says why.
        assert value["passed"] == 0 and meta["integrity"]["verdict"] == "live-state", meta["integrity"]
        assert any("tcp 8080" in n and "integrity=warn" in n for n in meta["integrity"]["notes"]), meta["integrity"]
        return
    assert value["passed"] == 1, meta
    assert meta["error"] is None and meta["integrity"]["mode"] == "strict"
    assert meta["integrity"]["verdict"] == "clean", meta["integrity"]


@pytest.mark.parametrize("name", params())
def test_verifier_rejects_red_team_family(attacked: dict[str, Any], name: str) -> None:
    attack: RedTeam = BY_NAME[name]
    sample = attacked[attack.id]
    value, meta = verdict(sample)
    context = (f"{attack.id} (defence: {attack.defence}): {meta.get('error')} {meta.get('integrity')} "
               f"{sample.metadata.get('attack_output')}")
    assert sample.error is None, context
    assert (meta.get("integrity") or {}).get("mode") == "strict", context
    if attack.known_limit and value["passed"] == 0 and timed_out(meta, sample.scores["verifier"].explanation):
        # a known gap measured on a checker bound by time: its limit, not a defence, failed it
        pytest.skip(f"inconclusive: the checker's time limit failed first ({attack.id})")
    assert value["passed"] == 0 and value["reward"] == 0, context
    integrity = meta["integrity"]
    if attack.defence == "dropped":
        # the allowlist never let it reach the checker, and says so
        assert integrity["trust"] == "deliverables", context
        assert any(attack.path in d for d in integrity["dropped"]), context
    elif attack.defence in ("exit status", "reward reader"):
        # A checker that runs its deliverable unprivileged (the kit) stops these earlier: nobody
        # can neither signal the root test.sh nor touch the root-only reward directory, so the
        # tests' own failing verdict stands. Without the kit the later defence must report it.
        unprivileged = (CORE / attack.task / "tests" / "rsr_check.py").is_file()
        expected = ("nonzero_exit", "tampered") if attack.defence == "exit status" else ("malformed_reward",)
        assert meta["error"] in expected or (unprivileged and meta["error"] is None), context
    elif attack.defence == "storage limit":
        assert meta["error"] == "storage_exceeded", context
    elif attack.defence in ("seccomp", "read-only /tests"):
        assert integrity["hardened"], context
