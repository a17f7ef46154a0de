"""Image builds: one line per step with the elapsed time, and a failure shows the failing step and
only its last lines (not the whole log)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rsr.sandbox.docker_api import ImageBuildError, ensure_image
from rsr.sandbox.spec import docker_config
from rsr.tasks.load import load_task

pytestmark = pytest.mark.docker

DOCKERFILE = """FROM debian:bookworm-slim
RUN echo first-step-output
RUN for i in $(seq 1 40); do echo "noisy-line-$i"; done; echo 'the real cause' >&2; exit 3
"""


def _task(tmp_path: Path) -> Path:
    d = tmp_path / "broken-build"
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (d / "instruction.md").write_text("Nothing.\n")
    (d / "task.toml").write_text('version = "1.0"\n[environment]\nallow_internet = false\n')
    (d / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return d


def test_image_build_does_report_steps_and_only_the_failing_steps_tail(tmp_path: Path, capsys) -> None:
    cfg = docker_config(load_task(_task(tmp_path)))
    with pytest.raises(ImageBuildError) as raised:
        ensure_image(cfg)
    err = capsys.readouterr().err
    steps = [ln for ln in err.splitlines() if ln.startswith("[build broken-build] Step ")]
    # rsr's build adds a LABEL step after the task's three; the build stops at the third.
    assert [s.split(" : ")[0] for s in steps] == ["[build broken-build] Step 1/4", "[build broken-build] Step 2/4",
                                                  "[build broken-build] Step 3/4"]
    assert all(s.endswith(" s)") for s in steps)
    message = str(raised.value)
    assert "failed at Step 3/4 : RUN for i in" in message
    assert "noisy-line-40" in message and "the real cause" in message
    assert "noisy-line-20" not in message and "first-step-output" not in message  # the tail only
    assert re.search(r"\(last 15 of \d+ lines\)", message) and "\\n" not in message
