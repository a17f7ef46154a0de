"""`rsr doctor` when the client is pointed at another engine (DOCKER_HOST / DOCKER_CONTEXT)."""

from __future__ import annotations

import shutil

import pytest
from docker_needs import unless

from rsr.cli.main import main
from rsr.sandbox.docker_setup import run_checks


def test_doctor_does_not_suggest_fix_when_docker_host_points_elsewhere(monkeypatch, capsys) -> None:
    unless(shutil.which("docker") is not None, "the docker client")  # CI fails instead of skipping
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # nothing listens on the discard port
    checks = {c.name: c for c in run_checks()}
    engine = checks["docker engine"]
    assert not engine.ok
    assert "DOCKER_HOST=tcp://127.0.0.1:9" in engine.fix and "--fix` sets up only" in engine.fix
    assert main(["doctor"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "run `rsr doctor --fix`" not in out and "DOCKER_HOST=tcp://127.0.0.1:9 points at" in out


def test_doctor_fix_rejects_a_remote_docker_host_without_installing(monkeypatch, capsys) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://builder@example.org")
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("the setup script ran"))
    assert main(["doctor", "--fix"]) == 2
    assert "DOCKER_HOST=ssh://builder@example.org is set" in " ".join(capsys.readouterr().err.split())
