"""Strict and Harbor-compatible reading of reward files (rsr.verify.reward), on realistic files."""

from __future__ import annotations

import json

import pytest

from rsr.verify.reward import RewardError, read_reward

RQ = ["point_queries", "range_add", "large_sum_updates", "large_mixed"]


def js(**metrics: object) -> bytes:
    return json.dumps(metrics).encode()


def strict(txt: bytes | None = None, json_: bytes | None = None, milestones: list[str] | None = None,
           **kw: object):  # noqa: ANN201
    return read_reward(txt, json_, milestones=milestones or [], strict=True, **kw)


def lenient(txt: bytes | None = None, json_: bytes | None = None, milestones: list[str] | None = None,
            **kw: object):  # noqa: ANN201
    return read_reward(txt, json_, milestones=milestones or [], strict=False, **kw)


@pytest.mark.parametrize("mode", [strict, lenient])
def test_read_reward_does_read_an_honest_reward_txt(mode) -> None:  # noqa: ANN001
    for raw, value in [(b"1\n", 1.0), (b"0\n", 0.0), (b" 0.25 \n", 0.25), (b"1.0", 1.0)]:
        r = mode(txt=raw)
        assert (r.reward, r.source, r.milestones, r.warnings) == (value, "reward.txt", {}, [])


@pytest.mark.parametrize("mode", [strict, lenient])
def test_read_reward_does_read_honest_milestones_from_reward_json(mode) -> None:  # noqa: ANN001
    r = mode(json_=js(reward=0, point_queries=1, range_add=1, large_sum_updates=0, large_mixed=1), milestones=RQ)
    assert r.reward == 0 and r.source == "reward.json" and r.warnings == []
    assert r.milestones == {"point_queries": 1, "range_add": 1, "large_sum_updates": 0, "large_mixed": 1}
    full = mode(json_=js(reward=1, **dict.fromkeys(RQ, 1)), milestones=RQ)
    assert full.reward == 1 and full.warnings == []


def test_read_reward_does_take_the_total_from_reward_or_the_only_or_the_least_metric() -> None:
    assert strict(json_=js(reward=0.5, elapsed_s=0.7)).reward == 0.5
    assert strict(json_=js(score=0.75)).reward == 0.75
    assert strict(json_=js(parse=1, index=0.5)).reward == 0.5
    assert strict(json_=js(parse=1, index=1), milestones=["parse", "index"]).reward == 1


@pytest.mark.parametrize("mode", [strict, lenient])
@pytest.mark.parametrize("raw, match", [
    (b"1 FAIL: 37 of 40 checks failed\n", "exactly one number"),
    (b"PASS\n", "exactly one number"),
    (b"1\n1\n", "exactly one number"),
    (b"", "empty"),
    (b"  \n", "empty"),
    (b"nan\n", "non-finite"),
    (b"inf", "non-finite"),
    (b"\xff\xfe1", "UTF-8"),
])
def test_read_reward_rejects_a_reward_txt_that_is_not_one_finite_number(mode, raw: bytes, match: str) -> None:  # noqa: ANN001
    with pytest.raises(RewardError, match=match):
        mode(txt=raw)


@pytest.mark.parametrize("mode", [strict, lenient])
@pytest.mark.parametrize("raw, match", [
    (b'{"reward": NaN}', "finite"),
    (b'{"reward": Infinity}', "finite"),
    (b'{"reward": 1e309}', "finite"),
    (b'{"reward": "1"}', "not a number"),
    (b'{"reward": null}', "not a number"),
    (b'{"reward": [1]}', "not a number"),
    (b"1", "non-empty object"),
    (b"{}", "non-empty object"),
    (b'[{"reward": 1}]', "non-empty object"),
    (b'{"reward": 1', "not valid JSON"),
])
def test_read_reward_rejects_reward_json_without_finite_numbers(mode, raw: bytes, match: str) -> None:  # noqa: ANN001
    with pytest.raises(RewardError, match=match):
        mode(json_=raw)


def test_read_reward_rejects_no_file_as_missing_not_malformed() -> None:
    with pytest.raises(RewardError, match="no reward file") as e:
        strict()
    assert e.value.kind == "missing"
    with pytest.raises(RewardError) as e2:
        strict(txt=b"x")
    assert e2.value.kind == "malformed" and isinstance(e2.value, ValueError)


def test_read_reward_rejects_reward_json_planted_beside_a_failing_reward_txt_under_strict() -> None:
    with pytest.raises(RewardError, match="both reward.txt and reward.json"):
        strict(txt=b"0\n", json_=js(reward=1))


def test_read_reward_does_prefer_reward_json_as_harbor_does_with_a_warning() -> None:
    r = lenient(txt=b"0\n", json_=js(reward=1))
    assert r.reward == 1 and r.source == "reward.json"
    assert any("both" in w for w in r.warnings)


def test_read_reward_rejects_booleans_under_strict_and_warns_otherwise() -> None:
    forged = js(reward=True, **dict.fromkeys(RQ, True))
    with pytest.raises(RewardError, match="boolean"):
        strict(json_=forged, milestones=RQ)
    r = lenient(json_=forged, milestones=RQ)
    assert r.reward == 1.0 and any("boolean" in w for w in r.warnings)


@pytest.mark.parametrize("raw", [js(reward=1e9), js(reward=1.5), js(reward=-0.1), js(score=2)])
def test_read_reward_rejects_a_total_outside_the_reward_range_under_strict(raw: bytes) -> None:
    with pytest.raises(RewardError, match=r"outside the task's reward range \[0, 1\]"):
        strict(json_=raw)
    with pytest.raises(RewardError, match="outside"):
        strict(txt=b"1e9\n")
    assert any("outside" in w for w in lenient(json_=raw).warnings)


def test_read_reward_rejects_a_milestone_outside_the_range_under_strict() -> None:
    with pytest.raises(RewardError, match="point_queries = 5"):
        strict(json_=js(reward=0, point_queries=5, range_add=0, large_sum_updates=0, large_mixed=0), milestones=RQ)


def test_read_reward_does_honour_a_declared_reward_range() -> None:
    assert strict(txt=b"85\n", reward_range=(0, 100)).reward == 85
    with pytest.raises(RewardError, match=r"\[0, 100\]"):
        strict(txt=b"101\n", reward_range=(0, 100))
    with pytest.raises(ValueError, match="reward_range"):
        strict(txt=b"1", reward_range=(1, 0))


def test_read_reward_rejects_a_full_reward_with_every_milestone_at_zero_under_strict() -> None:
    forged = js(reward=1, **dict.fromkeys(RQ, 0))
    with pytest.raises(RewardError, match="claims full success but milestone"):
        strict(json_=forged, milestones=RQ)
    assert any("claims full success" in w for w in lenient(json_=forged, milestones=RQ).warnings)


def test_read_reward_rejects_a_full_reward_with_one_milestone_short_under_strict() -> None:
    forged = js(reward=1, point_queries=1, range_add=1, large_sum_updates=1, large_mixed=0.5)
    with pytest.raises(RewardError, match="large_mixed did not pass"):
        strict(json_=forged, milestones=RQ)


def test_read_reward_rejects_a_partial_reward_with_no_milestone_passed_under_strict() -> None:
    with pytest.raises(RewardError, match="every milestone at 0"):
        strict(json_=js(reward=0.5, parse=0, index=0), milestones=["parse", "index"])
    # a partial total with some milestones passed is consistent
    assert strict(json_=js(reward=0.5, parse=1, index=0), milestones=["parse", "index"]).reward == 0.5


@pytest.mark.parametrize("mode", [strict, lenient])
def test_read_reward_rejects_reward_json_lacking_a_declared_milestone(mode) -> None:  # noqa: ANN001
    with pytest.raises(RewardError, match="lacks the milestone.*large_mixed"):
        mode(json_=js(reward=1, point_queries=1, range_add=1, large_sum_updates=1), milestones=RQ)


def test_read_reward_rejects_reward_txt_for_a_task_with_milestones_under_strict() -> None:
    with pytest.raises(RewardError, match="declares point_queries"):
        strict(txt=b"1\n", milestones=RQ)
    r = lenient(txt=b"1\n", milestones=RQ)
    assert r.reward == 1 and r.milestones == {} and any("carries no milestones" in w for w in r.warnings)


def test_read_reward_rejects_duplicated_keys_under_strict() -> None:
    raw = b'{"reward": 0, "reward": 1}'
    with pytest.raises(RewardError, match="repeats the key"):
        strict(json_=raw)
    r = lenient(json_=raw)
    assert r.reward == 1 and any("repeats" in w for w in r.warnings)


def test_read_reward_does_keep_extra_finite_metrics_outside_the_range() -> None:
    # Only the total and the milestones are scores; other metrics (timings, counts) are free.
    r = strict(json_=js(reward=1, elapsed_s=12.5, cases=40))
    assert r.metrics == {"reward": 1, "elapsed_s": 12.5, "cases": 40}
