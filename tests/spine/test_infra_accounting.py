"""Every started sample ends scored: an infrastructure failure (an image that does not build,
a verifier that cannot start its tests) is a failure in the headline and is counted apart, with
a labelled pass rate over the other samples; rsr's reports print both numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from taskfactory import BASE_DOCKERFILE, harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

BROKEN = "FROM debian:bookworm-slim\nRUN echo rsr-infra-test && exit 3\n"
# An image whose /bin/bash is gone: the verifier cannot start test.sh (its bootstrap fails).
NO_BASH = "FROM debian:bookworm-slim\nRUN rm -f /usr/bin/bash /bin/bash\nWORKDIR /app\n"


def _metrics(log: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in log.results.scores:
        for name, m in s.metrics.items():
            # Inspect prefixes a metric with its package only where it finds rsr's installed
            # metadata first (not from a checkout holding rsr.egg-info): compare without it.
            out[f"{s.name}/{name.removeprefix('rsr/')}"] = m.value
    return out


@pytest.fixture(scope="module")
def build_failure_log(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("infra")
    harbor_task(root, "passes")
    harbor_task(root, "broken-build", dockerfile=BROKEN)
    logs = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle(), model="mockllm/model",
                        display="none", log_dir=str(root / "logs"))
    return logs[0]


def test_eval_does_count_an_image_that_does_not_build_as_a_failure_and_an_infra_error(build_failure_log: Any) -> None:
    log = build_failure_log
    assert log.status == "success"
    samples = {str(s.id): s for s in log.samples}
    assert set(samples) == {"passes", "broken-build"}
    assert all(s.error is None for s in samples.values())  # nothing vanished as an Inspect error
    broken = samples["broken-build"].scores["verifier"]
    assert broken.value["passed"] == 0
    assert broken.metadata["infra"]["kind"] == "build" and "exit" in broken.metadata["infra"]["message"]
    # No agent ran in the sandbox that never started (the oracle would have said what solve.sh did).
    assert not [m for m in samples["broken-build"].messages if m.role == "assistant"]
    assert [m for m in samples["passes"].messages if m.role == "assistant"]
    assert any(e.event == "info" and getattr(e, "source", None) == "rsr/infra" for e in samples["broken-build"].events)
    metrics = _metrics(log)
    assert metrics["passed/mean"] == 0.5
    assert metrics["passed/infra_errors"] == 1 and metrics["passed/infra_build"] == 1
    assert metrics["passed/passed_excl_infra"] == 1.0


def test_reports_do_print_the_headline_and_the_score_excluding_infra(build_failure_log: Any, tmp_path: Path) -> None:
    from rsr.report.evalset import summary_lines
    from rsr.report.logs import read_run
    from rsr.report.table5 import build_table5, csv_rows, render_markdown

    path = Path(build_failure_log.location)
    m = read_run(path).metrics()
    assert (m.mean, m.n_infra, m.infra_by_kind, m.mean_excl_infra) == (0.5, 1, {"build": 1}, 1.0)
    both = "passed 50.0% of 2 runs; infra errors 1 (build 1); excluding infra errors: passed 100.0% of 1 run"
    assert any(both in line for line in summary_lines([path]))
    table = build_table5([path.parent], ["run"])
    md = render_markdown(table, tmp_path)
    assert both in md and "broken-build epoch 1" in md and "0/1 (1 infra)" in md
    row = next(r for r in csv_rows(table) if r["label"] == "run" and r["status"] == "ok")
    assert (row["mean"], row["n_infra"], row["mean_excl_infra"]) == (0.5, 1, 1.0)


def test_reports_do_count_an_inspect_errored_sample_as_a_failure_by_kind(build_failure_log: Any,
                                                                        tmp_path: Path) -> None:
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    from rsr.report.logs import read_run

    log = read_eval_log(build_failure_log.location)
    passing = next(s for s in log.samples if s.id == "passes")
    passing.scores = None
    passing.error = EvalError(message="RuntimeError('model API failed')", traceback="", traceback_ansi="")
    out = tmp_path / "errored.eval"
    write_eval_log(log, str(out))
    m = read_run(out).metrics()
    assert (m.mean, m.n_errors, m.errors_by_kind, m.n_infra) == (0.0, 1, {"RuntimeError": 1}, 1)
    assert m.mean_excl_infra == 0.0  # an Inspect error is no infrastructure error: still a failure


def test_verifier_does_count_tests_that_cannot_start_as_infra_but_not_tests_that_write_no_reward(
        tmp_path: Path) -> None:
    harbor_task(tmp_path, "no-bash", dockerfile=NO_BASH)
    harbor_task(tmp_path, "no-reward", dockerfile=BASE_DOCKERFILE, test_sh="echo tests ran; exit 1\n")
    logs = inspect_eval(tasks_task("harbor", tmp_path, None, None), solver=oracle(), model="mockllm/model",
                        display="none", log_dir=str(tmp_path / "logs"))
    samples = {str(s.id): s.scores["verifier"] for s in logs[0].samples}
    assert samples["no-bash"].metadata["infra"]["kind"] == "verifier"
    assert samples["no-bash"].metadata["error"] == "verifier_bootstrap"
    # test.sh ran and wrote no reward: the agent's failure, as in Harbor (RewardFileNotFoundError).
    assert samples["no-reward"].metadata.get("infra") is None
    assert samples["no-reward"].metadata["error"] == "missing_reward"
    metrics = _metrics(logs[0])
    assert (metrics["passed/mean"], metrics["passed/infra_errors"], metrics["passed/passed_excl_infra"]) == (
        0.0, 1, 0.0)


def test_leaderboard_does_show_the_score_excluding_infra_beside_the_headline(build_failure_log: Any,
                                                                             tmp_path: Path) -> None:
    from rsr.report.leaderboard import LeaderboardEntry, LogRef, SuiteResult
    from rsr.report.logs import read_run
    from rsr.report.site import build_site, readme_table

    path = Path(build_failure_log.location)
    run = read_run(path)
    m = run.metrics()
    log = LogRef(file=path.name, sha256="0" * 64, eval_id=run.eval_id, run_id=run.run_id, created=run.created,
                 task=run.task, model=run.model, solver=run.solver)
    entry = LeaderboardEntry(id="oracle", model_name="oracle", harness="rsr/oracle", model=run.model,
                             submitted="2026-12-02", versions={},
                             suites={"harbor": SuiteResult(benchmark="harbor", suite_digest="-", metrics=m,
                                                           ci95=1.96 * m.stderr, log=log)})
    assert "50.0% (95% CI 9.5–90.5) (excl. 1 infra: 100.0%)" in readme_table([entry])
    page = build_site([entry], tmp_path / "site", title="board").read_text()
    assert "50.0% (95% CI 9.5–90.5)" in page and "excl. 1 infra: 100.0%" in page
