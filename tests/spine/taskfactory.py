"""Writes small synthetic task directories for tests (Harbor and TB1 layouts)."""

from __future__ import annotations

import textwrap
from pathlib import Path

BASE_DOCKERFILE = "FROM debian:bookworm-slim\nWORKDIR /app\n"


def write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    if mode is not None:
        path.chmod(mode)
    return path


def harbor_task(root: Path, name: str, *, toml: str | None = None, test_sh: str | None = None,
                solve_sh: str = "echo done > /app/out.txt\n", instruction: str = "Write done to /app/out.txt.",
                dockerfile: str = BASE_DOCKERFILE, extra: dict[str, str] | None = None) -> Path:
    d = root / name
    write(d / "instruction.md", instruction + "\n")
    write(d / "task.toml", toml if toml is not None else f"""
        schema_version = "1.1"
        [task]
        name = "test/{name}"
        [metadata]
        category = "testing"
        difficulty = "easy"
        [verifier]
        timeout_sec = 30
        [agent]
        timeout_sec = 60
        [environment]
        workdir = "/app"
        """)
    write(d / "environment" / "Dockerfile", dockerfile)
    write(d / "tests" / "test.sh", test_sh if test_sh is not None else """
        mkdir -p /logs/verifier
        if grep -qx done /app/out.txt 2>/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
        """, 0o755)
    write(d / "solution" / "solve.sh", solve_sh, 0o755)
    for rel, text in (extra or {}).items():
        write(d / rel, text)
    return d


TB1_COMPOSE = """
services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
      - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
"""


def tb1_task(root: Path, name: str, *, yaml_text: str = "instruction: Write done to /app/out.txt.\n",
             run_tests: str = "grep -qx done /app/out.txt\n", solution: str = "echo done > /app/out.txt\n",
             compose: str | None = TB1_COMPOSE, dockerfile: str = BASE_DOCKERFILE) -> Path:
    """A Terminal-Bench 1 task: task.yaml, Dockerfile, docker-compose.yaml, run-tests.sh at the root."""
    d = root / name
    write(d / "task.yaml", yaml_text)
    write(d / "Dockerfile", dockerfile)
    if compose is not None:
        write(d / "docker-compose.yaml", compose)
    write(d / "run-tests.sh", run_tests, 0o755)
    write(d / "solution.sh", solution, 0o755)
    return d


# A sidecar any local image can run: perl-base ships with Debian's minimal image.
PONG_SERVER = ('perl -MIO::Socket::INET -e \'$$s=IO::Socket::INET->new(LocalPort=>8080,Listen=>5,ReuseAddr=>1)'
               ' or die; while($$c=$$s->accept){print $$c qq(pong\\n); close $$c}\'')
