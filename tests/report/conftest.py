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
    from rsr.tasks.inspect_tasks import core

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
