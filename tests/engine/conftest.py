"""The real engine: one vLLM server for the whole test session, started by `rsr serve` as a
user starts it (a subprocess, stopped with Ctrl-C at the end), serving a tiny Qwen3 model
built here in the shape the CPU build supports. Start-up is about a minute on two cores.

Without the engine environment these tests skip naming the setup command; CI sets
RSR_REQUIRE_ENGINE=1 (scripts/test.sh), where a missing environment fails instead (the
`engine_env` fixture of tests/conftest.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_helpers import MAX_MODEL_LEN, SERVED, Served, build_tiny

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")



@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    return build_tiny(tmp_path_factory.mktemp("engine") / "tiny")


@pytest.fixture(scope="session")
def served(engine_env: object, tiny_checkpoint: Path) -> Iterator[Served]:
    from rsr.engine.server import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "rsr.cli.main", "serve", str(tiny_checkpoint), "--name", SERVED,
           "--port", str(port), "--max-model-len", str(MAX_MODEL_LEN), "--weight-updates",
           # Half the start-up (benchmarks/engine_startup.py); the tests decode little.
           "--enforce-eager"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    lines: list[str] = []
    url = None
    for line in proc.stdout:
        lines.append(line)
        found = re.match(r"serving \S+ at (\S+) ", line)
        if found:
            url = found.group(1)
            break
    if url is None:
        proc.wait(timeout=30)
        pytest.fail("rsr serve did not come up:\n" + "".join(lines[-30:]))
    # The remaining announcement lines (model names) follow at once.
    for _ in range(3):
        lines.append(proc.stdout.readline())
    startup = time.monotonic() - started
    yield Served(url, url.removesuffix("/v1"), SERVED, tiny_checkpoint, startup, proc, lines)
    # Ctrl-C, as a user stops it: the server and its engine process go away, exit 0.
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, rest
    assert f"stopped {SERVED} on port {port}" in rest
    from rsr.engine.server import port_in_use

    assert not port_in_use("127.0.0.1", port), "the engine outlived rsr serve"
