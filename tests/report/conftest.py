"""Real `.eval` logs for the report and leaderboard tests, produced once per test session.

Three labelled runs of the same two core tasks x 3 epochs, in real Docker sandboxes:
- `oracle`: through `rsr eval run core --agent rsr/oracle` (Inspect's eval_set), all pass;
- `null`: the do-nothing agent, all fail;
- `scripted`: Terminus 2 driven by a scripted model that solves hello-world and whose
  "API" fails on semver-sort, so those samples error (and must count as failures).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage

TASKS = "hello-world,semver-sort"
EPOCHS = 3
REPO = Path(__file__).resolve().parents[2]


def _scripted_model(messages: list[ChatMessage], *_: object) -> ModelOutput:
    import json

    prompt = "\n".join(m.text for m in messages)
    if "semver" in prompt.lower() or "Semantic Versioning" in prompt:
        raise RuntimeError("scripted model: simulated provider outage")
    content = json.dumps({
        "analysis": "The file must contain the greeting.",
        "plan": "Write it and finish.",
        "commands": [{"keystrokes": "echo 'Hello, world!' > /app/hello.txt\n",
                      "duration": 0.5}],
        "task_complete": True,
    })
    out = ModelOutput.from_content("mockllm/model", content)
    out.usage = ModelUsage(input_tokens=300, output_tokens=40, total_tokens=340)
    return out


@pytest.fixture(scope="session")
def core_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """{label: log folder}; each folder holds one finished `rsr/core` log."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from rsr.cli.main import main
    from rsr.harness.null import null
    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import core

    root = tmp_path_factory.mktemp("runs")
    old = os.environ.get("INSPECT_DISPLAY")
    os.environ["INSPECT_DISPLAY"] = "none"
    try:
        rc = main(["eval", "run", str(REPO / "evals" / "core.yaml"), "--agent", "rsr/oracle",
                   "--model", "mockllm/model", "--log-dir", str(root / "oracle"),
                   "-T", f"tasks={TASKS}"])
        assert rc == 0, "rsr eval run (oracle) failed"
        inspect_eval(core(tasks=TASKS), solver=null(), model="mockllm/model", epochs=EPOCHS,
                     log_dir=str(root / "null"), display="none", max_samples=6)
        model = get_model("mockllm/model", custom_outputs=_scripted_model)
        inspect_eval(core(tasks=TASKS), solver=terminus2(max_episodes=4), model=model,
                     epochs=EPOCHS, log_dir=str(root / "scripted"), display="none",
                     fail_on_error=False, max_samples=6)
    finally:
        if old is None:
            os.environ.pop("INSPECT_DISPLAY", None)
        else:
            os.environ["INSPECT_DISPLAY"] = old
    yield {name: root / name for name in ("oracle", "null", "scripted")}


MILESTONE_TEST = """#!/bin/bash
# Two milestones; reward is 1 only when both hold.
mkdir -p /logs/verifier
a=0; b=0
[ "$(cat /app/first.txt 2>/dev/null)" = one ] && a=1
[ "$(cat /app/second.txt 2>/dev/null)" = two ] && b=1
r=$(( a * b ))
echo "{\\"reward\\": $r, \\"first\\": $a, \\"second\\": $b}" > /logs/verifier/reward.json
"""


def milestone_suite(root: Path) -> Path:
    """A one-task long-horizon-style suite: milestones `first` and `second`; its reference
    solution reaches only the first, so every run earns process reward 0.5 and fails."""
    task = root / "two-milestones"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    shutil.copy(REPO / "tasks" / "core" / "hello-world" / "environment" / "Dockerfile",
                task / "environment" / "Dockerfile")
    (task / "instruction.md").write_text("Write `one` to /app/first.txt and `two` to "
                                         "/app/second.txt.\n")
    toml = (REPO / "tasks" / "core" / "hello-world" / "task.toml").read_text()
    toml = toml.replace('name = "rsr-core/hello-world"', 'name = "rsr-test/two-milestones"')
    toml = toml.replace("[metadata]\n", '[metadata]\nmilestones = ["first", "second"]\n')
    (task / "task.toml").write_text(toml)
    (task / "tests" / "test.sh").write_text(MILESTONE_TEST)
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho one > /app/first.txt\n")
    return root


@pytest.fixture(scope="session")
def lhtb_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`rsr/lhtb` run on a one-task suite, 3 epochs, partial solution. The suite is fetched as a
    user fetches LHTB (Harbor's downloader), from a loopback stand-in for the hub, so that its
    copy is pinned (`-T path=` to a hand-made copy would need `-T unpinned=true`)."""
    from harbor_ref import harbor_home
    from inspect_ai import eval as inspect_eval

    from rsr.harness.oracle import oracle
    from rsr.suites.inspect_tasks import lhtb
    from rsr.suites.standin import fetch_from_standin

    root = tmp_path_factory.mktemp("lhtb")
    made = milestone_suite(root / "made")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RSR_HARBOR", str(harbor_home() / "bin" / "harbor"))
        suite = fetch_from_standin("lhtb", sorted(p for p in made.iterdir() if p.is_dir()), root / "suite",
                                   root / "standin")
    logs = inspect_eval(lhtb(path=str(suite)), solver=oracle(), model="mockllm/model",
                        epochs=EPOCHS, log_dir=str(root / "partial"), display="none")
    assert logs[0].status == "success", logs[0].error
    return {"suite": suite, "logs": root / "partial"}


@pytest.fixture(scope="session")
def log_of(core_runs: dict[str, Path]):  # noqa: ANN201 - returns a small lookup function
    def get(label: str) -> Path:
        files = sorted(core_runs[label].glob("*.eval"))
        assert len(files) == 1, files
        return files[0]

    return get


@pytest.fixture
def board(tmp_path: Path) -> Path:
    """A board pinning the two core tasks the session's runs used."""
    d = tmp_path / "board"
    d.mkdir()
    (d / "board.yaml").write_text(
        "title: test board\n"
        "reference_agents: true\n"  # the session's oracle runs are valid test entries
        "suites:\n"
        f"  core:\n    path: {REPO / 'tasks' / 'core'}\n"
        "    tasks: [hello-world, semver-sort]\n"
    )
    return d


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless browser; CI installs it with scripts/setup-browser.sh and sets
    RSR_REQUIRE_BROWSER=1 so that a missing browser fails instead of skipping."""
    for name in (os.environ.get("RSR_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    if os.environ.get("RSR_REQUIRE_BROWSER") == "1":
        pytest.fail("RSR_REQUIRE_BROWSER=1 but no chromium found; run scripts/setup-browser.sh")
    pytest.skip("no chromium (run scripts/setup-browser.sh)")
