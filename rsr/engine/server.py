"""One checkpoint served by vLLM: started as a process from the engine environment, ready once
the model has answered a completion, stopped with its whole process group.

    with VllmServer(ServeSpec(checkpoint=ckpt, served_name="tiny", port=8011)) as server:
        server.base_url   # http://127.0.0.1:8011/v1

Everything a user can get wrong is checked before the ~100 s start-up where it can be (engine
environment, checkpoint files, the CPU build's attention shapes, the port), and otherwise read
from the engine's own log when it exits early, and reported as one RsrError line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rsr.engine.env import EngineEnv, require_engine
from rsr.errors import RsrError

# The CPU build's attention kernels exist for these head sizes only (vLLM's cpu_attn: the
# others fail at start-up with "Unsupported CPU attention configuration").
CPU_HEAD_DIMS = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
START_TIMEOUT_S = 900.0
MODULE = "vllm.entrypoints.openai.api_server"


class ServeSpec(BaseModel):
    """What to serve and how: the arguments of one engine process."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: Path
    served_name: str
    host: str = "127.0.0.1"
    port: int = 8000
    max_model_len: int | None = None
    dtype: str | None = Field(None, description="default: float32 on the CPU build, else auto")
    chat_template: Path | None = None
    extra_args: list[str] = Field(default_factory=list)
    kv_cache_gib: int = Field(1, description="VLLM_CPU_KVCACHE_SPACE on the CPU build")
    log: Path | None = Field(None, description="engine output (default: a file in the checkpoint's parent)")
    dev_mode: bool = Field(False, description="VLLM_SERVER_DEV_MODE: enables /collective_rpc "
                                              "(weight reloads for RL)")
    enforce_eager: bool = Field(False, description="skip the engine's graph compilation: the "
                                "CPU build starts the tiny model here in 0.48x the time and "
                                "decodes at 0.74x the speed (benchmarks/engine_startup.py); "
                                "worth it for short runs")


def check_checkpoint(checkpoint: Path, build: str) -> dict[str, Any]:
    """The config.json of a checkpoint the engine can load, or an RsrError naming what is wrong."""
    if not checkpoint.is_dir():
        raise RsrError(f"{checkpoint}: not a directory (expected a checkpoint with config.json)")
    cfg_path = checkpoint / "config.json"
    if not cfg_path.is_file():
        raise RsrError(f"{checkpoint}: no config.json: not a checkpoint vLLM can load")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise RsrError(f"{cfg_path}: not readable JSON ({e})") from e
    if not list(checkpoint.glob("*.safetensors")):
        raise RsrError(f"{checkpoint}: no *.safetensors weights (vLLM serves safetensors checkpoints)")
    if not any((checkpoint / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
        raise RsrError(f"{checkpoint}: no tokenizer files: vLLM needs the tokenizer saved with the weights")
    if build == "cpu":
        text = config.get("text_config", config)
        heads = int(text.get("num_attention_heads") or 0)
        head_dim = text.get("head_dim") or (int(text.get("hidden_size", 0)) // heads if heads else None)
        if head_dim and int(head_dim) not in CPU_HEAD_DIMS:
            raise RsrError(f"{cfg_path}: head_dim {head_dim} is not supported by vLLM's CPU build "
                           f"(supported: {', '.join(map(str, CPU_HEAD_DIMS))}); train with e.g. "
                           "head_dim: 64, hidden_size: 128, num_heads: 2, num_kv_heads: 1")
    return config


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# Engine log lines that say what went wrong, most specific first.
_CAUSES = (
    re.compile(r"(Unsupported CPU attention configuration[^\n]*)"),
    re.compile(r"Value error, ([^\n]*?\.)(?: |$)", re.M),  # a pydantic config error's reason
    re.compile(r"((?:ValueError|RuntimeError|OSError|KeyError|TypeError|AssertionError|"
               r"pydantic_core\._pydantic_core\.ValidationError)[^\n]*)"),
    re.compile(r"(ERROR[^\n]*)"),
)


def failure_cause(log_text: str) -> str:
    for pattern in _CAUSES:
        found = pattern.findall(log_text)
        if found:
            return found[-1].strip()[:400]
    lines = [line for line in log_text.splitlines() if line.strip()]
    return lines[-1].strip()[:400] if lines else "no output"


def _get_json(url: str, timeout: float = 5.0, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - loopback engine
        raw = r.read()
    return json.loads(raw) if raw else None


def dev_post(root_url: str, endpoint: str, body: dict[str, Any] | None = None,
             timeout: float = 300.0) -> Any:
    """A dev-mode endpoint (VLLM_SERVER_DEV_MODE=1) of the server at root_url (no /v1):
    collective_rpc, reset_prefix_cache, ..."""
    try:
        return _get_json(f"{root_url.rstrip('/')}/{endpoint}", timeout=timeout, body=body or {})
    except urllib.error.HTTPError as e:
        hint = " (is the server in dev mode, VLLM_SERVER_DEV_MODE=1?)" if e.code == 404 else ""
        raise RsrError(f"{root_url}/{endpoint}: HTTP {e.code}{hint}: "
                       f"{e.read()[:300].decode(errors='replace')}") from e
    except (urllib.error.URLError, OSError) as e:
        raise RsrError(f"{root_url}/{endpoint}: the engine does not answer ({e})") from e


def served_models(base_url: str) -> list[str]:
    try:
        models = _get_json(f"{base_url.rstrip('/')}/models", timeout=10)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RsrError(f"no engine answers at {base_url} ({e}): start one with `rsr serve CKPT`") from e
    return [str(m.get("id")) for m in (models or {}).get("data", [])]


def check_served(base_url: str, name: str) -> None:
    """The server at base_url serves `name`, or one RsrError naming what it serves."""
    served = served_models(base_url)
    if name not in served:
        raise RsrError(f"the engine at {base_url} serves {served}, not {name!r}: use "
                       f"{' or '.join(repr(s) for s in served) or 'its name'} (or restart it with "
                       f"--name {name})")


# The engine runs under this small supervisor (the process group's leader, in the engine
# environment's Python): vLLM's front end does not exit on SIGTERM during its start-up, and its
# engine-core processes outlive a front end that is killed, so neither can be trusted to go
# away when rsr does. The supervisor asks the kernel for SIGTERM when the process that started
# it dies (PR_SET_PDEATHSIG: a SIGKILLed `rsr serve` or `rsr rounds`) and then SIGKILLs the
# whole group; a stop from rsr (SIGINT to the group) reaches vLLM, which the supervisor waits
# for. Linux sends that signal when the starting *thread* exits: rsr starts engines from the
# main thread, which lives as long as the process.
SUPERVISOR = """
import ctypes, os, signal, subprocess, sys
signal.signal(signal.SIGINT, lambda *_: None)
signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
ctypes.CDLL(None).prctl(1, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]):
    os.killpg(0, signal.SIGKILL)
sys.exit(subprocess.call(sys.argv[2:]))
"""


class VllmServer:
    """A running `vllm.entrypoints.openai.api_server` for one ServeSpec (a context manager)."""

    def __init__(self, spec: ServeSpec, engine: EngineEnv | None = None,
                 start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.spec = spec
        self.engine = engine or require_engine()
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self.log = spec.log or spec.checkpoint.parent / f"vllm-{spec.served_name}-{spec.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.port}"

    def command(self) -> list[str]:
        s = self.spec
        dtype = s.dtype or ("float32" if self.engine.record.build == "cpu" else "auto")
        cmd = [str(self.engine.python), "-m", MODULE, "--model", str(s.checkpoint),
               "--served-model-name", s.served_name, "--host", s.host, "--port", str(s.port),
               "--dtype", dtype]
        if s.max_model_len:
            cmd += ["--max-model-len", str(s.max_model_len)]
        if s.chat_template:
            cmd += ["--chat-template", str(s.chat_template)]
        if s.enforce_eager:
            cmd.append("--enforce-eager")
        return cmd + list(s.extra_args)

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"))}
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.setdefault("DO_NOT_TRACK", "1")
        if self.engine.record.build == "cpu":
            env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.spec.kv_cache_gib))
        if self.spec.dev_mode:
            env["VLLM_SERVER_DEV_MODE"] = "1"
        return env

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> VllmServer:
        s = self.spec
        check_checkpoint(s.checkpoint, self.engine.record.build)
        if port_in_use(s.host, s.port):
            raise RsrError(f"port {s.port} on {s.host} is in use: stop what holds it or pass "
                           "another --port")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log.open("wb") as log:
            supervised = [str(self.engine.python), "-c", SUPERVISOR, str(os.getpid()),
                          *self.command()]
            self.process = subprocess.Popen(supervised, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.environment(),
                                            start_new_session=True)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = round(time.monotonic() - started, 1)
        return self

    def failure(self) -> RsrError:
        text = self.log.read_text(errors="replace") if self.log.is_file() else ""
        return RsrError(f"vLLM could not serve {self.spec.checkpoint}: {failure_cause(text)} "
                        f"(engine log: {self.log})")

    def _wait_ready(self, started: float) -> None:
        assert self.process is not None
        name = self.spec.served_name
        while True:
            if self.process.poll() is not None:
                raise self.failure()
            if time.monotonic() - started > self.start_timeout_s:
                raise RsrError(f"vLLM did not answer within {self.start_timeout_s:.0f} s "
                               f"(engine log: {self.log})")
            try:
                models = _get_json(f"{self.base_url}/models", timeout=5)
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(1.0)
                continue
            served = [m.get("id") for m in (models or {}).get("data", [])]
            if name not in served:
                raise RsrError(f"the engine on port {self.spec.port} serves {served}, not "
                               f"{name!r}: is another server on that port?")
            break
        # Ready means the model answers, not just that the HTTP server is up.
        self.complete("ready?", max_tokens=1, timeout=max(60.0, self.start_timeout_s / 4))

    def complete(self, prompt: str, max_tokens: int = 8, timeout: float = 60.0) -> dict[str, Any]:
        return _get_json(f"{self.base_url}/completions", timeout=timeout, body={
            "model": self.spec.served_name, "prompt": prompt, "max_tokens": max_tokens,
            "temperature": 0.0})

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_s: float = 30.0) -> None:
        p = self.process
        if p is None or p.poll() is not None:
            return
        # The engine runs a front end and an engine-core process: signal the whole group.
        for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
