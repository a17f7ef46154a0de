"""vLLM start-up and decoding, compiled (the engine's default) against `--enforce-eager`, side by
side in one invocation: the two modes alternate, so a change of load on the machine falls on
both. Start-up is from the process start until the model has answered a completion (what
`rsr serve` and `rsr rounds` wait for).

    python benchmarks/engine_startup.py --reps 3            # the tiny engine-shaped model
    python benchmarks/engine_startup.py --checkpoint CKPT   # any checkpoint the engine loads
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tiny_checkpoint(folder: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    from engine_helpers import build_tiny

    return build_tiny(folder / "tiny")


def one_start(checkpoint: Path, eager: bool, tokens: int, log_dir: Path) -> tuple[float, float]:
    from rsr.engine.server import ServeSpec, VllmServer, free_port

    spec = ServeSpec(checkpoint=checkpoint, served_name="bench", port=free_port(),
                     max_model_len=4096, enforce_eager=eager,
                     log=log_dir / f"vllm-{'eager' if eager else 'compiled'}.log")
    started = time.monotonic()
    with VllmServer(spec) as server:
        startup = time.monotonic() - started
        t = time.monotonic()
        reply = server.complete("ls -la /app", max_tokens=tokens)
        decoded = reply["usage"]["completion_tokens"] / (time.monotonic() - t)
    return startup, decoded


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=256, help="tokens decoded per start")
    ap.add_argument("--checkpoint", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checkpoint = args.checkpoint or tiny_checkpoint(folder)
        runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for rep in range(args.reps):
            order = (True, False) if rep % 2 else (False, True)
            for eager in order:
                runs[eager].append(one_start(checkpoint, eager, args.tokens, folder))
                s, d = runs[eager][-1]
                print(f"rep {rep} {'eager' if eager else 'compiled'}: start-up {s:.1f} s, "
                      f"{d:.0f} tokens/s", flush=True)
    med = {k: (statistics.median(s for s, _ in v), statistics.median(d for _, d in v))
           for k, v in runs.items()}
    print(f"compiled: start-up {med[False][0]:.1f} s, {med[False][1]:.0f} tokens/s; "
          f"eager: start-up {med[True][0]:.1f} s, {med[True][1]:.0f} tokens/s; "
          f"eager/compiled start-up {med[True][0] / med[False][0]:.2f}, "
          f"decoding {med[True][1] / med[False][1]:.2f} (medians of {args.reps})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
