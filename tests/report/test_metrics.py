"""pass@k and friends checked against brute-force enumeration over all k-subsets of runs."""

from __future__ import annotations

import itertools
import math

import pytest

from rsr.report.metrics import (
    TaskOutcome,
    mean_stderr,
    pass_at_k,
    pass_hat_k,
    suite_metrics,
)


def _subsets(n: int, c: int, k: int) -> list[tuple[bool, ...]]:
    runs = [True] * c + [False] * (n - c)
    return [tuple(runs[i] for i in idx) for idx in itertools.combinations(range(n), k)]


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_matches_brute_force_over_all_k_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            subsets = _subsets(n, c, k)
            expected = sum(any(s) for s in subsets) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_hat_k_matches_brute_force_over_all_k_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            subsets = _subsets(n, c, k)
            expected = sum(all(s) for s in subsets) / len(subsets)
            assert pass_hat_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)


def test_pass_at_k_stays_exact_for_large_n() -> None:
    # The binomials overflow floats long before n=2000; the product form must not.
    n, c, k = 2000, 3, 50
    expected = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-9)


def test_pass_at_k_rejects_fewer_runs_than_k() -> None:
    with pytest.raises(ValueError, match="at least 3 runs"):
        pass_at_k(2, 1, 3)


def test_pass_at_k_rejects_more_successes_than_runs() -> None:
    with pytest.raises(ValueError, match="successes"):
        pass_at_k(3, 4, 1)


def test_mean_stderr_does_use_sample_standard_deviation() -> None:
    mean, se = mean_stderr([0.0, 1.0, 1.0, 0.0])
    assert mean == 0.5
    assert se == pytest.approx(math.sqrt((4 * 0.25 / 3) / 4))
    assert mean_stderr([0.7]) == (0.7, 0.0)


def test_task_outcome_does_count_errored_and_missing_runs_as_failures() -> None:
    outcome = TaskOutcome.from_runs(
        "t", {1: (True, 1.0, False), 2: (True, 0.5, True)}, epochs=3
    )
    assert outcome.passed == [True, False, False]
    assert outcome.process == [1.0, 0.0, 0.0]
    assert (outcome.errors, outcome.missing) == (1, 1)


def test_suite_metrics_does_average_pass_at_k_over_tasks() -> None:
    tasks = [
        TaskOutcome(task="a", passed=[True, False, False], process=[1, 0, 0]),
        TaskOutcome(task="b", passed=[False, False, False], process=[0.5, 0.5, 0]),
        TaskOutcome(task="c", passed=[True, True, True], process=[1, 1, 1]),
    ]
    m = suite_metrics(tasks, k=3)
    assert m.pass_at_k == pytest.approx(2 / 3)
    assert m.pass_hat_k == pytest.approx(1 / 3)
    assert m.mean == pytest.approx(4 / 9)
    assert m.run_means == pytest.approx([2 / 3, 1 / 3, 1 / 3])
    assert m.process == pytest.approx((1 / 3 + 1 / 3 + 1) / 3)
    assert m.solved == 2
    # pass@1 equals the mean pass rate: a cross-check of the two code paths
    assert suite_metrics(tasks, k=1).pass_at_k == pytest.approx(m.mean)


def test_suite_metrics_does_leave_pass_at_k_empty_when_runs_fewer_than_k() -> None:
    m = suite_metrics([TaskOutcome(task="a", passed=[True], process=[1.0])], k=3)
    assert m.pass_at_k is None and m.mean == 1.0


def test_suite_metrics_rejects_tasks_with_differing_run_counts() -> None:
    with pytest.raises(ValueError, match="differing run counts"):
        suite_metrics([
            TaskOutcome(task="a", passed=[True], process=[1.0]),
            TaskOutcome(task="b", passed=[True, False], process=[1.0, 0.0]),
        ])


def test_suite_metrics_does_count_infra_runs_as_failures_and_leave_them_out_only_of_the_labelled_rate() -> None:
    a = TaskOutcome.from_runs("a", {1: (True, 1.0, False, None, None), 2: (False, 0.0, False, "build", None),
                                    3: (True, 1.0, False, None, None)}, epochs=3)
    b = TaskOutcome.from_runs("b", {1: (False, 0.0, True, None, "RuntimeError"), 2: (True, 1.0, False, None, None)},
                              epochs=3)
    m = suite_metrics([a, b], k=3)
    assert m.mean == pytest.approx(3 / 6)
    assert (m.n_infra, m.infra_by_kind, m.n_errors, m.errors_by_kind, m.n_missing) == (
        1, {"build": 1}, 1, {"RuntimeError": 1}, 1)
    # The errored and the missing run stay failures; only the infra run leaves the denominator.
    assert m.mean_excl_infra == pytest.approx(3 / 5)
    every = suite_metrics([TaskOutcome.from_runs("c", {1: (False, 0.0, False, "pull", None)}, epochs=1)], k=1)
    assert (every.mean, every.mean_excl_infra) == (0.0, None)
