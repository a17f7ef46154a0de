"""A loopback OpenAI-compatible chat-completions server that replays scripted replies.

It stands in for the LLM only: two harnesses (Harbor's Terminus 2 through LiteLLM, rsr's
through Inspect's OpenAI provider) talk to the same server, which answers each conversation
from its script and records every request body, so the two recordings can be compared.

A conversation is identified by a tag `[scenario: NAME]` somewhere in its messages (the task
copies put it in the instruction, which every prompt of a run repeats, summarisation ones
included). Each scripted step is a `Turn`: the reply text and its finish reason, or an HTTP
error (for context-length errors). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCENARIO_TAG = re.compile(r"\[scenario: ([A-Za-z0-9_.-]+)\]")


@dataclass(frozen=True)
class Turn:
    content: str = ""
    finish_reason: str = "stop"
    error_status: int | None = None
    error_code: str | None = None
    error_message: str = ""
    prompt_tokens: int = 100
    completion_tokens: int = 20
    reasoning: str | None = None
    """Sent as the message's `reasoning_content` (as reasoning models' servers do)."""


def context_length_error() -> Turn:
    return Turn(error_status=400, error_code="context_length_exceeded",
                error_message="This model's maximum context length is 4096 tokens. However, "
                              "your messages resulted in 9000 tokens. Please reduce the "
                              "length of the messages.")


@dataclass
class Recording:
    """Every request of one conversation, in arrival order."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def messages(self) -> list[list[dict[str, Any]]]:
        return [r.get("messages", []) for r in self.requests]


class ScriptExhaustedError(Exception):
    pass


class LoopbackOpenAI:
    """`with LoopbackOpenAI(scripts) as server:` serves at `server.base_url` (…/v1)."""

    def __init__(self, scripts: dict[str, list[Turn]], fallback: Turn | None = None) -> None:
        self.scripts = {name: list(turns) for name, turns in scripts.items()}
        self.fallback = fallback
        self.recordings: dict[str, Recording] = {name: Recording() for name in scripts}
        self.unrouted: list[dict[str, Any]] = []
        self._positions: dict[str, int] = dict.fromkeys(scripts, 0)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- routing

    def scenario_of(self, body: dict[str, Any]) -> str | None:
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content
                                   if isinstance(p, dict))
            match = SCENARIO_TAG.search(str(content or ""))
            if match and match.group(1) in self.scripts:
                return match.group(1)
        return None

    def next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            name = self.scenario_of(body)
            if name is None:
                self.unrouted.append(body)
                raise ScriptExhaustedError("no [scenario: NAME] tag in the request")
            self.recordings[name].requests.append(body)
            position = self._positions[name]
            self._positions[name] = position + 1
            script = self.scripts[name]
            if position < len(script):
                return script[position]
            if self.fallback is not None:
                return self.fallback
            raise ScriptExhaustedError(f"scenario {name}: script of {len(script)} turns "
                                       f"exhausted")

    def reset(self) -> None:
        """Rewind every script and forget the recordings (to replay for a second harness)."""
        with self._lock:
            self._positions = dict.fromkeys(self.scripts, 0)
            self.recordings = {name: Recording() for name in self.scripts}
            self.unrouted = []

    # ---------------------------------------------------------------- serving

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LoopbackOpenAI:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # model listings some clients probe
                self._send(200, {"object": "list", "data": []})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    turn = owner.next_turn(body)
                except ScriptExhaustedError as e:
                    self._send(500, {"error": {"message": str(e), "type": "script"}})
                    return
                if turn.error_status is not None:
                    self._send(turn.error_status, {"error": {
                        "message": turn.error_message, "type": "invalid_request_error",
                        "param": "messages", "code": turn.error_code}})
                    return
                self._send(200, {
                    "id": f"chatcmpl-loopback-{time.monotonic_ns()}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "loopback"),
                    "choices": [{"index": 0, "finish_reason": turn.finish_reason,
                                 "message": {"role": "assistant", "content": turn.content,
                                             **({"reasoning_content": turn.reasoning}
                                                if turn.reasoning else {})}}],
                    "usage": {"prompt_tokens": turn.prompt_tokens,
                              "completion_tokens": turn.completion_tokens,
                              "total_tokens": turn.prompt_tokens + turn.completion_tokens},
                })

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
