"""The run report's arithmetic: nearest-rank percentiles and infra kinds wherever recorded."""

from __future__ import annotations

from types import SimpleNamespace

from rsr.report.runstats import infra_kind, percentile


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0 and percentile([5.0], 99) == 5.0
    assert percentile([], 50) is None


def test_infra_kind_comes_from_the_sample_or_its_score() -> None:
    score = SimpleNamespace(metadata={"infra": {"kind": "engine", "message": "server died"}})
    assert infra_kind(SimpleNamespace(metadata={}, scores={"verifier": score})) == "engine"
    assert infra_kind(SimpleNamespace(metadata={"infra": {"kind": "build"}}, scores={})) == "build"
    assert infra_kind(SimpleNamespace(metadata=None, scores=None)) is None
    ended = {"rsr_harness_result": {"end_reason": "model_error", "infra": {"kind": "engine"}}}
    assert infra_kind(SimpleNamespace(metadata={}, scores={}, store=ended)) == "engine"
