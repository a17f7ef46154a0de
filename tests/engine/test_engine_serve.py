"""`rsr serve` on the real engine: it answers with the engine's own tokens, and every input it
cannot serve is one line naming the fix (exit 2), before or after vLLM's start-up."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest
from engine_helpers import Served, build_tiny

from rsr.cli.main import main
from rsr.errors import RsrError


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


def test_rsr_serve_prints_the_endpoint_and_both_inspect_model_names(served: Served) -> None:
    text = "".join(served.lines)
    assert f"VLLM_BASE_URL={served.base_url} inspect eval rsr/core --model vllm/tiny" in text
    assert f"RSR_VLLM_BASE_URL={served.base_url} inspect eval rsr/core --model rsr-vllm/tiny" in text
    models = json.loads(urllib.request.urlopen(served.base_url + "/models", timeout=10).read())
    assert [m["id"] for m in models["data"]] == ["tiny"]
    reply = post(served.base_url + "/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": "ls"}], "max_tokens": 5,
        "logprobs": True, "return_token_ids": True})
    choice = reply["choices"][0]
    assert len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == 5
    assert reply["prompt_token_ids"]  # rendered by the checkpoint's own chat template


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)
    return err[-1]


def test_serve_refuses_what_the_engine_cannot_serve_in_one_line(
        engine_env: object, tiny_checkpoint: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The CPU build's attention has no kernel for head_dim 16: refused before the start-up.
    small = build_tiny(tmp_path / "head16", hidden_size=64, num_heads=4, num_kv_heads=2, head_dim=16)
    line = one_line_error(capsys, ["serve", str(small)])
    assert "head_dim 16 is not supported by vLLM's CPU build" in line and "head_dim: 64" in line

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = one_line_error(capsys, ["serve", str(tiny_checkpoint), "--port", str(port)])
    assert f"port {port} on 127.0.0.1 is in use" in line

    monkeypatch.setenv("RSR_ENGINE_VENV", str(tmp_path / "nowhere"))
    line = one_line_error(capsys, ["serve", str(tiny_checkpoint)])
    assert "engine environment is missing" in line and "./scripts/setup.sh --engine" in line


def test_a_checkpoint_the_engine_cannot_load_fails_with_the_engines_reason(
        engine_env: object, tiny_checkpoint: Path, tmp_path: Path) -> None:
    """An architecture this engine does not know passes every check rsr can make without the
    engine; the engine's own refusal is the one line (read from its log), and nothing lingers."""
    from rsr.engine.server import ServeSpec, VllmServer, free_port, port_in_use

    broken = tmp_path / "broken"
    broken.mkdir()
    for f in tiny_checkpoint.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    config = json.loads((broken / "config.json").read_text())
    config.update(architectures=["NopeForCausalLM"], model_type="nope")
    (broken / "config.json").write_text(json.dumps(config))
    port = free_port()
    with pytest.raises(RsrError) as e:
        VllmServer(ServeSpec(checkpoint=broken, served_name="broken", port=port,
                             max_model_len=512, log=tmp_path / "engine.log")).start()
    message = str(e.value)
    assert message.startswith(f"vLLM could not serve {broken}: ") and "\n" not in message
    assert "model type `nope` but Transformers does not recognize this architecture" in message
    assert "engine log: " in message
    assert not port_in_use("127.0.0.1", port)


def test_a_served_model_name_that_does_not_match_is_one_line_naming_the_served_one(
        served: Served) -> None:
    from rsr.engine.server import check_served

    check_served(served.base_url, "tiny")
    with pytest.raises(RsrError, match=r"serves \['tiny'\], not 'rsr-27b': use 'tiny'"):
        check_served(served.base_url, "rsr-27b")


def _engine_group(port: int, within_s: float) -> int:
    """The process group of the engine `rsr serve` started on `port`, once its engine core runs
    (the process that outlived a killed front end)."""
    import subprocess
    import time

    deadline = time.monotonic() + within_s
    rows: list[list[str]] = []
    while time.monotonic() < deadline:
        ps = subprocess.run(["ps", "-ww", "-eo", "pid=,pgid=,args="], capture_output=True,
                            text=True).stdout
        rows = [line.split(None, 2) for line in ps.splitlines() if len(line.split(None, 2)) == 3]
        groups = {int(pgid) for _, pgid, args in rows
                  if "vllm.entrypoints" in args and f"--port {port} " in args}
        cores = {int(pgid) for _, pgid, args in rows if args.startswith("VLLM::EngineCore")}
        if groups & cores:
            return (groups & cores).pop()
        time.sleep(0.5)
    raise AssertionError(f"no engine core on port {port} within {within_s} s: "
                         f"{[r for r in rows if 'vllm' in r[-1].lower()]}")


def _group_alive(pgid: int) -> bool:
    import subprocess

    ps = subprocess.run(["ps", "-eo", "pgid="], capture_output=True, text=True).stdout
    return any(int(g) == pgid for g in ps.split())


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_rsr_serve_leaves_no_engine_behind(
        engine_env: object, tiny_checkpoint: Path, how: str) -> None:
    """A service manager stops `rsr serve` with SIGTERM (a clean stop, as Ctrl-C), and a
    SIGKILLed one must not leave vLLM holding its port, cores and memory."""
    import signal
    import subprocess
    import sys
    import time

    from rsr.engine.server import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rsr.cli.main", "serve", str(tiny_checkpoint),
                             "--name", "stopped", "--port", str(port), "--enforce-eager"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        group = _engine_group(port, within_s=120)
        proc.send_signal(getattr(signal, how))
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    if how == "SIGTERM":
        assert proc.returncode == 0 and "stopping the engine" in err, (proc.returncode, err)
        assert f"stopped stopped on port {port}" in out
    else:
        assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_alive(group), f"engine process group {group} outlived rsr serve ({how})"
