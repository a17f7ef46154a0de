"""Set-up progress (rsr/sandbox/setup-progress.sh), run by real bash: one line per step with its
duration, the commands' output only in the log, and on failure the failing step named with the
tail of the log."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from docker_needs import unless

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "rsr/sandbox/setup-progress.sh"


def _bash(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RSR_SETUP_")}
    full_env.update(env)
    return subprocess.run(["bash", "-c", f"set -euo pipefail\nsource {LIB}\n{script}"], cwd=tmp_path,
                          env=full_env, capture_output=True, text=True, timeout=60)


def test_progress_step_prints_one_line_per_step_and_logs_the_output(tmp_path: Path) -> None:
    log = tmp_path / "logs/setup.log"
    done = _bash(f"""
progress_begin demo {log}
progress_step "installing widgets" bash -c 'echo apt-noise-out; echo apt-noise-err >&2'
progress_note "gadgets already present"
progress_end "ready"
""", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("[demo] ") and lines[0].endswith(f"command output goes to {log}")
    assert re.fullmatch(r"\[demo\] installing widgets \.\.\. \d+\.\d s", lines[1])
    assert lines[2] == "[demo] gadgets already present"
    assert re.fullmatch(rf"\[demo\] ready in \d+\.\d s; full log: {re.escape(str(log))}", lines[3])
    text = log.read_text()
    assert "apt-noise-out" in text and "apt-noise-err" in text and "installing widgets" in text
    assert "apt-noise" not in done.stderr + done.stdout


def test_progress_step_rejects_a_failing_step_naming_it_with_the_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    done = _bash(f"""
build_thing() {{
  for i in $(seq 1 40); do echo "build line $i"; done
  false            # a function stops here, as it would outside a step
  echo "after the failure"
}}
progress_begin demo {log}
progress_step "building the thing" build_thing
echo "the script went on" >&2
""", tmp_path)
    assert done.returncode == 1
    err = done.stderr
    assert re.search(r"\[demo\] building the thing \.\.\. FAILED after \d+\.\d s \(exit 1\)", err)
    assert f'step "building the thing" failed; full log: {log}' in err
    assert "build line 40" in err and "build line 11" in err  # the last 30 lines of the log
    assert "build line 10\n" not in err
    assert "after the failure" not in log.read_text()
    assert "the script went on" not in err


def test_progress_nested_script_shares_the_log_and_prints_no_total(tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    inner = tmp_path / "inner.sh"
    inner.write_text(f"set -euo pipefail\nsource {LIB}\nprogress_begin inner {tmp_path}/other.log\n"
                     "progress_step 'inner step' echo inner-output\nprogress_end 'inner done'\n")
    done = _bash(f"""
progress_begin outer {log}
progress_step "outer step" echo outer-output
bash {inner}
progress_end "all done"
""", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert [line.split(" ...")[0] for line in lines[1:3]] == ["[outer] outer step", "[inner] inner step"]
    assert len(lines) == 4 and lines[-1].startswith("[outer] all done in ")
    assert "inner done" not in done.stderr
    assert not (tmp_path / "other.log").exists()
    assert "outer-output" in log.read_text() and "inner-output" in log.read_text()


@pytest.mark.docker
def test_setup_docker_script_skips_a_running_engine_quietly(tmp_path: Path) -> None:
    unless(os.geteuid() == 0, "root (setup-docker.sh installs packages)")
    # The engine is up (the docker marker makes sure): the real script must only report it.
    assert shutil.which("docker")
    log = tmp_path / "setup.log"
    done = subprocess.run(["bash", str(REPO / "rsr/sandbox/setup-docker.sh")], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "RSR_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    # An engine without the registry mirror is restarted when idle, else left running with a note.
    assert any(re.fullmatch(r"\[setup-docker\] docker engine \S+ (is running( without .*)?|restarted with the "
                            r"registry mirror)", line) for line in lines)
    assert any(line.startswith("[setup-docker] docker compose 2.") for line in lines)
    assert "[setup-docker] debian:bookworm-slim present" in lines
    assert lines[-1].startswith("[setup-docker] docker ready in ") and lines[-1].endswith(str(log))
    assert done.stdout == ""
