"""The `inspect eval` command `rsr serve` prints, run as printed (plus a task filter) against
an OpenAI-compatible endpoint on 127.0.0.1 that answers in place of vLLM with scripted
Terminus 2 replies (no GPU here, so no real vLLM): the sample runs in a real Docker sandbox,
and the server sees the served model name and the training temperature it was told to use."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rsr.training.serve import plan_serving

pytest.importorskip("trl")
pytestmark = [pytest.mark.docker, pytest.mark.slow]

HELLO = "echo 'Hello, world!' > /app/hello.txt\n"


def terminus_reply(keystrokes: str | None, complete: bool) -> str:
    commands = [{"keystrokes": keystrokes, "duration": 1.0}] if keystrokes else []
    return json.dumps({"analysis": "a", "plan": "p", "commands": commands, "task_complete": complete})


class Endpoint:
    """A stand-in for `vllm serve`: /v1/models and /v1/chat/completions, scripted answers."""

    def __init__(self, name: str, max_model_len: int, replies: list[str]) -> None:
        self.name, self.max_model_len, self.replies = name, max_model_len, list(replies)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                endpoint.paths.append(self.path)
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": endpoint.name, "object": "model", "max_model_len": endpoint.max_model_len}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                endpoint.paths.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": "not found"})
                    return
                endpoint.requests.append(body)
                content = endpoint.replies.pop(0) if endpoint.replies else terminus_reply(None, True)
                self._send(200, {
                    "id": f"c{len(endpoint.requests)}", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def __enter__(self) -> Endpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(full_run: tuple[Path, Any]) -> Iterator[Endpoint]:
    card = full_run[1]
    replies = [terminus_reply(HELLO, False), terminus_reply("cat /app/hello.txt\n", True),
               terminus_reply(None, True)]
    with Endpoint(card.name, card.max_length, replies) as ep:
        yield ep


def test_printed_inspect_command_evaluates_the_served_model_name_at_the_training_temperature(
        full_run: tuple[Path, Any], endpoint: Endpoint, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    plan = plan_serving(full_run[0], gpus=1, port=endpoint.port)
    printed = next(line for line in plan.render().splitlines() if line.startswith("inspect eval"))
    command = shlex.split(printed) + ["-T", "tasks=hello-world", "--log-dir", str(tmp_path / "logs"),
                                      "--display", "none"]
    command[0] = str(Path(sys.executable).with_name("inspect"))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "VLLM_API_KEY": "local"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    (sample,) = log.samples
    assert sample.error is None, sample.error
    assert next(iter(sample.scores.values())).value["passed"] == 1.0
    assert log.eval.model == f"vllm/{plan.served_model_name}"
    assert len(endpoint.requests) == 3
    assert {r["model"] for r in endpoint.requests} == {plan.served_model_name}
    assert {r.get("temperature") for r in endpoint.requests} == {plan.temperature}
    assert "/v1/models" in endpoint.paths  # the provider asked the server for its context window
