"""TmuxSession against a real container of a core task image."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from harness_scripted import CORE

from rsr.harness.container import DockerContainerSandbox
from rsr.harness.tmux import (
    ONE_EXEC_MAX_CHARS,
    SEND_CHUNK_CHARS,
    TmuxSession,
)
from rsr.harness.tmux_install import TmuxUnavailableError, ensure_tmux
from rsr.sandbox.compose import image_tag
from rsr.tasks.load import load_task

pytestmark = pytest.mark.docker


def _container(image: str) -> str:
    return subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "none", image, "sleep", "600"],
        check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def container():
    task = load_task(CORE / "hello-world")
    tag = image_tag(task)
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode:
        subprocess.run(["docker", "build", "--network", "host", "-t", tag,
                        str(task.paths.environment_dir)], check=True, capture_output=True)
    cid = _container(tag)
    yield cid
    subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


@pytest.fixture
async def session(container):
    tmux = TmuxSession(DockerContainerSandbox(container, "/app"), name=f"t{uuid.uuid4().hex[:6]}",
                       cwd="/app")
    await tmux.start()
    await tmux.read_new()
    yield tmux
    await tmux.sbx.exec(["tmux", "kill-session", "-t", tmux.name])


async def test_tmux_drops_a_trailing_semicolon_as_the_reference_and_types_it_when_asked(
        container, session):
    await session.send_keys("echo 'a;b' \"$((1+2))\";")   # tmux reads the `;` as a separator
    await session.send_and_wait(" echo z\n", 2, adaptive=True)
    assert "\na;b 3 echo z\n" in await session.read_new()
    literal = TmuxSession(DockerContainerSandbox(container, "/app"),
                          name=f"l{uuid.uuid4().hex[:6]}", cwd="/app", literal_semicolons=True)
    await literal.start()
    try:
        await literal.read_new()
        await literal.send_keys("echo 'a;b' \"$((1+2))\";")
        await literal.send_and_wait(" echo z\n", 2, adaptive=True)
        assert "\na;b 3\nz\n" in await literal.read_new()
    finally:
        await literal.sbx.exec(["tmux", "kill-session", "-t", literal.name])


async def test_tmux_decides_which_strings_name_a_key(session):
    await session.send_keys("echo typed-as-text")
    await session.send_and_wait("enter", 2, adaptive=True)      # tmux's lookup ignores case
    await session.send_and_wait("Enter\n", 2, adaptive=True)    # a trailing newline: text
    await session.send_and_wait("echo 0x41", 0.2, adaptive=False)
    await session.send_and_wait("0x41", 0.2, adaptive=False)     # tmux's hex key: `A`
    await session.send_and_wait("^M", 2, adaptive=True)          # C-m: Enter
    out = await session.read_new()
    assert "\ntyped-as-text\n" in out and "Enter: command not found" in out
    assert "\n0x41A\n" in out


async def test_tmux_agent_shell_starts_as_the_reference_without_harness_environment(session):
    await session.send_and_wait("echo level=$SHLVL; env | grep -c RSR_CHANNEL\n", 3,
                                adaptive=True)
    out = await session.read_new()
    assert "\nlevel=1\n0\n" in out


async def test_tmux_read_new_returns_only_output_since_last_read(session):
    await session.send_keys("echo first-marker\n")
    await session.wait(5, adaptive=True)
    assert "first-marker" in await session.read_new()
    await session.send_keys("echo second-marker\n")
    await session.wait(5, adaptive=True)
    second = await session.read_new()
    assert "second-marker" in second and "first-marker" not in second


async def test_tmux_read_new_falls_back_to_screen_after_clear(session):
    await session.send_keys("echo before-clear\n")
    await session.wait(5, adaptive=True)
    await session.read_new()
    await session.send_keys("clear; echo after-clear\n")
    await session.wait(5, adaptive=True)
    out = await session.read_new()
    assert "after-clear" in out and "before-clear" not in out


async def test_tmux_adaptive_wait_returns_when_the_shell_is_idle(session):
    await session.send_keys("sleep 1\n")
    waited = await session.wait(10, adaptive=True)
    assert waited.idle and 0.9 < waited.waited < 4


async def test_tmux_adaptive_wait_never_exceeds_duration_while_busy(session):
    await session.send_keys("sleep 8\n")
    waited = await session.wait(1.0, adaptive=True)
    assert not waited.idle and waited.waited < 3
    await session.send_keys("C-c")                      # a tmux key name, not text
    after = await session.wait(5, adaptive=True)
    assert after.idle and after.waited < 3
    assert "^C" in await session.read_new()


async def test_tmux_long_input_arrives_intact(session):
    payload = "x" * (SEND_CHUNK_CHARS * 2 + 123)
    await session.send_keys(f"echo {payload} | wc -c\n")
    await session.wait(10, adaptive=True)
    assert f"{len(payload) + 1}" in await session.read_new()


async def test_tmux_read_new_returns_every_line_of_a_long_output(session):
    # The old 500+500-line pre-cut hid the middle of 1,000-2,000-line outputs.
    await session.send_keys("seq 1 1800\n")
    await session.wait(15, adaptive=True)
    lines = (await session.read_new()).splitlines()
    assert lines[1:1801] == [str(n) for n in range(1, 1801)]


async def _history_limit(tmux: TmuxSession) -> int:
    out = await tmux.sbx.exec(["tmux", "display-message", "-p", "-t", tmux.name,
                               "#{history_limit}"])
    return int(out.stdout.strip())


async def test_tmux_pane_keeps_tmux_default_history_in_parity_mode(container, session):
    # The reference sets history-limit after its pane exists: the pane keeps 2,000 lines.
    assert await _history_limit(session) == 2000
    fixed = TmuxSession(DockerContainerSandbox(container, "/app"),
                        name=f"f{uuid.uuid4().hex[:6]}", cwd="/app", history_before_start=True)
    await fixed.start()
    try:
        assert await _history_limit(fixed) == fixed.history_limit == 10_000_000
    finally:
        await fixed.sbx.exec(["tmux", "kill-session", "-t", fixed.name])


async def test_tmux_incremental_output_frames_and_finds_new_output_as_the_reference(container):
    tmux = TmuxSession(DockerContainerSandbox(container, "/app"),
                       name=f"i{uuid.uuid4().hex[:6]}", cwd="/app")
    await tmux.start()
    try:
        kind, first = await tmux.incremental_output()
        assert kind == "screen" and len(first.split("\n")) == tmux.height + 1  # blank rows kept
        await tmux.send_keys("echo inc-marker\n")
        await tmux.wait(5, adaptive=True)
        kind, new = await tmux.incremental_output()
        # New output starts on the line the previous capture ended with (the old prompt).
        assert kind == "new" and new.lstrip("\n").split("\n")[0].endswith("# echo inc-marker")
        kind, again = await tmux.incremental_output()
        assert kind == "new" and "inc-marker" not in again  # only the prompt line is new
    finally:
        await tmux.sbx.exec(["tmux", "kill-session", "-t", tmux.name])


async def test_tmux_very_long_input_is_sent_in_several_execs(session):
    payload = "y" * (ONE_EXEC_MAX_CHARS + 5000)
    await session.send_and_wait(f"echo {payload} | wc -c\n", 15, adaptive=True)
    assert f"{len(payload) + 1}" in await session.read_new()


async def test_ensure_tmux_fails_clearly_without_tmux_and_network():
    cid = _container("debian:bookworm-slim")
    try:
        with pytest.raises(TmuxUnavailableError, match="no network to install"):
            await ensure_tmux(DockerContainerSandbox(cid), allow_internet=False, task="bare")
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


async def test_ensure_tmux_installs_tmux_when_the_task_has_network():
    # Host network: the package mirror is reachable only that way here (no bridge network).
    cid = subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "host", "debian:bookworm-slim",
         "sleep", "600"], check=True, capture_output=True, text=True).stdout.strip()
    try:
        sbx = DockerContainerSandbox(cid)
        assert await ensure_tmux(sbx, allow_internet=True, task="bare") == "installed"
        assert await ensure_tmux(sbx, allow_internet=False) == "present"
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
