"""rsr's CPU serving engine for RL: the policy behind an OpenAI-compatible endpoint.

It stands where vLLM stands in production, and answers as vLLM does with `return_token_ids`:
the response carries `prompt_token_ids` (the chat template applied to the request, which is
what the model saw), the choice's `token_ids` (what it sampled, end token included) and their
logprobs (after temperature, the distribution sampled from, as TRL computes them). Between
GRPO steps the trainer pushes its weights in (`load_weights`). One request generates at a
time; the model is small. Binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


class PolicyServer:
    """`with PolicyServer(model, tokenizer) as engine:` serves at `engine.base_url` (…/v1)."""

    def __init__(self, model: Any, tokenizer: Any, *, served_name: str = "policy",
                 max_new_tokens: int = 128, seed: int = 0) -> None:
        import torch

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.served_name = served_name
        self.max_new_tokens = max_new_tokens
        self.generator = torch.Generator().manual_seed(seed)
        self.weights_version = 0
        self.generated: list[dict[str, Any]] = []
        """Every answer's token ids, in order (what a trainer must train on, for checks)."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- engine

    def load_weights(self, state_dict: dict[str, Any]) -> None:
        """Replace the served weights (the trainer's push between steps)."""
        import torch

        with self._lock, torch.no_grad():
            own = self.model.state_dict()
            missing = [k for k in own if k not in state_dict]
            if missing:
                raise KeyError(f"pushed weights lack {len(missing)} tensor(s), e.g. {missing[0]}")
            for name, tensor in own.items():
                tensor.copy_(state_dict[name].detach().to(tensor.device, tensor.dtype))
            self.weights_version += 1

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        import torch

        messages = [{"role": m.get("role", "user"), "content": _text(m.get("content"))}
                    for m in body.get("messages", [])]
        prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                    tokenize=True)
        if not isinstance(prompt, list):
            prompt = list(prompt["input_ids"])
        temperature = float(body.get("temperature") if body.get("temperature") is not None
                            else 1.0)
        # A request may ask for fewer tokens, never more: a harness that asks for thousands
        # would keep a CPU busy for minutes on one reply.
        limit = min(int(body.get("max_tokens") or body.get("max_completion_tokens")
                        or self.max_new_tokens), self.max_new_tokens)
        eos = self.tokenizer.eos_token_id
        with self._lock, torch.no_grad():
            ids: list[int] = []
            logprobs: list[float] = []
            past = None
            step_input = torch.tensor([prompt])
            for _ in range(limit):
                out = self.model(input_ids=step_input, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                if temperature > 0:
                    dist = torch.log_softmax(logits / temperature, dim=-1)
                    token = int(torch.multinomial(dist.exp(), 1, generator=self.generator))
                else:
                    dist = torch.log_softmax(logits, dim=-1)
                    token = int(dist.argmax())
                ids.append(token)
                logprobs.append(float(dist[token]))
                if token == eos:
                    break
                step_input = torch.tensor([[token]])
            version = self.weights_version
            self.generated.append({"prompt_ids": list(prompt), "completion_ids": list(ids),
                                   "weights_version": version})
        finished = bool(ids) and ids[-1] == eos
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        want_logprobs = bool(body.get("logprobs"))
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop" if finished else "length",
            "logprobs": {"content": [
                {"token": self.tokenizer.convert_ids_to_tokens(t), "logprob": lp,
                 "bytes": None, "top_logprobs": []}
                for t, lp in zip(ids, logprobs, strict=True)]} if want_logprobs else None,
        }
        response: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": self.served_name, "choices": [choice],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids),
                      "total_tokens": len(prompt) + len(ids)},
            "rsr_weights_version": version,
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
            response["prompt_token_ids"] = list(prompt)
        return response

    # ---------------------------------------------------------------- HTTP

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> PolicyServer:
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": engine.served_name, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError as e:
                    self._send(400, {"error": {"message": f"bad JSON: {e}"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    self._send(200, engine.complete(body))
                except Exception as e:  # reported to the client, as a server would
                    self._send(500, {"error": {"message": f"{type(e).__name__}: {e}"}})

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
