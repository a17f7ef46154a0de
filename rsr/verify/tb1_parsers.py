"""Terminal-Bench 1 scoring: the parsers that read a task's test output.

TB1 did not score a task by the exit status of `run-tests.sh`: it captured what the tests printed
and handed it to the parser named by the task's `parser_name` (default `pytest`). A task passed
when every result the parser found passed. These are pure functions over that output (and, for
LongCLI, over the files its tests leave in `/app/test_output/`), written from TB1's documented
formats:

- `pytest`: the `short test summary info` section of `pytest -rA`; every line `STATUS path::test
  [- reason]` is one result. PASSED, XFAIL and SKIPPED count as passed; FAILED, XPASS and ERROR as
  failed. No summary section is a parse error (the run failed), as in TB1.
- `swebench`: the block between `SWEBench results starts here` and `SWEBench results ends here`
  is `PASSED` for a resolved instance, anything else for a failed one; missing markers are a parse
  error (SWE-bench's harness could not grade).
- `mlebench`: the same shape with `MLEBench results ...` markers and `ALL TESTS PASSED`.
- `long_cli` (LongCLI-Bench): a fail-to-pass and a pass-to-pass set, each scored in the mode the
  task names (`parser_results_f2p` / `parser_results_p2p`: `pytest` output files or `text` score
  files), or by the task's own `metrics.json`; resolved when every configured set passes.

One deliberate difference from TB1: a summary section with no result lines is a failure here
(TB1's `all([])` counted it as resolved).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from rsr.tasks.models import TB1_PARSERS

TestStatus = Literal["passed", "failed", "skipped", "xfail", "xpass", "error"]
_PASSING: frozenset[str] = frozenset({"passed", "skipped", "xfail"})

LONG_CLI_OUTPUT_DIR = "/app/test_output"
LONG_CLI_FILES = ("metrics.json", "f2p_output.txt", "p2p_output.txt", "f2p_score.json", "p2p_score.json")
"""Files a LongCLI task's tests write below LONG_CLI_OUTPUT_DIR; pass their contents as `files`."""


class TB1ParserError(ValueError):
    """The parser name is not one TB1 corpora use (a task-format problem, caught at load time)."""


class TB1TestResult(BaseModel):
    name: str
    status: TestStatus
    passed: bool
    group: str | None = None
    """For LongCLI: 'f2p' or 'p2p'."""


class TB1Parse(BaseModel):
    """What a TB1 parser made of one test run."""

    parser: str
    reward: float
    """1.0 when the task is resolved, else 0.0 (TB1 scores are binary)."""
    resolved: bool
    tests: list[TB1TestResult] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)
    """Extra numeric results (LongCLI's step scores: the fraction of a set's tests passed)."""
    error: str | None = None
    """Why the output could not be graded (then reward is 0)."""
    explanation: str = ""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_SUMMARY = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)
_STATUSES = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped", "XFAIL": "xfail", "XPASS": "xpass",
             "ERROR": "error"}


def _clean(output: str) -> str:
    return _ANSI.sub("", output).replace("\r\n", "\n").replace("\r", "\n")


_FINAL = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|xfailed|xpassed|deselected|no tests ran)\b.* =+$")


def pytest_results(output: str) -> list[TB1TestResult] | None:
    """Results listed in the short test summary, or None when there is no summary section.

    The section ends at pytest's closing line (`=== 1 failed, 2 passed in 0.1s ===`): what follows
    it is not pytest's. A test listed twice counts by its worst status (a line written later by
    something else cannot turn a failure into a pass)."""
    parts = _SUMMARY.split(_clean(output), maxsplit=1)
    if len(parts) < 2:
        return None
    results: dict[str, TB1TestResult] = {}
    for raw in parts[1].splitlines():
        line = raw.strip()
        if _FINAL.match(line):
            break
        word, _, rest = line.partition(" ")
        status = _STATUSES.get(word.strip(":"))
        if status is None or not rest.strip():
            continue
        target = rest.strip()
        if " - " in target:
            # `FAILED tests/test_x.py::test_y - AssertionError: ...`: the reason is not the name.
            target = target.split(" - ", 1)[0].strip()
        name = target.split("::", 1)[-1].strip()
        if name and (name not in results or results[name].passed):
            results[name] = TB1TestResult(name=name, status=status, passed=status in _PASSING)  # type: ignore[arg-type]
    return list(results.values())


def _verdict(parser: str, tests: list[TB1TestResult], what: str) -> TB1Parse:
    if not tests:
        return TB1Parse(parser=parser, reward=0.0, resolved=False, tests=[],
                        explanation=f"{what}: no test results (TB1 would have counted this as resolved)")
    failed = [t.name for t in tests if not t.passed]
    ok = not failed
    head = f"{len(tests) - len(failed)}/{len(tests)} tests passed"
    return TB1Parse(parser=parser, reward=1.0 if ok else 0.0, resolved=ok, tests=tests,
                    explanation=head + ("" if ok else f"; failed: {', '.join(failed[:20])}"))


def _parse_pytest(output: str) -> TB1Parse:
    tests = pytest_results(output)
    if tests is None:
        return TB1Parse(parser="pytest", reward=0.0, resolved=False,
                        error="no 'short test summary info' section in the test output (did pytest run with -rA?)")
    return _verdict("pytest", tests, "pytest summary")


def _between_markers(output: str, name: str) -> str | None:
    start, end = f"{name} results starts here", f"{name} results ends here"
    text = _clean(output)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[-1].rsplit(end, 1)[0].strip()


def _parse_marked(parser: str, output: str, marker: str, success: str) -> TB1Parse:
    block = _between_markers(output, marker)
    if block is None:
        return TB1Parse(parser=parser, reward=0.0, resolved=False,
                        error=f"no '{marker} results starts here' ... 'ends here' block in the test output")
    ok = block == success
    test = TB1TestResult(name="tests", status="passed" if ok else "failed", passed=ok)
    return TB1Parse(parser=parser, reward=1.0 if ok else 0.0, resolved=ok, tests=[test],
                    explanation=f"{marker} block: {block[:200]!r}")


def _step_score(tests: list[TB1TestResult]) -> float:
    return round(sum(t.passed for t in tests) / len(tests), 3) if tests else 0.0


def _long_cli_set(group: str, mode: str | None, output: str, files: Mapping[str, str],
                  metrics: dict[str, float], tests: list[TB1TestResult]) -> bool | None:
    """Score one LongCLI set; None when the task does not configure it."""
    if mode == "pytest":
        content = files.get(f"{group}_output.txt") or output
        found = pytest_results(content) or []
        tests.extend(t.model_copy(update={"group": group}) for t in found)
        ok = bool(found) and all(t.passed for t in found)
        metrics[f"{group}_step_score"] = _step_score(found)
        metrics[f"{group}_is_pass"] = 1.0 if ok else 0.0
        return ok
    if mode == "text":
        data = _json_object(files.get(f"{group}_score.json"))
        ok = bool(int(_number(data.get("is_pass"), 0)))
        metrics[f"{group}_is_pass"] = 1.0 if ok else 0.0
        if "step_score" in data:
            metrics[f"{group}_step_score"] = round(_number(data["step_score"], 0.0), 3)
        return ok
    return None


def _json_object(text: str | None) -> dict:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _number(value: object, default: float) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def _parse_long_cli(output: str, files: Mapping[str, str], f2p_mode: str | None, p2p_mode: str | None) -> TB1Parse:
    f2p_mode = (f2p_mode or "").lower() or None
    p2p_mode = (p2p_mode or "").lower() or None
    required = [g for g, m in (("f2p", f2p_mode), ("p2p", p2p_mode)) if m in ("pytest", "text")]
    metrics: dict[str, float] = {}
    tests: list[TB1TestResult] = []
    task_metrics = _json_object(files.get("metrics.json"))
    if task_metrics:
        # The task computed its own metrics; LongCLI's harness prefers them.
        for key, value in task_metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                metrics[key] = float(value)
        passes = {g: int(_number(task_metrics.get(f"{g}_is_pass"), 0)) == 1 for g in required}
    else:
        passes = {}
        for group, mode in (("f2p", f2p_mode), ("p2p", p2p_mode)):
            ok = _long_cli_set(group, mode, output, files, metrics, tests)
            if ok is not None:
                passes[group] = ok
    if not required:
        return TB1Parse(parser="long_cli", reward=0.0, resolved=False, tests=tests, metrics=metrics,
                        error="neither parser_results_f2p nor parser_results_p2p is configured (LongCLI never "
                              "resolves such a task)")
    ok = all(passes.get(g, False) for g in required)
    detail = ", ".join(f"{g} {'passed' if passes.get(g) else 'failed'}" for g in required)
    return TB1Parse(parser="long_cli", reward=1.0 if ok else 0.0, resolved=ok, tests=tests, metrics=metrics,
                    explanation=detail + (" (task metrics.json)" if task_metrics else ""))


def parse_tb1(parser_name: str, output: str, *, files: Mapping[str, str] | None = None,
              f2p_mode: str | None = None, p2p_mode: str | None = None) -> TB1Parse:
    """Score one TB1 test run.

    `output` is what `run-tests.sh` printed (stdout and stderr together, as TB1 read them from the
    terminal). `files` maps LONG_CLI_FILES names to their contents (LongCLI only); `f2p_mode` and
    `p2p_mode` are the task's `parser_results_f2p` / `parser_results_p2p`.
    Raises TB1ParserError for a parser TB1 corpora do not use.
    """
    name = (parser_name or "pytest").strip().lower()
    if name not in TB1_PARSERS:
        raise TB1ParserError(f"unknown Terminal-Bench 1 parser {parser_name!r}; rsr scores with: "
                             f"{', '.join(TB1_PARSERS)}")
    if name == "pytest":
        return _parse_pytest(output)
    if name == "swebench":
        return _parse_marked("swebench", output, "SWEBench", "PASSED")
    if name == "mlebench":
        return _parse_marked("mlebench", output, "MLEBench", "ALL TESTS PASSED")
    return _parse_long_cli(output, files or {}, f2p_mode, p2p_mode)
