"""`rsr tasks shell TASK`: the task's sandbox as its agent sees it, a shell attached, the tests on
request, and nothing left behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsr.sandbox import engine

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.docker


def test_tasks_shell_does_attach_after_the_oracle_and_run_the_tests_on_exit(tmp_path: Path) -> None:
    typed = "id -un; cat /app/hello.txt; ls /tests /solution 2>&1 | head -2; echo typed-ok\nexit\n"
    proc = subprocess.run([str(BIN / "rsr"), "tasks", "shell", "hello-world", "--oracle", "--tests",
                           "--log-dir", str(tmp_path)], input=typed, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Hello, world!" in out and "typed-ok" in out          # the shell ran what was typed
    assert "cannot access '/tests'" in out            # hidden while a person is at it,
    assert "cannot access '/solution'" in out         # as while an agent is
    assert re.search(r"verifier: \{'passed': 1(\.0)?, 'reward': 1(\.0)?", out), out[-2000:]
    container = re.search(r"sandbox (\S+): exit the shell", out)
    assert container, out[-2000:]
    assert not engine.api().containers(all=True, filters={"id": container.group(1)})  # removed


def test_tasks_shell_rejects_an_unknown_task_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "rsr"), "tasks", "shell", "no-such-task"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2
    assert "no-such-task: neither a task directory (with task.toml) nor a core task" in " ".join(proc.stderr.split())
