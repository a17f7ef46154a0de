"""Terminal-Bench 1 parsers on outputs shaped like real TB1 runs (pytest -rA, SWE-bench's graded
block, LongCLI's output files)."""

from __future__ import annotations

import json

import pytest

from rsr.verify.tb1_parsers import TB1ParserError, parse_tb1, pytest_results

PYTEST_ALL_PASS = """\
+ uv run pytest /tests/test_outputs.py -rA
============================= test session starts ==============================
platform linux -- Python 3.13.1, pytest-8.3.4, pluggy-1.5.0
rootdir: /tests
collected 3 items

../tests/test_outputs.py ...                                             [100%]

==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED ../tests/test_outputs.py::test_file_exists
PASSED ../tests/test_outputs.py::test_content[hello]
PASSED ../tests/test_outputs.py::test_permissions
============================== 3 passed in 0.04s ===============================
"""

PYTEST_MIXED = """\
collected 5 items

tests/test_outputs.py .F.sx                                              [100%]

=================================== FAILURES ===================================
_______________________________ test_checksum ________________________________

    def test_checksum():
>       assert digest("/app/out.bin") == EXPECTED
E       AssertionError: assert 'a1' == 'b2'

tests/test_outputs.py:14: AssertionError
=========================== short test summary info ============================
PASSED tests/test_outputs.py::test_exists
PASSED tests/test_outputs.py::test_size
SKIPPED [1] tests/test_outputs.py:20: needs gpu
XFAIL tests/test_outputs.py::test_legacy - known bug
FAILED tests/test_outputs.py::test_checksum - AssertionError: assert 'a1' - 'b2'
=================== 1 failed, 2 passed, 1 skipped, 1 xfailed in 0.31s ===================
"""

SWEBENCH_RESOLVED = """\
+ git apply -v /tmp/test.patch
Checking patch tests/test_ext.py...
Applied patch tests/test_ext.py cleanly.
============================= test session starts ==============================
collected 12 items
tests/test_ext.py ............                                           [100%]
============================== 12 passed in 1.92s ==============================
SWEBench results starts here
PASSED
SWEBench results ends here
"""

SWEBENCH_FAILED = SWEBENCH_RESOLVED.replace("\nPASSED\n", "\nFAILED\n")

# The TB1 SWE-bench adapter's parser script exits 0 whatever the verdict: the exit status of
# run-tests.sh says nothing, only the block does.
SWEBENCH_NO_BLOCK = "error: patch failed: astropy/io/fits/card.py:1\n"


def test_parse_tb1_pytest_passes_when_every_summary_line_passes() -> None:
    result = parse_tb1("pytest", PYTEST_ALL_PASS)
    assert (result.reward, result.resolved, result.error) == (1.0, True, None)
    assert [t.name for t in result.tests] == ["test_file_exists", "test_content[hello]", "test_permissions"]


def test_parse_tb1_pytest_fails_on_one_failed_test_and_counts_skips_and_xfails_as_passed() -> None:
    result = parse_tb1("pytest", PYTEST_MIXED)
    assert result.reward == 0.0 and not result.resolved
    by_name = {t.name: t for t in result.tests}
    assert by_name["test_checksum"].status == "failed" and not by_name["test_checksum"].passed
    assert by_name["test_legacy"].status == "xfail" and by_name["test_legacy"].passed
    assert by_name["test_exists"].passed and "test_checksum" in result.explanation


def test_parse_tb1_pytest_without_summary_is_an_error_not_a_pass() -> None:
    result = parse_tb1("pytest", "bash: pytest: command not found\n")
    assert result.reward == 0.0 and result.error and "short test summary info" in result.error


def test_parse_tb1_pytest_with_an_empty_summary_is_not_resolved() -> None:
    result = parse_tb1("pytest", "=== short test summary info ===\n=== no tests ran in 0.01s ===\n")
    assert result.reward == 0.0 and not result.resolved and "no test results" in result.explanation


def test_parse_tb1_pytest_reads_through_ansi_colours_and_carriage_returns() -> None:
    coloured = PYTEST_ALL_PASS.replace("PASSED", "\x1b[32mPASSED\x1b[0m").replace("\n", "\r\n")
    assert parse_tb1("pytest", coloured).reward == 1.0


def test_parse_tb1_swebench_reads_the_graded_block_not_the_exit_status() -> None:
    assert parse_tb1("swebench", SWEBENCH_RESOLVED).reward == 1.0
    failed = parse_tb1("swebench", SWEBENCH_FAILED)
    assert failed.reward == 0.0 and failed.tests[0].status == "failed"
    missing = parse_tb1("swebench", SWEBENCH_NO_BLOCK)
    assert missing.reward == 0.0 and "SWEBench results starts here" in (missing.error or "")


def test_parse_tb1_mlebench_needs_all_tests_passed() -> None:
    ok = "MLEBench results starts here\nALL TESTS PASSED\nMLEBench results ends here\n"
    assert parse_tb1("mlebench", ok).reward == 1.0
    assert parse_tb1("mlebench", ok.replace("ALL TESTS PASSED", "2/3 TESTS PASSED")).reward == 0.0


def test_parse_tb1_long_cli_scores_both_sets_from_their_output_files() -> None:
    f2p = PYTEST_ALL_PASS
    p2p = PYTEST_MIXED
    result = parse_tb1("long_cli", "", files={"f2p_output.txt": f2p, "p2p_output.txt": p2p},
                       f2p_mode="pytest", p2p_mode="pytest")
    assert result.reward == 0.0 and result.metrics["f2p_is_pass"] == 1.0 and result.metrics["p2p_is_pass"] == 0.0
    assert result.metrics["p2p_step_score"] == 0.8 and {t.group for t in result.tests} == {"f2p", "p2p"}
    only_f2p = parse_tb1("long_cli", "", files={"f2p_output.txt": f2p, "p2p_output.txt": p2p}, f2p_mode="pytest")
    assert only_f2p.reward == 1.0 and only_f2p.resolved


def test_parse_tb1_long_cli_reads_text_scores_and_task_metrics() -> None:
    files = {"f2p_score.json": json.dumps({"is_pass": 1, "step_score": 1.0}),
             "p2p_score.json": json.dumps({"is_pass": 0, "step_score": 0.4567})}
    result = parse_tb1("long_cli", "", files=files, f2p_mode="text", p2p_mode="text")
    assert result.reward == 0.0 and result.metrics["p2p_step_score"] == 0.457
    metrics = {"f2p_is_pass": 1, "p2p_is_pass": 1, "f2p_step_score": 1.0}
    own = parse_tb1("long_cli", "", files={"metrics.json": json.dumps(metrics)}, f2p_mode="text", p2p_mode="pytest")
    assert own.reward == 1.0 and "metrics.json" in own.explanation
    unconfigured = parse_tb1("long_cli", PYTEST_ALL_PASS)
    assert unconfigured.reward == 0.0 and "parser_results_f2p" in (unconfigured.error or "")


def test_parse_tb1_refuses_a_parser_tb1_corpora_do_not_use() -> None:
    with pytest.raises(TB1ParserError, match="unknown Terminal-Bench 1 parser 'junit'"):
        parse_tb1("junit", "")


def test_pytest_results_is_none_without_a_summary() -> None:
    assert pytest_results("collected 0 items\n") is None


def test_tb1_run_tests_command_runs_the_script_with_tb1s_test_dir(tmp_path) -> None:
    import subprocess

    from taskfactory import tb1_task

    from rsr.tasks.load import load_task

    task = load_task(tb1_task(tmp_path, "cmd", compose=None, run_tests="echo dir=$TEST_DIR; echo oops >&2\n"))
    command = task.tb1_run_tests_command().replace("/tests/run-tests.sh", str(task.paths.tb1_run_tests))
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True).stdout
    assert out.split() == ["dir=/tests", "oops"]
