"""`rsr serve CKPT`: serve a trained checkpoint with vLLM (from the engine environment) until
Ctrl-C, and print the Inspect model names that reach it; `--plan` prints the GPU serving plan."""

from __future__ import annotations

import time
from pathlib import Path

import typer


def serve(
    checkpoint: Path = typer.Argument(..., help="A `rsr train` run dir, its final/, or a merged checkpoint."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (0.0.0.0 for a cluster service)."),
    name: str | None = typer.Option(None, "--name", help="Served model name (default: the run's name)."),
    max_model_len: int | None = typer.Option(None, "--max-model-len", min=1,
                                             help="Context window (default: the trained length)."),
    start_timeout: float = typer.Option(900.0, "--start-timeout", min=1.0,
                                        help="Seconds to wait for the model to answer."),
    weight_updates: bool = typer.Option(False, "--weight-updates",
                                        help="Enable the engine's dev endpoints (in-place weight "
                                             "reloads: `rsr rl` with engine.base_url and "
                                             "weight_sync: disk). Loopback use only."),
    enforce_eager: bool = typer.Option(False, "--enforce-eager",
                                       help="Skip the engine's graph compilation: faster start-up "
                                            "(0.48x on the CPU build for the tiny model), slower "
                                            "decoding (0.74x)."),
    plan: bool = typer.Option(False, "--plan", help="Print the GPU serving plan (vllm command, "
                                                    "eval and factory settings) instead of serving."),
    gpus: int = typer.Option(8, "--gpus", min=1,
                             help="With --plan: GPUs on the serving machine."),
    gpu_memory_gb: float = typer.Option(80.0, "--gpu-memory-gb", min=1.0, help="With --plan: memory of one GPU."),
    tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "--tp", min=1,
                                                    help="With --plan: override the tensor-parallel size."),
    max_num_seqs: int = typer.Option(64, "--max-num-seqs", min=1,
                                     help="With --plan: concurrent sequences per replica."),
    temperature: float = typer.Option(0.7, "--temperature", min=0.0,
                                      help="With --plan: sampling temperature of the evals."),
    sandbox: str = typer.Option("docker", "--sandbox", help="With --plan: sandbox of the printed eval commands."),
    as_json: bool = typer.Option(False, "--json", help="With --plan: print it as JSON."),
) -> None:
    """Serve CHECKPOINT with vLLM until Ctrl-C: waits until the model answers, then prints the
    endpoint and the Inspect model names (`vllm/NAME`, `rsr-vllm/NAME`). Needs the engine
    environment (`./scripts/setup.sh --engine`)."""
    from rsr.training.serve import plan_serving

    the_plan = plan_serving(checkpoint, gpus=gpus, gpu_memory_gb=gpu_memory_gb, port=port, host=host,
                            name=name, tensor_parallel_size=tensor_parallel_size,
                            max_num_seqs=max_num_seqs, temperature=temperature)
    if plan:
        if as_json:
            typer.echo(the_plan.model_dump_json(indent=2))
        else:
            typer.echo(the_plan.render(sandbox=sandbox), nl=False)
        return
    _serve_until_interrupted(the_plan.checkpoint, the_plan.served_model_name, host, port,
                             max_model_len or the_plan.max_model_len, the_plan.chat_template,
                             start_timeout, weight_updates, enforce_eager)


def _serve_until_interrupted(checkpoint: Path, name: str, host: str, port: int, max_model_len: int,
                             chat_template: Path, start_timeout: float, dev_mode: bool,
                             enforce_eager: bool) -> None:
    from rich.console import Console

    from rsr.engine.env import require_engine
    from rsr.engine.server import ServeSpec, VllmServer

    console = Console(stderr=True)
    engine = require_engine()
    spec = ServeSpec(checkpoint=checkpoint, served_name=name, host=host, port=port,
                     max_model_len=max_model_len, chat_template=chat_template, dev_mode=dev_mode,
                     enforce_eager=enforce_eager)
    server = VllmServer(spec, engine, start_timeout_s=start_timeout)
    console.print(f"starting {engine.label} on {checkpoint} (engine log: {server.log})")
    try:
        with console.status("waiting until the model answers"):
            server.start()
        url = server.base_url
        typer.echo(f"serving {name} at {url} (ready after {server.startup_s:.0f} s); Ctrl-C stops it")
        typer.echo(f"  inspect (vLLM provider):  VLLM_BASE_URL={url} inspect eval rsr/core --model vllm/{name}")
        typer.echo(f"  inspect (token ids):      RSR_VLLM_BASE_URL={url} inspect eval rsr/core "
                   f"--model rsr-vllm/{name}")
        typer.echo(f"  models: vllm/{name}, rsr-vllm/{name}   base URL: {url}")
        while server.alive():
            time.sleep(1.0)
        raise server.failure()
    except KeyboardInterrupt:
        console.print("stopping the engine")
    finally:
        server.stop()
    typer.echo(f"stopped {name} on port {port}")
