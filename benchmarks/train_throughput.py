"""Training throughput of a randomly initialised Qwen3-architecture model: tokens/s and MFU.

A few optimizer steps (forward, backward, AdamW) on random tokens at a realistic shape, with
the settings the 27B recipes use (fp32 master weights, bf16 autocast, activation
checkpointing, SDPA attention). The default shape is the width of a 27-32B Qwen model with
fewer layers, so it fits one GPU with its optimizer state; per-layer cost is what matters, and
`--layers` scales it.

    python benchmarks/train_throughput.py                # one GPU: < 8 minutes on an H200
    python benchmarks/train_throughput.py --tiny         # CPU smoke run, seconds
    python benchmarks/train_throughput.py --layers 4 --seq 8192 --json out.json

MFU = 6 * N * tokens/s + attention FLOPs (12 * layers * heads * head_dim * seq per token,
PaLM appendix B), over the accelerator's dense bf16 peak. N counts every matmul weight
(the input embedding is a lookup and is excluded). Recomputation from activation
checkpointing is not counted (that would be hardware FLOPs utilisation).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass

# Dense bf16 peak FLOP/s by device-name fragment (vendor datasheets, without sparsity).
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "B200": 2250e12}


@dataclass
class Result:
    device: str
    params: int
    matmul_params: int
    layers: int
    hidden: int
    seq: int
    batch: int
    steps_timed: int
    seconds: float
    tokens_per_s: float
    flops_per_token: float
    achieved_tflops: float
    peak_tflops: float | None
    mfu: float | None
    peak_memory_gb: float | None
    loss_first: float
    loss_last: float


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="tiny CPU shape (smoke test)")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=5120)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--intermediate", type=int, default=25600)
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=20, help="timed optimizer steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--no-activation-checkpointing", action="store_true")
    p.add_argument("--peak-tflops", type=float, default=None,
                   help="dense peak of the device; detected for H100/H200/A100/B200/L40S")
    p.add_argument("--max-seconds", type=float, default=360.0,
                   help="stop timing early once this much time has passed in timed steps")
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--json", default=None, help="also write the result to this file")
    return p


def _tiny(args: argparse.Namespace) -> None:
    args.layers, args.hidden, args.heads, args.kv_heads, args.head_dim = 2, 64, 4, 2, 16
    args.intermediate, args.vocab, args.seq, args.batch = 128, 1024, 256, 4
    args.steps, args.warmup, args.precision = 5, 1, "fp32"
    args.device = args.device or "cpu"


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.tiny:
        _tiny(args)
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    config = Qwen3Config(
        vocab_size=args.vocab, hidden_size=args.hidden, num_hidden_layers=args.layers,
        num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        head_dim=args.head_dim, intermediate_size=args.intermediate,
        max_position_embeddings=max(args.seq, 4096), tie_word_embeddings=False, use_cache=False,
        attn_implementation="sdpa")
    torch.manual_seed(0)
    t0 = time.time()
    with device:
        model = Qwen3ForCausalLM(config)
    model.train()
    if not args.no_activation_checkpointing:
        model.activation_checkpointing_enable({"use_reentrant": False})
    params = sum(p.numel() for p in model.parameters())
    matmul = params - model.get_input_embeddings().weight.numel()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
    print(f"{name}: {params / 1e6:,.1f}M params ({args.layers} layers, hidden {args.hidden}),"
          f" seq {args.seq} x batch {args.batch}, built in {time.time() - t0:.1f}s", flush=True)

    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=args.precision == "bf16")
    losses: list[float] = []

    def step() -> None:
        ids = torch.randint(0, args.vocab, (args.batch, args.seq), device=device)
        with autocast:
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(args.warmup):
        step()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    done, start = 0, time.time()
    while done < args.steps:
        step()
        done += 1
        if done < args.steps and time.time() - start > args.max_seconds:
            sync()
            print(f"stopping after {done} timed steps (--max-seconds {args.max_seconds})")
            break
    sync()
    seconds = time.time() - start

    tokens = done * args.batch * args.seq
    per_token = 6 * matmul + 12 * args.layers * args.heads * args.head_dim * args.seq
    tps = tokens / seconds
    peak = args.peak_tflops * 1e12 if args.peak_tflops else next(
        (v for k, v in PEAK_BF16.items() if k in name), None)
    if args.precision != "bf16":
        peak = peak if args.peak_tflops else None  # datasheet peaks are for bf16
    result = Result(
        device=name, params=params, matmul_params=matmul, layers=args.layers,
        hidden=args.hidden, seq=args.seq, batch=args.batch, steps_timed=done,
        seconds=round(seconds, 3), tokens_per_s=round(tps, 1), flops_per_token=per_token,
        achieved_tflops=round(tps * per_token / 1e12, 3),
        peak_tflops=peak / 1e12 if peak else None,
        mfu=round(tps * per_token / peak, 4) if peak else None,
        peak_memory_gb=(round(torch.cuda.max_memory_allocated(device) / 2**30, 1)
                        if device.type == "cuda" else None),
        loss_first=round(losses[0], 4), loss_last=round(losses[-1], 4))
    mfu = f"{100 * result.mfu:.1f}%" if result.mfu is not None else "n/a (no known peak)"
    print(f"tokens/s: {result.tokens_per_s:,.0f}   achieved: {result.achieved_tflops:.2f}"
          f" TFLOP/s   MFU: {mfu}   ({done} steps in {seconds:.1f}s)")
    if not math.isfinite(result.loss_last):
        print("warning: loss is not finite")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(asdict(result), f, indent=2)
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
